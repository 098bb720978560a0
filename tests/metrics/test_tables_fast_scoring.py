"""Fast table scoring gives the numbers the per-cell scorer gave (issue 34, item 6): SQL rows
to SPARQL-JSON terms column by column, terms to text column by column, each table read once
per case, one encoding per pair of tables -- property-tested against a copy of the per-cell
code (the oracle below) on random tables with NULLs, floats (NaN, ±inf, -0.0), mixed types
and duplicate rows; and a case whose scoring overruns its deadline or cell budget is an
error on its case while the run goes on (queryeval.metrics.deadline, docs/execution.md)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import uuid
from dataclasses import asdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import queryeval as qe
from queryeval.engines.query.base import QueryResult, sql_value_to_term, unique_names
from queryeval.metrics.deadline import Deadline, ScoringOverrun, scoring_deadline
from queryeval.metrics.tables import Budget, Table, as_table, best_of_golds, table_scores
from queryeval.metrics.tables.encode import encode, encode_tables
from queryeval.metrics.tables.explain import explain_tables
from queryeval.metrics.tables.model import _first_row_rule, cell_to_str
from queryeval.tasks.query.task import result_sample

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
UNLIMITED = Budget(max_nodes=None, max_seconds=None)


# --- the oracle: the per-cell conversions as they were before the fast paths ----------------

def old_to_sparql_json(columns, rows, kind="sql"):
    names = unique_names(columns)
    bindings = []
    for row in rows:
        binding = {}
        for name, cell in zip(names, row, strict=True):
            if cell is None:
                continue
            binding[name] = cell if kind != "sql" else sql_value_to_term(cell)
        bindings.append(binding)
    return {"head": {"vars": names}, "results": {"bindings": bindings}}


def old_as_table(data, rules="clean"):
    """as_table for the two shapes the fast paths changed (SPARQL JSON, header + rows)."""
    if "head" in data:
        bindings = data["results"]["bindings"]
        if rules == "buildingqa":
            columns = [str(k) for k in bindings[0]] if bindings else []

            def bqa(row, c):
                if c not in row:
                    return None
                cell = row[c]
                if isinstance(cell, dict):
                    return str(cell.get("value", ""))
                text = cell_to_str(cell)
                return "" if text is None else text

            return Table(columns, [tuple(bqa(r, c) for c in columns) for r in bindings])
        columns = [str(v) for v in data["head"]["vars"]]
        return Table(columns, [tuple(cell_to_str(r.get(c)) for c in columns) for r in bindings])
    table = Table([str(c) for c in data["columns"]],
                  [tuple(cell_to_str(v) for v in row) for row in data["rows"]])
    return _first_row_rule(table) if rules == "buildingqa" else table


def old_plain_rows(table):
    if "head" in table:
        cols = list(table["head"].get("vars") or [])
        rows = [[None if (b.get(c) or {}).get("value") is None else str(b[c]["value"])
                 for c in cols] for b in (table.get("results") or {}).get("bindings") or []]
        return cols, rows
    cols = [str(c) for c in table.get("columns") or []]
    return cols, [[None if v is None else str(v) for v in row] for row in table.get("rows") or []]


def old_result_sample(gold, pred, mapping, limit=10):
    g_cols, g_rows = old_plain_rows(gold)
    out = {"limit": limit, "mapping": mapping, "gold": {"columns": g_cols, "total": len(g_rows)}}
    p_cols, p_rows = old_plain_rows(pred) if pred is not None else ([], [])
    index = {c: i for i, c in enumerate(p_cols)}
    usable = mapping is not None and len(mapping) == len(g_cols) and all(c in index for c in mapping)
    projected = [tuple(r[index[c]] for c in mapping) for r in p_rows] if usable else []
    g_set, p_set = {tuple(r) for r in g_rows}, set(projected)

    def cut(row):
        return [v if v is None or len(v) <= 200 else v[:199] + "…" for v in row]

    out["gold"]["rows"] = [cut(r) for r in g_rows[:limit]]
    out["gold"]["matched"] = [usable and tuple(r) in p_set for r in g_rows[:limit]]
    if pred is not None:
        out["predicted"] = {"columns": p_cols, "total": len(p_rows),
                            "rows": [cut(r) for r in p_rows[:limit]],
                            "matched": [usable and projected[i] in g_set
                                        for i in range(min(limit, len(p_rows)))]}
    return out


def old_clean_normalize(value):
    import unicodedata

    from queryeval.metrics.tables.model import canonical_number

    if value is None:
        return None
    text = unicodedata.normalize("NFC", value).strip()
    number = canonical_number(text)
    return text if number is None else number


@settings(max_examples=1500, deadline=None)
@given(st.one_of(
    st.text(alphabet=st.sampled_from("0123456789+-.eE \t\nab\u00e9e\u0301\u2074\u0663"),
            max_size=8),
    st.integers(min_value=-10**70, max_value=10**70).map(str),
    st.integers(min_value=0, max_value=10**70).map(lambda i: "0" * (i % 3) + str(i)),
    st.floats().map(repr), st.text(max_size=6)))
def test_the_normalisation_is_the_per_cell_one(text):
    from queryeval.metrics.tables.model import clean_normalize, clean_normalize_all

    assert clean_normalize(text) == old_clean_normalize(text)
    assert clean_normalize_all([text, None]) == [old_clean_normalize(text), None]


# --- random tables -----------------------------------------------------------------------------

# few distinct values, so rows repeat and columns agree; every type an engine returns
sql_values = st.one_of(
    st.none(), st.sampled_from([0, 1, 2, -1, 10**20]), st.sampled_from(["a", "b", "1", " 1", "1.0"]),
    st.sampled_from([0.0, -0.0, 1.0, 1.5, float("nan"), float("inf"), float("-inf")]),
    st.booleans(), st.sampled_from([decimal.Decimal("1.0"), decimal.Decimal("1.50")]),
    st.sampled_from([b"a", b"\xff", dt.date(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0),
                     dt.time(1, 2), dt.timedelta(days=3), uuid.UUID(int=7)]),
)


@st.composite
def sql_tables(draw, min_cols=1, max_cols=4):
    n_cols = draw(st.integers(min_cols, max_cols))
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "x"]), min_size=n_cols,
                          max_size=n_cols))  # duplicate names too (a_2, ...)
    rows = draw(st.lists(st.tuples(*[sql_values] * n_cols), max_size=12))
    if rows and draw(st.booleans()):
        rows = rows + rows[: draw(st.integers(0, len(rows)))]  # duplicate rows
    return names, rows


@SETTINGS
@given(sql_tables())
def test_sql_rows_become_the_same_terms(table):
    names, rows = table
    got = QueryResult(list(names), list(rows), kind="sql").to_sparql_json()
    assert json.dumps(got, sort_keys=True) == json.dumps(old_to_sparql_json(names, rows),
                                                         sort_keys=True)


@settings(max_examples=30, deadline=None)
@given(st.lists(sql_values, min_size=1, max_size=50), st.integers(0, 2))
def test_long_columns_become_the_same_terms(extra, kind):
    """Columns past the first 4,096 cells, mostly distinct (terms built one by one) or
    repeating (one term per distinct text and integer)."""
    from queryeval.engines.query.base import sql_terms

    base = ([*range(5000), *map(str, range(5000))] if kind == 0 else
            [i % 7 for i in range(5000)] + ["a", "b"] * 100 if kind == 1 else
            [float(i) for i in range(4200)])
    values = [*extra, *base, *extra]
    assert sql_terms(values) == [None if v is None else sql_value_to_term(v) for v in values]


@SETTINGS
@given(sql_tables(), st.sampled_from(["clean", "buildingqa"]))
def test_tables_read_to_the_same_cells(table, rules):
    names, rows = table
    sparql = old_to_sparql_json(names, rows)
    assert as_table(sparql, rules=rules) == old_as_table(sparql, rules=rules)
    plain = {"columns": list(names), "rows": [list(r) for r in rows]}
    assert as_table(plain, rules=rules) == old_as_table(plain, rules=rules)


def same_scores(a, b) -> bool:
    da, db = asdict(a), asdict(b)
    return all(x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y))
               for x, y in zip(da.values(), db.values(), strict=True)) and da.keys() == db.keys()


@SETTINGS
@given(sql_tables(max_cols=3), sql_tables(max_cols=4), st.sampled_from(["clean", "buildingqa"]),
       st.booleans())
def test_scores_and_explanations_are_those_of_the_per_cell_scorer(gold, pred, rules, ordered):
    g_sparql, p_sparql = old_to_sparql_json(*gold), old_to_sparql_json(*pred)
    # new: from the engines' rows, as the query task does (terms built column by column,
    # each table read once, one encoding shared by the figures and the explanation)
    p_new = QueryResult(list(pred[0]), list(pred[1]), kind="sql").to_sparql_json()
    g_new = QueryResult(list(gold[0]), list(gold[1]), kind="sql").to_sparql_json()
    p_table, g_table = as_table(p_new, rules=rules), as_table(g_new, rules=rules)
    _, fast = best_of_golds([g_table], p_table, rules=rules, budget=UNLIMITED,
                            ordered=[ordered and rules == "clean"])
    # old: every conversion per cell, a fresh encoding for every figure
    p_old, g_old = old_as_table(p_sparql, rules), old_as_table(g_sparql, rules)
    import queryeval.metrics.tables.scores as scores_mod

    real = scores_mod.encode
    scores_mod.encode = encode_tables  # no shared encoding
    try:
        slow = table_scores(g_old, p_old, rules=rules, budget=UNLIMITED,
                            ordered=ordered and rules == "clean")
    finally:
        scores_mod.encode = real
    assert same_scores(fast, slow)
    mapping = list(fast.mapping) if fast.mapping is not None else None
    assert explain_tables(g_table, p_table, rules=rules, mapping=mapping,
                          ordered=ordered and rules == "clean") == explain_tables(
        old_as_table(g_sparql, rules), old_as_table(p_sparql, rules), rules=rules,
        mapping=mapping, ordered=ordered and rules == "clean")
    assert result_sample(g_new, p_new, mapping, limit=5) == old_result_sample(
        g_sparql, p_sparql, mapping, limit=5)


def test_the_shared_encoding_is_of_the_same_two_tables_only():
    a = Table(["x"], [("1",), ("2",)])
    b = Table(["y"], [("1",), ("3",)])
    first = encode(a, b, "clean")
    assert encode(a, b, "clean") is first  # the same pair: encoded once
    assert encode(Table(["x"], [("1",), ("2",)]), b, "clean") is not first  # an equal copy
    assert encode(a, b, "buildingqa") is not first and encode(a, b, "clean", 0.5) is not first


# --- the deadline and the cell budget ------------------------------------------------------------

def test_a_scoring_deadline_stops_the_scorer():
    rows = [(str(i), str(i % 7)) for i in range(2000)]
    pred, gold = Table(["a", "b"], rows), Table(["a", "b"], rows[::-1])
    with pytest.raises(ScoringOverrun) as err, scoring_deadline(1e-9):
        table_scores(gold, pred)
    assert err.value.kind == "deadline"
    assert "deadline (1e-09 s, score_timeout_s)" in str(err.value)
    # without one (a library call), nothing changes
    assert table_scores(gold, pred).row_matching_f1 == 1.0
    # the time between the blocks of one case does not count
    deadline = Deadline(60.0)
    with deadline.active():
        pass
    assert deadline.spent < 60.0


def wide_suite(folder, n_rows: int):
    """A sqlite table of ``n_rows`` × 3 and two cases: one returns every cell, one a few."""
    import sqlite3

    db = folder / "w.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE w(a INTEGER, b TEXT, c REAL)")
    conn.executemany("INSERT INTO w VALUES (?, ?, ?)",
                     [(i, f"v{i % 13}", i / 4) for i in range(n_rows)])
    conn.commit()
    conn.close()
    cases = [("all", "SELECT a, b, c FROM w"), ("few", "SELECT a FROM w WHERE a < 5")]
    suite = folder / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": cid, "conversation": [{
        "role": "user", "content": cid, "target": {"query": {"source": str(db), "gold": q}}}]})
        + "\n" for cid, q in cases))
    preds = folder / "preds.jsonl"
    preds.write_text("".join(json.dumps({"case_id": cid, "query": q}) + "\n" for cid, q in cases))
    return suite, preds


def run_records(run):
    path = run.folder / f"results_{run.batch_id}.jsonl"
    return {r["case_id"]: r for r in map(json.loads, path.read_text().splitlines())}


def test_a_result_over_the_cell_budget_is_an_error_on_its_case_and_the_run_goes_on(tmp_path):
    suite, preds = wide_suite(tmp_path, 400)  # 1,200 cells
    run = qe.evaluate(suite, responses=preds, task="query", out=tmp_path / "runs",
                      options={"score_max_cells": 1000})
    recs = run_records(run)
    big, few = recs["all"], recs["few"]
    assert (big["status"], big["error_kinds"], big["scores"]) == ("error", ["scoring"], None)
    assert big["scoring_error"] == {
        "kind": "cells", "message": "gold: the result has 1,200 cells, more than the scoring "
                                    "budget of 1,000 (score_max_cells)"}
    assert big["explanation"][0]["kind"] == "unscored"
    assert few["status"] == "ok" and few["scores"]["exact_match_f1"] == 1.0
    overall = run.metrics["overall_metrics"]
    assert (overall["cases"], overall["errors"], overall["gold_failures"]) == (1, 1, 0)
    assert overall["errors_by_kind"] == {"scoring": 1}
    assert overall["exact_match_f1"] == 1.0  # the unscored case enters no mean
    row = next(r for r in (tmp_path / "runs").rglob("results_*.csv"))
    assert "scoring: gold: the result has 1,200 cells" in row.read_text()


def test_a_scoring_past_its_deadline_is_an_error_on_its_case(tmp_path):
    suite, preds = wide_suite(tmp_path, 50)
    run = qe.evaluate(suite, responses=preds, task="query", out=tmp_path / "runs",
                      options={"score_timeout_s": 1e-9})
    for rec in run_records(run).values():
        assert (rec["status"], rec["error_kinds"], rec["scores"]) == ("error", ["scoring"], None)
        assert rec["scoring_error"]["kind"] == "deadline"
    # re-scored without the deadline, the same records are scored
    again = qe.evaluate(suite, responses=preds, task="query", out=tmp_path / "runs2")
    assert {r["status"] for r in run_records(again).values()} == {"ok"}


def test_scoring_a_case_reads_each_cell_once(tmp_path, monkeypatch):
    """The per-cell conversion to text runs once per cell of each table of a case (as the
    SQL result's JSON is made, ``ResultJson``; else as the table is read, ``cells_to_str``):
    the scores, the exact match, the explanation and the sample share one reading and one
    encoding."""
    import queryeval.metrics.tables.model as model

    suite, preds = wide_suite(tmp_path, 300)
    preds.write_text(json.dumps({"case_id": "all", "query": "SELECT c, b, a, a FROM w"}) + "\n"
                     + json.dumps({"case_id": "few", "query": "SELECT a FROM w WHERE a < 7"})
                     + "\n")
    seen = []
    real = model.cells_to_str

    def counting(values):
        seen.append(len(values))
        return real(values)

    monkeypatch.setattr(model, "cells_to_str", counting)

    class Counted(model.ResultJson):
        __slots__ = ()

        def __init__(self, doc, cells):
            seen.extend(len(c) for c in cells)
            super().__init__(doc, cells)

    monkeypatch.setattr(model, "ResultJson", Counted)
    encodings = []
    import queryeval.metrics.tables.encode as enc_mod

    real_encode = enc_mod.encode_tables
    monkeypatch.setattr(enc_mod, "encode_tables",
                        lambda *a, **k: encodings.append(1) or real_encode(*a, **k))
    run = qe.evaluate(suite, responses=preds, task="query", out=tmp_path / "runs")
    recs = run_records(run)
    assert recs["all"]["scores"]["row_matching_f1"] == 1.0
    assert [i["kind"] for i in recs["all"]["explanation"]] == ["extra_columns"]
    assert [i["kind"] for i in recs["few"]["explanation"]] == ["values"]
    # case "all": gold 300 x 3, predicted 300 x 4; case "few": gold 5 x 1, predicted 7 x 1
    assert sum(seen) == 300 * 3 + 300 * 4 + 5 + 7
    assert len(encodings) == 2  # one encoding per case


@SETTINGS
@given(sql_tables(), st.sampled_from(["clean", "buildingqa"]), st.integers(0, 3))
def test_a_sql_result_read_from_its_held_cells_reads_as_from_its_bindings(table, rules, first):
    """A SQL result's SPARQL JSON holds its cells as text (``ResultJson``): the Table, the
    plain rows and the report's sample read from them equal what the bindings give (a
    plain dict of the same document, and the reference implementation), and it writes,
    pickles and copies as the plain document."""
    import pickle

    from queryeval.metrics.tables.model import ResultJson
    from queryeval.tasks.query.task import _plain_rows

    names, rows = table
    held = QueryResult(list(names), list(rows), kind="sql").to_sparql_json()
    assert type(held) is ResultJson
    plain = old_to_sparql_json(names, rows)
    assert json.dumps(held) == json.dumps(plain) and dict(held) == plain
    assert as_table(held, rules=rules) == as_table(plain, rules=rules) == old_as_table(plain, rules=rules)
    cols = list(plain["head"]["vars"])
    for kwargs in ({}, {"first": first}, {"only": cols[:first]}):
        assert _plain_rows(held, **kwargs) == _plain_rows(plain, **kwargs)
    mapping = cols[::-1] or None
    assert result_sample(held, held, mapping, limit=first) == result_sample(plain, plain, mapping, limit=first)
    back = pickle.loads(pickle.dumps(held))
    assert type(back) is ResultJson and back == held and back.cells == held.cells


def _first_seen(ids: list[int]) -> list[int]:
    """Each position's first position with the same id: the equality pattern of ``ids``."""
    first: dict[int, int] = {}
    return [first.setdefault(v, i) for i, v in enumerate(ids)]


@SETTINGS
@given(st.integers(1, 4), st.integers(0, 30), st.integers(0, 30), st.integers(1, 5),
       st.randoms(use_true_random=False))
def test_row_ids_are_equal_exactly_where_the_rows_are(n_cols, n_g, n_p, n_values, rnd):
    """``_row_sequences`` (rows to ids a column at a time) gives equal ids exactly where
    ``numpy.unique(axis=0)`` over the mapped rows does -- the oracle it replaced."""
    import numpy as np

    from queryeval.metrics.tables.scores import _row_sequences

    gold = [[rnd.randrange(n_values) for _ in range(n_g)] for _ in range(n_cols)]
    extra = rnd.randrange(3)
    pred = [[rnd.randrange(n_values) for _ in range(n_p)] for _ in range(n_cols + extra)]
    mapping = tuple(rnd.sample(range(n_cols + extra), n_cols))

    class Enc:
        gold_cols = [np.array(c, dtype=np.int64) for c in gold]
        pred_cols = [np.array(c, dtype=np.int64) for c in pred]

    g_ids, p_ids = _row_sequences(Enc, mapping)
    g_mat = np.stack(Enc.gold_cols, axis=1)
    p_mat = np.stack([Enc.pred_cols[c] for c in mapping], axis=1)
    _, want = np.unique(np.concatenate([g_mat, p_mat]), axis=0, return_inverse=True)
    want = want.ravel().tolist()
    assert (len(g_ids), len(p_ids)) == (n_g, n_p)
    assert _first_seen(g_ids + p_ids) == _first_seen(want)


CELLS = st.one_of(st.none(), st.sampled_from(["1", "01", " 1", "1.0", "a", "A", "", " a ", "2",
                                              "b@en", '"b"', "c^^x"]))


@st.composite
def table_pairs(draw):
    def table(prefix):
        width = draw(st.integers(1, 4))
        rows = draw(st.lists(st.tuples(*[CELLS] * width), max_size=12))
        return Table([f"{prefix}{i}" for i in range(width)], rows)
    return table("g"), table("p")


@settings(max_examples=300, deadline=None)
@given(table_pairs(), st.sampled_from(["clean", "buildingqa"]), st.sampled_from([0.0, 0.5]))
def test_the_pair_statistics_are_the_brute_force_counts(pair, rules, tol):
    """``encode_tables``' per-(gold column, predicted column) figures, counted by brute force
    from each column's values under the rules: the multiset overlap (unbound cells included),
    the shared entities and each side's entity count (unbound cells left out under clean
    rules; read as "" under BuildingQA's), and each gold column's count of distinct values.
    With unbound cells and values that the rules make equal ("1", "01", " 1", "1.0")."""
    from collections import Counter

    from queryeval.metrics.tables.model import (
        buildingqa_entity,
        buildingqa_normalize,
        clean_normalize,
    )
    from queryeval.metrics.tables.modes import tolerance_classes

    gold, pred = pair
    tol = tol if rules == "clean" else 0.0
    enc = encode_tables(gold, pred, rules, abs_tol=tol)

    def column(table, k):
        return [row[k] for row in table.rows]

    if rules == "clean":
        every = [v for t in (gold, pred) for k in range(t.n_columns) for v in column(t, k)]
        norm = [clean_normalize(v) for v in every]
        classes = dict(zip(every, tolerance_classes(norm, tol, 0.0) if tol else norm, strict=True))

        def row_value(v):
            return None if v is None else ("v", classes[v])

        def entities(values):
            return {row_value(v) for v in values if v is not None}
    else:
        def row_value(v):
            return buildingqa_normalize(v)

        def entities(values):
            return {buildingqa_entity(v) for v in values}

    for j in range(gold.n_columns):
        g_vals = [row_value(v) for v in column(gold, j)]
        assert enc.gold_distinct[j] == len(set(g_vals))
        assert enc.gold_set_sizes[j] == len(entities(column(gold, j)))
        for c in range(pred.n_columns):
            p_vals = [row_value(v) for v in column(pred, c)]
            assert enc.overlap[j, c] == sum((Counter(g_vals) & Counter(p_vals)).values())
            assert enc.ent_tp[j, c] == len(entities(column(gold, j)) & entities(column(pred, c)))
    for c in range(pred.n_columns):
        assert enc.pred_set_sizes[c] == len(entities(column(pred, c)))
