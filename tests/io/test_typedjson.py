"""Engine values in the run log: every value an engine returns (UUID, INTERVAL, DECIMAL,
BLOB, dates and times, NaN/±inf, ...) is written in a typed, lossless JSON form and reads back
equal; a value with no JSON form is one error on its case, never the run
(queryeval.io.typedjson, run/log.py; docs/run-log.md)."""

from __future__ import annotations

import datetime as dt
import decimal
import ipaddress
import json
import math
import uuid
import zoneinfo
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import queryeval as qe
from queryeval.io.typedjson import display, from_json, record_json, to_json
from queryeval.report.numbers import value_text
from queryeval.run.log import dumps


def same(a, b) -> bool:
    """Equal, NaN equal to NaN, and of the same type (a tuple is no list, a Decimal no float)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, decimal.Decimal) and a.is_nan():
        return b.is_nan()
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (dt.datetime, dt.time)):
        return a == b and a.utcoffset() == b.utcoffset() and str(a.tzinfo) == str(b.tzinfo)
    return a == b


def through_file(value):
    """``value`` written as the run log writes it and parsed back."""
    return from_json(json.loads(dumps(to_json(value))))


zones = st.sampled_from([None, dt.timezone.utc, dt.timezone(dt.timedelta(hours=5, minutes=30)),
                         zoneinfo.ZoneInfo("Europe/Paris"), zoneinfo.ZoneInfo("Etc/UTC")])
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10**320, max_value=10**330),
    st.floats(allow_nan=True, allow_infinity=True), st.text(),
    st.decimals(allow_nan=False, allow_infinity=False), st.just(decimal.Decimal("NaN")),
    st.just(decimal.Decimal("-Infinity")), st.binary(), st.uuids(), st.dates(),
    st.times(timezones=st.sampled_from([None, dt.timezone(dt.timedelta(hours=-3))])),
    st.datetimes(timezones=zones), st.timedeltas(),
    st.ip_addresses().map(ipaddress.ip_address),
    st.sampled_from([ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_interface("::1/64")]),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.lists(inner, max_size=4).map(tuple),
    st.dictionaries(st.text(max_size=5), inner, max_size=4),
    st.dictionaries(st.integers(), inner, max_size=3),  # a DuckDB MAP with integer keys
    st.dictionaries(st.just("$type"), inner, max_size=1),  # a STRUCT with a field "$type"
), max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(values)
def test_every_value_reads_back_equal(value):
    assert same(through_file(value), value)


def test_the_typed_forms_are_the_documented_ones():
    assert to_json(uuid.UUID(int=1)) == {"$type": "uuid",
                                         "value": "00000000-0000-0000-0000-000000000001"}
    assert to_json(dt.timedelta(days=33, microseconds=1)) == {"$type": "interval",
                                                              "value": [33, 0, 1]}
    assert to_json(decimal.Decimal("2.500")) == {"$type": "decimal", "value": "2.500"}
    assert to_json(b"\xff\x00") == {"$type": "bytes", "value": "ff00"}
    assert to_json(float("-inf")) == {"$type": "float", "value": "-inf"}
    assert to_json([1, "a", None, 1.5, {"k": True}]) == [1, "a", None, 1.5, {"k": True}]
    assert to_json({1: "x"}) == {"$type": "map", "value": [[1, "x"]]}
    assert to_json(dt.datetime(2024, 1, 1, 8, tzinfo=zoneinfo.ZoneInfo("Etc/UTC"))) == {
        "$type": "datetime", "value": "2024-01-01T08:00:00+00:00", "tz": "Etc/UTC"}
    # as a reader sees them
    assert [display(to_json(v)) for v in (uuid.UUID(int=1), dt.timedelta(days=3),
                                          decimal.Decimal("2.500"), b"\xff", float("nan"))] == [
        "00000000-0000-0000-0000-000000000001", "3 days, 0:00:00", "2.500", "\\xff", "nan"]
    assert value_text(to_json(uuid.UUID(int=2))) == "00000000-0000-0000-0000-000000000002"


def test_a_value_with_no_json_form_is_an_error_on_its_case():
    record = {"case_id": "c1", "status": "ok", "error_kinds": [], "error": None,
              "scores": {"f1": 1.0},
              "detail": {"rows": [[1, object(), float("nan"), uuid.UUID(int=3)]]}}
    text, error = record_json(record, dumps)
    back = json.loads(text)
    assert error == {"kind": "unwritable", "message": "the run log cannot hold a value: "
                                                      "detail.rows[0][1]: a object value has no "
                                                      "JSON form"}
    assert back["status"] == "error" and back["error_kinds"] == ["unwritable"]
    assert back["error"] == error and back["scores"] == {"f1": 1.0}
    assert back["detail"]["rows"] == [[1, None, {"$type": "float", "value": "nan"},
                                       {"$type": "uuid", "value": str(uuid.UUID(int=3))}]]
    # a record JSON holds is written exactly as json writes it
    plain = {"case_id": "c2", "scores": {"f1": 0.5}, "rows": [[1, "a", None]]}
    assert record_json(plain, dumps) == (json.dumps(plain, ensure_ascii=False), None)


@pytest.fixture(scope="module")
def typed_run(tmp_path_factory):
    """A --test-suite run over a DuckDB table of every awkward type: one prediction right by
    accident on the shipped rows (refuted on a neighbour), one over the typed columns. Its
    neighbours go to a cache of its own, so that the test that reads them back sees no
    other test's files (the session's cache is shared by the xdist workers)."""
    duckdb = pytest.importorskip("duckdb")
    folder = tmp_path_factory.mktemp("typed")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QUERYEVAL_CACHE_DIR", str(folder / "cache"))
        yield _typed_run(duckdb, folder)


def _typed_run(duckdb, folder: Path):
    db = folder / "t.duckdb"
    conn = duckdb.connect(str(db))
    conn.execute("CREATE TABLE emp(name VARCHAR, salary INTEGER, uid UUID, dur INTERVAL, "
                 "amt DECIMAL(10,3), raw BLOB, ts TIMESTAMPTZ, d DATE, t TIME, f DOUBLE)")
    conn.execute("""INSERT INTO emp VALUES
      ('alice', 90, '11111111-1111-1111-1111-111111111111', INTERVAL 3 DAY, 1.250, '\\x00ab'::BLOB,
       '2024-01-01 10:00:00+00', '2024-01-01', '10:00:00', 'nan'::DOUBLE),
      ('bob', 120, '22222222-2222-2222-2222-222222222222', INTERVAL 1 MONTH, 2.500, '\\xFF'::BLOB,
       '2024-01-02 10:00:00+00', '2024-01-02', '11:00:00', 'inf'::DOUBLE),
      ('carol', 150, '33333333-3333-3333-3333-333333333333', INTERVAL 2 HOUR, 3.750, 'cd'::BLOB,
       '2024-01-03 10:00:00+00', '2024-01-03', '12:00:00', 1.5)""")
    conn.close()
    typed = "uid, dur, amt, raw, ts, d, t, f"
    cases = [{"id": cid, "conversation": [{"role": "user", "content": cid, "target": {
        "query": {"source": str(db), "gold": f"SELECT {cols} FROM emp WHERE salary > 100"}}}]}
        for cid, cols in (("names", "name"), ("typed", typed))]
    suite = folder / "suite.jsonl"
    suite.write_text("".join(json.dumps(c) + "\n" for c in cases))
    preds = folder / "preds.jsonl"
    preds.write_text("".join(json.dumps({"case_id": cid, "query":
                                         f"SELECT {cols} FROM emp WHERE name IN ('bob','carol')"})
                             + "\n" for cid, cols in (("names", "name"), ("typed", typed))))
    run = qe.evaluate(suite, responses=preds, task="query", out=folder / "runs", test_suite=4)
    return folder, run


def lines(run: qe.Run) -> list[dict]:
    path = run.folder / f"results_{run.batch_id}.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_refuting_neighbour_rows_reach_the_run_log_and_read_back_equal(typed_run):
    import duckdb

    from queryeval.engines.query.neighbours import cache_root

    folder, run = typed_run
    recs = {r["case_id"]: r for r in lines(run)}
    assert set(recs) == {"names", "typed"}
    rec = recs["names"]
    assert rec["status"] == "ok" and rec["scores"]["test_suite_match"] == 0.0
    recorded = rec["test_suite"]["refuted_by"]["database"]["emp"]
    decoded = [tuple(from_json(v) for v in row) for row in recorded["rows"]]
    # the neighbour's own rows, as DuckDB returns them, are among the neighbour files built
    tables = []
    for path in Path(cache_root()).rglob("*.duckdb"):
        conn = duckdb.connect(str(path), read_only=True)
        try:
            tables.append(conn.execute("SELECT * FROM emp").fetchall())
        except duckdb.Error:
            pass
        finally:
            conn.close()
    assert any(len(t) == len(decoded) and all(same(a, b) for a, b in zip(t, decoded, strict=True))
               for t in tables)
    kinds = {type(from_json(v)).__name__ for r in recs.values()
             for row in r["test_suite"]["refuted_by"]["database"]["emp"]["rows"] for v in row}
    assert {"UUID", "timedelta", "Decimal", "bytes", "date", "time"} <= kinds
    # the explanation shows the values as text, not as tagged objects
    message = rec["explanation"][0]["message"]
    assert "$type" not in message


def test_resume_of_a_run_with_typed_values_finishes(typed_run, tmp_path):
    import shutil

    folder, run = typed_run
    copy = tmp_path / "runs"
    shutil.copytree(run.folder, copy)
    results = copy / f"results_{run.batch_id}.jsonl"
    kept = results.read_text().splitlines()[:1]  # the second case was never written
    results.write_text(kept[0] + "\n")
    again = qe.resume(copy / f"batch_{run.batch_id}.json")
    assert sorted(r["case_id"] for r in lines(again)) == ["names", "typed"]
    typed = {r["case_id"]: r for r in lines(again)}["typed"]
    assert typed["status"] == "ok"


@pytest.mark.parametrize("wall, fold", [
    ((1999, 3, 28, 2, 0), 0), ((1999, 3, 28, 2, 30), 1),  # skipped when clocks go forward
    ((1999, 10, 31, 2, 30), 0), ((1999, 10, 31, 2, 30), 1),  # repeated when they go back
    ((2024, 7, 1, 12, 0), 0)])
def test_a_zoned_wall_time_reads_back_as_written(wall, fold) -> None:
    value = dt.datetime(*wall, tzinfo=zoneinfo.ZoneInfo("Europe/Paris"), fold=fold)
    back = through_file(value)
    assert same(back, value) and back.fold == value.fold
    assert (back.replace(tzinfo=None), back.utcoffset()) == (value.replace(tzinfo=None),
                                                              value.utcoffset())
