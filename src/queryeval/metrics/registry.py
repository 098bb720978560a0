"""The metrics registry: every per-case metric of the package under one protocol
(:mod:`queryeval.metrics.protocol`), by name.

``metrics()`` lists them (the built-ins are registered on first use, importing their
families then), ``get(name)`` finds one, ``register(metric)`` adds one (a plugin's, or a
task's own). tests/metrics/test_metrics_common.py runs over the whole registry: values within the
declared bounds on random inputs, the perfect prediction scoring the best value, order
invariance where declared, the declared empty values and the declared behaviour with gold and
prediction swapped. docs/reference/metrics.md lists the families; CONTRIBUTING.md says how
to add one.

Not registered, on purpose: the run-level figures (PSAQ/ABQ/UASQ over a suite, pass@k,
agreement with a judge: they aggregate many cases), the free-form ladder (it decides pass,
fail or inconclusive, not a number) and BuildingQA's drop-in functions in ``sparql`` (the
reference's names and argument orders, the ``table`` metrics under ``rules="buildingqa"``).
"""

from __future__ import annotations

import math
from typing import Any

from queryeval.metrics.protocol import REFUSED, Metric, ZeroDivision

_METRICS: dict[str, Metric] = {}
_loaded = False


def register(metric: Metric, *, replace: bool = False) -> Metric:
    """Add ``metric`` under its name; a name already taken is refused unless ``replace``."""
    _load_builtins()
    if metric.name in _METRICS and not replace:
        raise ValueError(f"metric {metric.name!r} is already registered "
                         f"(family {_METRICS[metric.name].family!r}); pass replace=True")
    _METRICS[metric.name] = metric
    return metric


def unregister(name: str) -> None:
    """Remove a registered metric (a test's, a plugin's)."""
    _load_builtins()
    del _METRICS[name]


def get(name: str) -> Metric:
    """The metric registered as ``name``; ``KeyError`` naming the known ones otherwise."""
    _load_builtins()
    try:
        return _METRICS[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known: {', '.join(sorted(_METRICS))}") from None


def metrics() -> tuple[Metric, ...]:
    """Every registered metric, built-ins first, in registration order."""
    _load_builtins()
    return tuple(_METRICS.values())


def names() -> tuple[str, ...]:
    return tuple(m.name for m in metrics())


# ------------------------------------------------------------------------------ built-ins
def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for metric in _builtins():
        _METRICS.setdefault(metric.name, metric)


def _selection() -> list[Metric]:
    from queryeval.metrics import selection

    def macro(attr: str):
        return lambda gold, pred: getattr(selection.score(gold, pred), attr)

    def micro(key: str):
        def fn(gold, pred):  # noqa: ANN001, ANN202
            dims = selection.score(gold, pred).dimensions
            return selection.micro_scores(dims)[key]
        return fn

    rest = {"family": "selection", "inputs": "selection", "order_invariant": True}
    return [
        Metric("macro_precision", fn=macro("macro_precision"), swap="asymmetric",
               zero_division=ZeroDivision(gold=0.0, pred=0.0, both=1.0), **rest,
               doc="per-dimension precision, averaged over target dimensions and, by default, "
                   "the dimensions not in target"),
        Metric("macro_recall", fn=macro("macro_recall"), swap="asymmetric",
               zero_division=ZeroDivision(gold=1.0, pred=0.0, both=1.0), **rest,
               doc="per-dimension recall averaged over the target dimensions"),
        Metric("micro_precision", fn=micro("micro_precision"), swap="mirror:micro_recall",
               zero_division=ZeroDivision(gold=0.0, pred=0.0, both=1.0), **rest,
               doc="pooled true positives / pooled selected terms"),
        Metric("micro_recall", fn=micro("micro_recall"), swap="mirror:micro_precision",
               zero_division=ZeroDivision(gold=1.0, pred=0.0, both=1.0), **rest,
               doc="pooled true positives / pooled target terms"),
    ]


def _fields() -> list[Metric]:
    from queryeval.metrics import fields

    def best_mrr(gold: Any) -> float:  # every item at the top: ranks 1..m
        m = len(fields.distinct(gold))
        return math.fsum(1.0 / r for r in range(1, m + 1)) / m if m else 1.0

    empty = ZeroDivision(gold=1.0, pred=0.0, both=1.0)
    return [
        Metric("field_recall", family="fields", inputs="terms", zero_division=empty,
               fn=lambda gold, pred: fields.recall(gold, pred),
               perfect=fields.distinct,
               doc="distinct ground-truth values among the first N ranked (N = their number)"),
        Metric("field_mrr", family="fields", inputs="terms", zero_division=empty,
               fn=lambda gold, pred: fields.mrr(gold, pred),
               perfect=fields.distinct, best_for=best_mrr,
               doc="seed 004's MRR: the mean reciprocal rank of the ground-truth values"),
    ]


def _squad() -> list[Metric]:
    from queryeval.metrics import squad

    rest = {"family": "squad", "inputs": "text", "swap": "symmetric"}
    return [
        Metric("exact_match", fn=squad.exact_match, **rest,
               zero_division=ZeroDivision(gold=0.0, pred=0.0, both=1.0),
               doc="SQuAD exact match of the normalised texts"),
        Metric("token_f1", fn=squad.token_f1, order_invariant=True, **rest,
               zero_division=ZeroDivision(gold=0.0, pred=0.0, both=1.0),
               doc="SQuAD v2.0 token F1 (both empty: 1.0)"),
        Metric("token_f1_v1.1", fn=lambda gold, pred: squad.token_f1(gold, pred, "v1.1"),
               order_invariant=True, **rest,
               zero_division=ZeroDivision(gold=0.0, pred=0.0, both=0.0),
               doc="SQuAD v1.1 token F1 (no common token, both empty included: 0.0)"),
    ]


def _answers() -> list[Metric]:
    from queryeval.metrics import answers

    def perfect(gold: dict) -> str:
        return " ".join(f"@{k}[{v}]" for k, v in gold.items())

    empty = ZeroDivision(gold=REFUSED, pred=0.0, both=REFUSED)
    rest = {"family": "answers", "inputs": "answers", "swap": "typed", "perfect": perfect,
            "zero_division": empty}
    return [
        Metric("psaq", fn=lambda gold, pred: answers.score(gold, pred).proportion, **rest,
               doc="share of a question's sub-questions answered right"),
        Metric("abq", fn=lambda gold, pred: float(answers.score(gold, pred).all_correct),
               **rest, doc="1.0 when every sub-question is right"),
    ]


def _ranking() -> list[Metric]:
    from queryeval.metrics import ranking

    def one(name: str):
        def fn(gold, pred):  # noqa: ANN001, ANN202 - one query's qrels and run
            return ranking.evaluate({"q": gold}, {"q": pred}, [name]).means[name]
        return fn

    def relevant(gold: dict) -> int:
        return sum(1 for rel in gold.values() if rel >= 1)

    def ranked(gold: dict) -> dict:  # the ideal run: relevant documents by grade
        return {doc: float(rel) for doc, rel in gold.items() if rel >= 1}

    empty = ZeroDivision(gold=REFUSED, pred=0.0, both=REFUSED)
    rest = {"family": "ranking", "inputs": "qrels", "swap": "typed", "perfect": ranked,
            "zero_division": empty}
    return [
        Metric("ndcg@5", fn=one("ndcg@5"), **rest,
               best_for=lambda gold: 1.0 if relevant(gold) else 0.0, doc="trec_eval ndcg_cut.5"),
        Metric("recall@5", fn=one("recall@5"), **rest,
               best_for=lambda gold: min(relevant(gold), 5) / relevant(gold) if relevant(gold) else 0.0,
               doc="trec_eval recall.5"),
        Metric("P@5", fn=one("P@5"), **rest,
               best_for=lambda gold: min(relevant(gold), 5) / 5, doc="trec_eval P.5"),
        Metric("mrr@5", fn=one("mrr@5"), **rest,
               best_for=lambda gold: 1.0 if relevant(gold) else 0.0,
               doc="trec_eval recip_rank on the top 5"),
        Metric("map", fn=one("map"), **rest,
               best_for=lambda gold: 1.0 if relevant(gold) else 0.0, doc="trec_eval map"),
    ]


def _tables() -> list[Metric]:
    from queryeval.metrics import tables

    rest = {"family": "tables", "inputs": "table", "swap": "symmetric",
            "zero_division": ZeroDivision(gold=0.0, pred=0.0, both=1.0)}
    # a mapping sends every gold column to a predicted one: a prediction with extra columns
    # can score 1.0, a gold with more columns than the prediction cannot be fully mapped
    tables_rest = {**rest, "swap": "asymmetric"}
    return [
        Metric("arity_f1", fn=tables.arity_f1, order_invariant=True, **rest,
               doc="F1 of the column counts"),
        Metric("entity_set_f1", fn=tables.entity_set_f1, order_invariant=True, **tables_rest,
               doc="F1 of each column's value set under the best column mapping"),
        Metric("row_matching_f1", fn=tables.row_matching_f1, order_invariant=True, **tables_rest,
               doc="F1 of the rows (a multiset) under the best column mapping"),
        Metric("exact_match_f1", fn=tables.exact_match_f1, order_invariant=True, **rest,
               doc="row F1 with the columns mapped by position"),
    ]


def _touched() -> list[Metric]:
    from queryeval.metrics import touched

    def one(key: str):
        return lambda gold, pred: touched.touched_scores(gold, pred)[key]

    out = []
    for element in touched.ELEMENTS:
        p, r = f"schema_{element}_precision", f"schema_{element}_recall"
        out += [
            Metric(p, family="touched", inputs="touched", fn=one(p), order_invariant=True,
                   swap=f"mirror:{r}", zero_division=ZeroDivision(gold=0.0, pred=1.0, both=1.0),
                   doc=f"share of the predicted query's {element}s the gold query touches"),
            Metric(r, family="touched", inputs="touched", fn=one(r), order_invariant=True,
                   swap=f"mirror:{p}", zero_division=ZeroDivision(gold=1.0, pred=0.0, both=1.0),
                   doc=f"share of the gold query's {element}s the predicted query touches"),
        ]
    return out


def _builtins() -> list[Metric]:
    return [*_selection(), *_fields(), *_squad(), *_answers(), *_ranking(), *_tables(),
            *_touched()]
