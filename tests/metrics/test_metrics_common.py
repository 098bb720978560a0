"""Every registered metric keeps the protocol it declares (scikit-learn's metrics test_common
pattern, over :func:`queryeval.metrics.registry.metrics`): values within its bounds on random
inputs, the perfect prediction scoring its best value (and nothing scoring above it), order
invariance where declared, the declared value on empty input (gold empty, prediction empty,
both), and the declared behaviour with gold and prediction swapped (symmetric, the mirror
metric, or a pair that proves the metric asymmetric, so a swapped call site cannot pass).

Random inputs are drawn by the metric's ``inputs`` kind (``KINDS`` below); a new kind of input
needs its strategies here, and the test names a registered kind without them."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from queryeval.metrics import registry
from queryeval.metrics.protocol import REFUSED, Metric, ZeroDivision
from queryeval.metrics.squad import normalize_answer

METRICS = registry.metrics()
IDS = [m.name for m in METRICS]
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@dataclass(frozen=True)
class Kind:
    gold: st.SearchStrategy          # a non-empty ground truth
    pred: st.SearchStrategy          # a non-empty prediction
    empty_gold: Any
    empty_pred: Any
    shuffle: Any = None              # (value, random.Random) -> the value in another order


# --- strategies per kind of input -----------------------------------------------------------
_word = st.sampled_from(["a", "b", "c", "d", "e"])


def _selection(min_terms: int):
    value = st.sampled_from([("1", "x"), ("2", "y"), ("3", "z")])
    dim = st.tuples(st.sampled_from(["d1", "d2"]), st.lists(value, min_size=min_terms, max_size=3))
    dataset = st.tuples(st.sampled_from(["s1", "s2"]), st.lists(dim, min_size=1, max_size=2))

    def shape(datasets):
        return [{"dataset_id": ds, "dimensions": [
            {"dimension_name": name, "values": [{"id": i, "name": n} for i, n in values]}
            for name, values in dims]} for ds, dims in datasets]
    return st.lists(dataset, min_size=1, max_size=2).map(shape)


def _shuffle_selection(selection, rnd):
    out = []
    for ds in rnd.sample(selection, len(selection)):
        dims = [{**d, "values": rnd.sample(d["values"], len(d["values"]))}
                for d in ds["dimensions"]]
        out.append({**ds, "dimensions": rnd.sample(dims, len(dims))})
    return out


_text = st.lists(st.sampled_from(["the", "cat", "sat", "on", "mat", "a", "Cat", "3", "3.0"]),
                 min_size=1, max_size=6).map(" ".join)
_answers_gold = st.dictionaries(st.sampled_from(["mean", "std", "n"]),
                                st.sampled_from(["1", "2.5", "x", "1.0"]), min_size=1)
_answers_pred = st.lists(st.tuples(st.sampled_from(["mean", "std", "n", "other"]),
                                   st.sampled_from(["1", "2.5", "x", "1.0", "9"])),
                         max_size=4).map(lambda ps: " ".join(f"@{k}[{v}]" for k, v in ps) + " ok")
_docs = st.sampled_from([f"d{i}" for i in range(8)])
_qrels = st.dictionaries(_docs, st.integers(0, 3), min_size=1, max_size=8).filter(
    lambda q: any(r >= 1 for r in q.values()))
_run = st.dictionaries(_docs, st.floats(0, 10, allow_nan=False, width=16), min_size=1,
                       max_size=8)
_cell = st.sampled_from(["1", "2", "x", "y"])


def _table(cols):
    return st.lists(st.tuples(*[_cell] * cols), min_size=1, max_size=4).map(
        lambda rows: [{f"v{j}": {"type": "literal", "value": c} for j, c in enumerate(row)}
                      for row in rows])


_tables = st.integers(1, 3).flatmap(_table)
_touched = st.fixed_dictionaries({key: st.lists(st.sampled_from(["t1", "t2", "t3", "t4"]),
                                                min_size=1, max_size=4, unique=True)
                                  for key in ("tables", "columns", "filters")})
_NO_TOUCH = {"tables": [], "columns": [], "filters": []}

KINDS: dict[str, Kind] = {
    "selection": Kind(_selection(1), _selection(1), [], [], _shuffle_selection),
    "terms": Kind(st.lists(_word, min_size=1, max_size=5),
                  st.lists(_word, min_size=1, max_size=6), [], []),
    "text": Kind(_text.filter(normalize_answer), _text.filter(normalize_answer), "", "",
                 lambda t, rnd: " ".join(rnd.sample(t.split(), len(t.split())))),
    "answers": Kind(_answers_gold, _answers_pred, {}, ""),
    "qrels": Kind(_qrels, _run, {}, {}),
    "table": Kind(_tables, _tables, [], [], lambda t, rnd: rnd.sample(t, len(t))),
    "touched": Kind(_touched, _touched, _NO_TOUCH, _NO_TOUCH,
                    lambda t, rnd: {k: rnd.sample(v, len(v)) for k, v in t.items()}),
}


def kind(metric: Metric) -> Kind:
    assert metric.inputs in KINDS, f"{metric.name}: no strategies for inputs {metric.inputs!r}"
    return KINDS[metric.inputs]


# --- the registry itself ----------------------------------------------------------------------
def test_the_registry_holds_every_family_once_by_name():
    assert len(set(IDS)) == len(IDS)
    assert {m.family for m in METRICS} == {"selection", "fields", "squad", "answers", "ranking",
                                           "tables", "touched"}
    assert registry.get("field_mrr").family == "fields"
    with pytest.raises(KeyError, match="unknown metric 'nope'.*field_mrr"):
        registry.get("nope")
    for m in METRICS:  # a mirror names a registered metric that mirrors it back
        if m.mirror:
            assert registry.get(m.mirror).mirror == m.name


def test_register_refuses_a_taken_name_and_adds_a_new_one():
    mine = Metric("keyword_overlap", family="tests", inputs="terms",
                  fn=lambda gold, pred: len(set(gold) & set(pred)) / len(set(gold)) if gold else 1.0,
                  zero_division=ZeroDivision(gold=1.0, pred=0.0, both=1.0), order_invariant=True)
    with pytest.raises(ValueError, match="already registered"):
        registry.register(Metric(**{**mine.__dict__, "name": "field_recall"}))
    registry.register(mine)
    try:
        assert registry.get("keyword_overlap")(["a", "b"], ["b", "c"]) == 0.5
    finally:
        registry.unregister("keyword_overlap")
    assert "keyword_overlap" not in registry.names()


def test_a_metric_declares_ordered_bounds_and_a_known_swap():
    zd = ZeroDivision(gold=0.0, pred=0.0, both=1.0)
    with pytest.raises(ValueError, match="not ordered"):
        Metric("m", family="t", inputs="terms", fn=max, zero_division=zd, bounds=(1.0, 0.0))
    with pytest.raises(ValueError, match="swap must be"):
        Metric("m", family="t", inputs="terms", fn=max, zero_division=zd, swap="sideways")


# --- the protocol, over every registered metric ---------------------------------------------
def _value(metric: Metric, gold, pred) -> float:
    got = metric(gold, pred)
    assert isinstance(got, float), f"{metric.name} returned {type(got).__name__}"
    return got


@pytest.mark.parametrize("metric", METRICS, ids=IDS)
def test_values_lie_within_the_declared_bounds_and_below_the_best(metric):
    k = kind(metric)
    lower, upper = metric.bounds

    @SETTINGS
    @given(gold=k.gold, pred=k.pred)
    def check(gold, pred):
        got = _value(metric, gold, pred)
        assert lower <= got <= upper, (metric.name, gold, pred, got)
        best = metric.best_value(gold)  # no prediction beats the perfect one
        assert (got <= best + 1e-12) if metric.higher_is_better else (got >= best - 1e-12)
    check()


@pytest.mark.parametrize("metric", METRICS, ids=IDS)
def test_the_perfect_prediction_scores_the_best_value(metric):
    k = kind(metric)

    @SETTINGS
    @given(gold=k.gold)
    def check(gold):
        assert _value(metric, gold, metric.perfect(gold)) == pytest.approx(
            metric.best_value(gold), rel=1e-12)
    check()
    if metric.best_for is None:  # the best value is the bound itself
        assert metric.best == (metric.bounds[1] if metric.higher_is_better else metric.bounds[0])


@pytest.mark.parametrize("metric", [m for m in METRICS if m.order_invariant],
                         ids=[m.name for m in METRICS if m.order_invariant])
def test_order_invariant_metrics_ignore_the_predictions_order(metric):
    k = kind(metric)
    assert k.shuffle is not None, f"{metric.inputs} has no shuffle for an order-invariant metric"

    @SETTINGS
    @given(gold=k.gold, pred=k.pred, seed=st.integers(0, 2**16))
    def check(gold, pred, seed):
        shuffled = k.shuffle(pred, random.Random(seed))
        assert _value(metric, gold, shuffled) == _value(metric, gold, pred)
    check()


def _expect(metric: Metric, declared, gold, pred, case: str) -> None:
    if declared == REFUSED:
        with pytest.raises(ValueError):
            metric(gold, pred)
    else:
        got = _value(metric, gold, pred)
        assert got == declared, f"{metric.name}, {case}: {got} != declared {declared}"


@pytest.mark.parametrize("metric", METRICS, ids=IDS)
def test_the_declared_value_on_empty_input(metric):
    k = kind(metric)
    zd = metric.zero_division
    _expect(metric, zd.both, k.empty_gold, k.empty_pred, "both empty")

    @SETTINGS
    @given(gold=k.gold, pred=k.pred)
    def check(gold, pred):
        _expect(metric, zd.gold, k.empty_gold, pred, "gold empty")
        _expect(metric, zd.pred, gold, k.empty_pred, "prediction empty")
    check()


@pytest.mark.parametrize("metric", [m for m in METRICS if m.swap != "typed"],
                         ids=[m.name for m in METRICS if m.swap != "typed"])
def test_swapping_gold_and_prediction_behaves_as_declared(metric):
    k = kind(metric)
    # a swapped pair is a prediction used as gold: both sides are drawn from the same values
    pairs = st.tuples(k.gold, k.gold)
    if metric.swap == "asymmetric":  # a pair that tells the two orders apart exists
        a, b = find(pairs, lambda p: _value(metric, *p) != _value(metric, p[1], p[0]),
                    settings=settings(max_examples=2000, database=None, deadline=None))
        assert _value(metric, a, b) != _value(metric, b, a)
        return
    other = registry.get(metric.mirror) if metric.mirror else metric

    @SETTINGS
    @given(pair=pairs)
    def check(pair):
        gold, pred = pair
        assert _value(metric, gold, pred) == _value(other, pred, gold)
    check()


# --- hand-computed values, one per family: the registry reaches the real kernels ----------------
@pytest.mark.parametrize(("name", "gold", "pred", "want"), [
    ("field_recall", ["a", "b", "c"], ["a", "x", "b"], 2 / 3),     # N = 3: a, b in the top 3
    ("field_mrr", ["a", "b"], ["x", "a", "y", "b"], (1 / 2 + 1 / 4) / 2),
    ("exact_match", "The Cat", "cat!", 1.0),
    ("token_f1", "the cat sat", "cat sat on mat", 2 * (2 / 4) * (2 / 2) / (2 / 4 + 2 / 2)),
    ("psaq", {"mean": "1", "std": "2"}, "@mean[1.0000001] @std[3]", 0.5),
    ("abq", {"mean": "1"}, "@mean[1]", 1.0),
    ("recall@5", {"a": 1, "b": 1, "c": 0}, {"a": 2.0, "c": 1.0}, 0.5),
    ("mrr@5", {"b": 1}, {"a": 3.0, "c": 2.0, "b": 1.0}, 1 / 3),
    ("P@5", {"a": 1, "b": 1}, {"a": 2.0, "b": 1.0}, 2 / 5),
    ("arity_f1", [{"x": {"type": "literal", "value": "1"}}],
     [{"x": {"type": "literal", "value": "1"}, "y": {"type": "literal", "value": "2"}}], 2 / 3),
    ("schema_table_precision", {"tables": ["t1"], "columns": [], "filters": []},
     {"tables": ["t1", "t2", "t3"], "columns": [], "filters": []}, 1 / 3),
    ("schema_table_recall", {"tables": ["t1", "t2"], "columns": [], "filters": []},
     {"tables": ["t1", "t3", "t4"], "columns": [], "filters": []}, 1 / 2),
])
def test_hand_computed_values(name, gold, pred, want):
    assert registry.get(name)(gold, pred) == pytest.approx(want, rel=1e-15)


def test_selection_precision_and_recall_by_hand():
    target = [{"dataset_id": "s", "dimensions": [
        {"dimension_name": "geo", "values": [{"id": "1", "name": "FR"}, {"id": "2", "name": "DE"}]}]}]
    selected = [{"dataset_id": "s", "dimensions": [
        {"dimension_name": "geo", "values": [{"id": "1", "name": "FR"}]},
        {"dimension_name": "time", "values": [{"id": "9", "name": "2020"}]}]}]
    # geo: tp 1, fn 1 (recall 1/2), precision 1; time: not in target, precision 0
    assert registry.get("macro_recall")(target, selected) == 0.5
    assert registry.get("macro_precision")(target, selected) == 0.5   # mean(1, 0)
    assert registry.get("micro_precision")(target, selected) == 0.5   # 1 / (1 + 1)
    assert registry.get("micro_recall")(target, selected) == 0.5      # 1 / (1 + 1)
    assert registry.get("macro_recall")(selected, target) == 0.5      # mean(1, 0) the other way
    assert math.isclose(registry.get("micro_recall")(selected, target), 1 / 2)
