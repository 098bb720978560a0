"""Single-pass aggregates of the selection, answers and fields tasks.

Each ``aggregate`` reads its records once (``OnePass`` raises on a second pass, a generator
works) and keeps no record: (a) hand-computed figures, (b) hypothesis properties against
brute-force oracles that recompute the main figures from targets and outputs, (c) a
``tracemalloc`` bound over a 50,000-record stream.
"""

from __future__ import annotations

import json
import tracemalloc
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.one_pass import OnePass
from queryeval.tasks.answers.task import AnswersTask
from queryeval.tasks.fields.task import FieldsTask
from queryeval.tasks.selection.task import SelectionTask


def _base(i: int, tags: list[str], error: bool) -> dict:
    return {"case_id": f"c{i}", "name": f"case {i}", "tags": tags,
            "status": "error" if error else "ok", "error_kinds": ["timeout"] if error else []}


def _turn(k: int, target, output) -> dict:
    return {"turn": k, "question": "q", "target": target, "output": output, "error": None,
            "attempts": 1, "latency_ms": 1.0}


# ------------------------------------------------------------------------------ selection


def _sel(*dims: tuple[str, str, list[str]]) -> list[dict]:
    """``("DS1", "FREQ", ["A"])`` ... -> the seed 000 shape (term name = id lowercased)."""
    return [{"dataset_id": ds, "dimensions": [
        {"dimension_name": dim, "values": [{"id": t, "name": t.lower()} for t in terms]}]}
        for ds, dim, terms in dims]


def _selection_record(task, i, tags, error, turns) -> dict:
    r = _base(i, tags, error)
    r["turns"] = [_turn(k, t, o) for k, (t, o) in enumerate(turns)]
    return task.rescore_record(r)


def _selection_records(task) -> list[dict]:
    r1 = _selection_record(task, 1, ["t1"], False, [(
        _sel(("DS1", "FREQ", ["A"]), ("DS1", "REF", ["X", "Y"])),
        _sel(("DS1", "FREQ", ["A"]), ("DS1", "REF", ["X"]), ("DS1", "UNIT", ["U"])))])
    r2 = _selection_record(task, 2, [], True, [(_sel(("DS2", "FREQ", ["M"])), None)])
    return [r1, r2]


def _exact_mean(xs: list[float]) -> float:
    return float(sum(map(Fraction, xs)) / len(xs))


def test_selection_hand_computed():
    task = SelectionTask()
    m = task.aggregate(OnePass(_selection_records(task)))
    # case 1: FREQ p=1 r=1, REF p=1 r=1/2, UNIT (not in target) p=0 -> macro p 2/3, r 3/4
    # case 2 (error, scored as empty): FREQ p=0 r=0
    assert m["overall_metrics"] == {
        "macro_precision": (2 / 3) / 2, "macro_recall": 0.375,
        "micro_precision": 2 / 3, "micro_recall": 0.5, "tp": 2, "fp": 1, "fn": 2,
        "total_cases": 2, "scored_cases": 2, "scored_turns": 2,
        "cases_with_dimensions_not_in_target": 1, "errors": 1, "errors_by_kind": {"timeout": 1},
    }
    g = m["group_metrics"]
    assert list(g["tag"]) == ["(no tag)", "t1"]
    assert g["tag"]["t1"] == {"cases": 1, "macro_precision": 2 / 3, "macro_recall": 0.75}
    assert list(g["dimension"]) == ["FREQ", "REF", "UNIT"]
    assert g["dimension"]["FREQ"] == {
        "in_target": 2, "not_in_target": 0, "tp": 1, "fp": 0, "fn": 1, "mean_precision": 0.5,
        "mean_recall": 0.5, "micro_precision": 1.0, "micro_recall": 0.5}
    assert g["dimension"]["UNIT"] == {
        "in_target": 0, "not_in_target": 1, "tp": 0, "fp": 1, "fn": 0, "mean_precision": 0.0,
        "mean_recall": None, "micro_precision": 0.0, "micro_recall": None}
    assert g["dataset"]["DS1"]["mean_precision"] == 2 / 3
    assert g["dataset"]["DS2"] == {
        "in_target": 1, "not_in_target": 0, "tp": 0, "fp": 0, "fn": 1, "mean_precision": 0.0,
        "mean_recall": 0.0, "micro_precision": 0.0, "micro_recall": 0.0}


def test_selection_skip_errors_and_no_extra():
    task = SelectionTask({"on_error": "skip", "include_extra_dimensions": False})
    o = task.aggregate(OnePass(_selection_records(task)))["overall_metrics"]
    # only case 1, UNIT left out of precision: macro p = mean(1, 1) = 1; micro over FREQ, REF
    assert (o["macro_precision"], o["macro_recall"]) == (1.0, 0.75)
    assert (o["tp"], o["fp"], o["fn"], o["micro_precision"]) == (2, 0, 1, 1.0)
    assert (o["total_cases"], o["scored_cases"], o["errors"]) == (2, 1, 1)


def test_empty_streams():
    assert SelectionTask().aggregate(iter([]))["overall_metrics"]["macro_precision"] is None
    assert AnswersTask().aggregate(iter([]))["overall_metrics"]["psaq"] is None
    f = FieldsTask().aggregate(iter([]))
    assert f["overall_metrics"]["pass_rate"] is None and f["group_metrics"] == {"field": {}, "tag": {}}


TERMS = ["A", "B", "C"]
_dims = st.lists(st.tuples(st.sampled_from(["DS1", "DS2"]), st.sampled_from(["FREQ", "REF", "UNIT"]),
                           st.lists(st.sampled_from(TERMS), max_size=3)), max_size=4)
_sel_case = st.tuples(st.lists(st.sampled_from(["t1", "t2"]), max_size=2), st.booleans(),
                      st.lists(st.tuples(_dims, _dims), min_size=1, max_size=2))


def _sets(dims) -> dict:
    out: dict = {}
    for ds, dim, terms in dims:
        if terms:
            out.setdefault((ds, dim), set()).update(terms)
    return out


@settings(max_examples=100, deadline=None)
@given(st.lists(_sel_case, max_size=12), st.booleans(), st.booleans())
def test_selection_matches_brute_force(cases, skip, extra):
    task = SelectionTask({"on_error": "skip" if skip else "score", "include_extra_dimensions": extra})
    records = [_selection_record(task, i, tags, err, [(_sel(*t), _sel(*o)) for t, o in turns])
               for i, (tags, err, turns) in enumerate(cases)]
    m = task.aggregate(r for r in records)
    o = m["overall_metrics"]
    kept = [(c, r) for c, r in zip(cases, records, strict=True) if not (skip and c[1])]
    tp = fp = fn = 0
    case_p, case_r, with_extra, in_target = [], [], 0, {}
    for (_, _, turns), _r in kept:
        turn_p, turn_r, extra_here = [], [], False
        for t, s in turns:
            tgt, sel = _sets(t), _sets(s)
            ps, rs = [], []
            for key in tgt.keys() | sel.keys():
                a, b = sel.get(key, set()), tgt.get(key, set())
                extra_here |= not b
                in_target.setdefault(key[1], [0, 0])[0 if b else 1] += 1
                if b or extra:
                    tp, fp, fn = tp + len(a & b), fp + len(a - b), fn + len(b - a)
                    ps.append(len(a & b) / len(a) if a else 0.0)
                if b:
                    rs.append(len(a & b) / len(b))
            turn_p.append(sum(ps) / len(ps) if ps else 1.0)
            turn_r.append(sum(rs) / len(rs) if rs else 1.0)
        case_p.append(sum(turn_p) / len(turn_p))
        case_r.append(sum(turn_r) / len(turn_r))
        with_extra += extra_here
    if kept:
        assert o["macro_precision"] == pytest.approx(sum(case_p) / len(case_p), rel=1e-12)
        assert o["macro_recall"] == pytest.approx(sum(case_r) / len(case_r), rel=1e-12)
        # to the bit: the exact mean of the records' case figures, correctly rounded
        assert o["macro_precision"] == _exact_mean([r["scores"]["macro_precision"] for _, r in kept])
        assert o["macro_recall"] == _exact_mean([r["scores"]["macro_recall"] for _, r in kept])
    else:
        assert o["macro_precision"] is None and o["macro_recall"] is None
    assert (o["tp"], o["fp"], o["fn"]) == (tp, fp, fn)
    assert o["micro_recall"] == (tp / (tp + fn) if tp + fn else 1.0)
    assert o["micro_precision"] == (tp / (tp + fp) if tp + fp else (0.0 if fn else 1.0))
    assert o["cases_with_dimensions_not_in_target"] == with_extra
    assert (o["total_cases"], o["scored_cases"]) == (len(cases), len(kept))
    assert o["scored_turns"] == sum(len(c[2]) for c, _ in kept)
    assert o["errors"] == sum(1 for c in cases if c[1])
    dims = m["group_metrics"]["dimension"]
    assert list(dims) == sorted(in_target)
    assert {k: [v["in_target"], v["not_in_target"]] for k, v in dims.items()} == in_target


# ------------------------------------------------------------------------------ answers

ANSWERS = [  # the suite of tests/tasks/test_answers_run.py
    (["Summary Statistics"], "easy", [["a", "1"], ["b", "2"]], "a is @a[1] and b is @b[3]"),
    (["Summary Statistics", "Correlation Analysis"], "hard", [["c", "5"]], "@c[5.0000001]"),
    (["Correlation Analysis"], "easy", [["d", "x"], ["e", "y"], ["f", "z"]], "@d[x] @e[y] @f[z]"),
    (["Outlier Detection"], "hard", [["g", "10"]], ""),
]


def _answers_record(task, i, tags, error, concepts, level, expected, response) -> dict:
    r = _base(i, tags, error)
    r.update({"turn": 0, "question": "q", "concepts": concepts, "level": level,
              "response": response, "reformatted": None, "error": None, "attempts": 1,
              "latency_ms": 1.0, "expected": expected})
    return task.rescore_record(r)


def test_answers_hand_computed():
    task = AnswersTask()
    records = [_answers_record(task, i, [], False, *q) for i, q in enumerate(ANSWERS)]
    m = task.aggregate(OnePass(records))
    o = m["overall_metrics"]
    # PSAQ = (1/2 + 1 + 1 + 0)/4, ABQ = 2/4, UASQ = (1+1+3+0)/(2+1+3+1) (test_answers_run)
    assert (o["psaq"], o["abq"], o["uasq"]) == (0.625, 0.5, 5 / 7)
    assert (o["questions"], o["answered"], o["missing"], o["skipped_missing"]) == (4, 3, 1, 0)
    assert (o["total_cases"], o["errors"], o["match"], o["missing_mode"]) == (4, 0, "numeric", "wrong")
    g = m["group_metrics"]
    assert list(g["concept"]) == ["Summary Statistics", "Correlation Analysis", "Outlier Detection"]
    assert g["concept"]["Summary Statistics"] == {
        "questions": 2, "subquestions": 3, "correct_questions": 1, "correct_subquestions": 2,
        "psaq": 0.75, "abq": 0.5, "uasq": 2 / 3}
    assert list(g["concept_group"]) == ["1", ">1"]
    assert g["concept_group"]["1"]["psaq"] == 0.5
    assert {k: v["psaq"] for k, v in g["level"].items()} == {"easy": 0.75, "hard": 0.5}

    skip = AnswersTask({"missing": "skip"})
    o = skip.aggregate(OnePass([skip.rescore_record(r) for r in records]))["overall_metrics"]
    assert (o["psaq"], o["abq"], o["uasq"]) == (float(Fraction(5, 6)), 2 / 3, 5 / 6)
    assert (o["questions"], o["missing"], o["skipped_missing"]) == (3, 1, 1)


_NAMES = ["a", "b", "c"]
_VALUES = ["1", "2", "x", "1.0"]
_ans_case = st.tuples(
    st.lists(st.sampled_from(["t1", "t2"]), max_size=2), st.booleans(),
    st.lists(st.sampled_from(["C1", "C2", "C3"]), max_size=3),
    st.sampled_from([None, "easy", "hard"]),
    st.dictionaries(st.sampled_from(_NAMES), st.sampled_from(_VALUES), min_size=1),
    st.one_of(st.none(), st.just(""),
              st.dictionaries(st.sampled_from(_NAMES), st.sampled_from(_VALUES))),
)


def _same(expected: str, got: str | None) -> bool:
    if got is None:
        return False
    try:
        return got == expected or float(got) == float(expected)
    except ValueError:
        return False


@settings(max_examples=100, deadline=None)
@given(st.lists(_ans_case, max_size=15), st.booleans(), st.booleans())
def test_answers_match_brute_force(cases, skip_errors, skip_missing):
    task = AnswersTask({"on_error": "skip" if skip_errors else "score",
                        "missing": "skip" if skip_missing else "wrong"})
    records, responses = [], []
    for i, (tags, err, concepts, level, expected, given_) in enumerate(cases):
        response = given_ if not isinstance(given_, dict) else " ".join(
            f"@{k}[{v}]" for k, v in given_.items())
        responses.append(response)  # {} gives "": a missing answer
        records.append(_answers_record(task, i, tags, err, concepts, level,
                                       [list(p) for p in expected.items()], response))
    m = task.aggregate(r for r in records)
    o = m["overall_metrics"]
    counted = [c for c, r in zip(cases, responses, strict=True) if not (skip_errors and c[1])]
    answered = [c for c, r in zip(cases, responses, strict=True)
                if not (skip_errors and c[1]) and r not in (None, "")]
    scored = answered if skip_missing else counted
    fractions = []
    for c in scored:
        got = c[5] if isinstance(c[5], dict) else {}
        fractions.append((sum(_same(v, got.get(k)) for k, v in c[4].items()), len(c[4])))
    n, sub = len(fractions), sum(t for _, t in fractions)
    assert o["questions"] == n and o["subquestions"] == sub
    assert o["answered"] == len(answered) and o["missing"] == len(counted) - len(answered)
    assert o["skipped_missing"] == (len(counted) - len(answered) if skip_missing else 0)
    assert o["total_cases"] == len(cases)
    if n:
        assert o["psaq"] == float(sum(Fraction(c, t) for c, t in fractions) / n)
        assert o["abq"] == sum(c == t for c, t in fractions) / n
        assert o["uasq"] == sum(c for c, _ in fractions) / sub
    else:
        assert (o["psaq"], o["abq"], o["uasq"]) == (None, None, None)
    levels = list(dict.fromkeys(c[3] for c in scored if c[3] is not None))
    assert list(m["group_metrics"].get("level", {})) == levels
    concepts = list(dict.fromkeys(k for c in scored for k in c[2]))
    assert list(m["group_metrics"]["concept"]) == concepts
    for k in concepts:
        assert m["group_metrics"]["concept"][k]["questions"] == sum(1 for c in scored if k in c[2])


# ------------------------------------------------------------------------------ fields


def _fields_record(task, i, tags, error, turns) -> dict:
    r = _base(i, tags, error)
    r["turns"] = [_turn(k, t, o) for k, (t, o) in enumerate(turns)]
    return task.rescore_record(r)


def test_fields_hand_computed():
    task = FieldsTask()
    records = [
        # f1 (N = 2): x at 1, y at 3 -> recall 1/2, MRR 2/3; f2 (N = 1): z absent -> 0, 0
        _fields_record(task, 1, ["a"], False, [({"f1": ["x", "y"], "f2": ["z"]},
                                                {"f1": ["x", "q", "y"], "f2": ["w"]})]),
        # f1 (N = 1): found first -> passes; the second turn evaluates no field (not scored)
        _fields_record(task, 2, [], False, [({"f1": ["x"]}, {"f1": ["x"]}), ({}, None)]),
    ]
    m = task.aggregate(OnePass(records))
    o = m["overall_metrics"]
    assert (o["passed"], o["questions"], o["pass_rate"]) == (1, 2, 0.5)
    assert o["avg_recall"] == (0.25 + 1.0) / 2
    assert o["mrr"] == pytest.approx((1 / 3 + 1) / 2, rel=1e-15)
    assert (o["total_cases"], o["scored_cases"], o["errors"]) == (2, 2, 0)
    f = m["group_metrics"]["field"]
    assert list(f) == ["f1", "f2"]
    assert f["f1"]["questions"] == 2 and f["f1"]["passed"] == 1
    assert (f["f1"]["n"], f["f1"]["n_min"], f["f1"]["n_max"], f["f1"]["n_range"]) == (
        None, 1, 2, "1–2")  # N = 2, then 1
    assert f["f1"]["avg_recall"] == 0.75 and f["f1"]["mrr"] == pytest.approx(5 / 6, rel=1e-15)
    assert f["f2"] == {"questions": 1, "passed": 0, "pass_rate": 0.0, "avg_recall": 0.0,
                       "mrr": 0.0, "n": 1, "n_min": 1, "n_max": 1, "n_range": "1",
                       "model": None}
    assert list(m["group_metrics"]["tag"]) == ["(no tag)", "a"]
    assert m["group_metrics"]["tag"]["(no tag)"]["pass_rate"] == 1.0


_ITEMS = ["x", "y", "z"]
_ranked = st.lists(st.sampled_from([*_ITEMS, "w"]), max_size=5)
_target = st.dictionaries(st.sampled_from(["f1", "f2"]), st.lists(st.sampled_from(_ITEMS), max_size=3),
                          max_size=2)
_fields_case = st.tuples(st.lists(st.sampled_from(["t1", "t2"]), max_size=2), st.booleans(),
                         st.lists(st.tuples(_target, st.dictionaries(st.sampled_from(["f1", "f2"]), _ranked)),
                                  min_size=1, max_size=2))


def _field_oracle(ranked: list[str], truth: list[str], n: int | None) -> tuple[float, float, bool]:
    items = list(dict.fromkeys(truth))
    if not items:
        return 1.0, 1.0, True
    cut = len(items) if n is None else n
    ranks = [ranked.index(i) + 1 if i in ranked else None for i in items]
    found = [r for r in ranks if r is not None and r <= cut]
    return (len(found) / len(items), sum(1 / r for r in ranks if r) / len(items),
            len(found) == len(items))


@settings(max_examples=100, deadline=None)
@given(st.lists(_fields_case, max_size=12), st.booleans(), st.sampled_from([None, 1, 3]))
def test_fields_match_brute_force(cases, skip, n):
    task = FieldsTask({"on_error": "skip" if skip else "score", "n": n})
    records = [_fields_record(task, i, tags, err, turns) for i, (tags, err, turns) in enumerate(cases)]
    m = task.aggregate(r for r in records)
    o = m["overall_metrics"]
    questions, per_field, per_tag = [], {}, {}
    for tags, err, turns in cases:
        if skip and err:
            continue
        for target, output in turns:
            if not target:
                continue
            for tag in tags or ["(no tag)"]:
                per_tag[tag] = per_tag.get(tag, 0) + 1
            scores = [_field_oracle(output.get(f, []), truth, n) for f, truth in target.items()]
            for f, s in zip(target, scores, strict=True):
                per_field.setdefault(f, []).append(s)
            questions.append((sum(s[0] for s in scores) / len(scores),
                              sum(s[1] for s in scores) / len(scores), all(s[2] for s in scores)))
    assert o["questions"] == len(questions)
    assert o["passed"] == sum(q[2] for q in questions)
    assert o["total_cases"] == len(cases)
    assert o["scored_cases"] == sum(1 for c in cases if not (skip and c[1]))
    if questions:
        assert o["pass_rate"] == o["passed"] / len(questions)
        assert o["avg_recall"] == pytest.approx(sum(q[0] for q in questions) / len(questions), rel=1e-12)
        assert o["mrr"] == pytest.approx(sum(q[1] for q in questions) / len(questions), rel=1e-12)
        # to the bit: the exact mean of the records' question figures, correctly rounded
        recalls = [t["scores"]["recall"] for r in records if not (skip and r["status"] == "error")
                   for t in r["turns"] if t["scores"]["passed"] is not None]
        assert o["avg_recall"] == _exact_mean(recalls)
    else:
        assert (o["pass_rate"], o["avg_recall"], o["mrr"]) == (None, None, None)
    tags = m["group_metrics"]["tag"]
    assert {k: v["questions"] for k, v in tags.items()} == per_tag and list(tags) == sorted(per_tag)
    fields = m["group_metrics"]["field"]
    assert list(fields) == list(per_field)
    for f, scores in per_field.items():
        assert fields[f]["questions"] == len(scores)
        assert fields[f]["passed"] == sum(s[2] for s in scores)
        assert fields[f]["avg_recall"] == pytest.approx(sum(s[0] for s in scores) / len(scores), rel=1e-12)


# ------------------------------------------------------------------------------ memory

N_RECORDS = 50_000


def _pool(task, make) -> tuple[list[str], list[str]]:
    """16 records as JSON lines: whole, and without the fields the aggregate does not read
    (targets, outputs, texts), which keeps the 50,000 parses of the stream quick."""
    records = [make(task, i) for i in range(16)]
    drop = {"question", "target", "output", "response", "expected", "extracted", "name"}
    lean = [{k: v for k, v in r.items() if k not in drop} for r in records]
    for r in lean:
        if "turns" in r:
            r["turns"] = [{k: v for k, v in t.items() if k not in drop} for t in r["turns"]]
    return [json.dumps(r) for r in records], [json.dumps(r) for r in lean]


def _sel_make(task, i):
    terms = TERMS[: 1 + i % 3]
    return _selection_record(task, i, [f"t{i % 3}"], i % 7 == 0, [(  # 3 dimensions, as SDMX
        _sel(("DS1", "FREQ", terms), ("DS1", "REF", ["A"])),
        _sel(("DS1", "FREQ", TERMS[i % 2:]), ("DS2", "UNIT", ["B"])))])


def _ans_make(task, i):
    q = ANSWERS[i % 4]
    return _answers_record(task, i, [], i % 7 == 0, *q)


def _fields_make(task, i):
    return _fields_record(task, i, [f"t{i % 3}"], i % 7 == 0, [(
        {"f1": _ITEMS[: 1 + i % 3], "f2": ["y"]}, {"f1": ["w", "z", "y", "x"][i % 2:], "f2": ["y"]})])


@pytest.mark.slow  # ~3-9 s each: 50,000 JSON parses under tracemalloc
@pytest.mark.parametrize(("task_cls", "make"), [
    (SelectionTask, _sel_make), (AnswersTask, _ans_make), (FieldsTask, _fields_make)],
    ids=["selection", "answers", "fields"])
def test_aggregate_memory_is_flat(task_cls, make):
    """50,000 records parsed one at a time, as from the results JSONL: the aggregate keeps
    nothing per record (measured: ~10 KB in all; a list of these records would hold > 50 MB)."""
    task = task_cls()
    whole, lines = _pool(task, make)
    expected = task.aggregate([json.loads(line) for line in whole * 4])  # a small list, same order

    def stream(n: int):
        for i in range(n):
            yield json.loads(lines[i % len(lines)])

    assert task.aggregate(stream(4 * len(lines))) == expected
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held = [json.loads(line) for line in whole * 64]  # what a list costs, per record
        per_record = (tracemalloc.get_traced_memory()[0] - before) / len(held)
        del held
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        metrics = task.aggregate(stream(N_RECORDS))
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert metrics["overall_metrics"]["total_cases"] == N_RECORDS
    assert per_record * N_RECORDS > 50e6  # the bound below is meaningful
    print(f"{task.name}: peak {peak / 1e6:.2f} MB = {peak / N_RECORDS:.0f} B/record; list {per_record:.0f} B/record")
    assert peak < 200_000, f"peak {peak / 1e6:.1f} MB for {N_RECORDS} records"
