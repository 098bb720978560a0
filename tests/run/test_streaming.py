"""Large inputs stream: the id index, ordered record streams, indexed recorded responses, lazy
suites (questions CSV, cases JSONL), the report limit, and peak memory per case end to end."""

from __future__ import annotations

import csv
import json
import pickle
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.cli.app import main
from queryeval.errors import InputError
from queryeval.io.idindex import IdIndex, KeyBuilder, id_key
from queryeval.report import run_reports
from queryeval.run.log import RunLog
from queryeval.run.records import scan_records
from queryeval.suite.loader import load_suite
from queryeval.systems.recorded import IndexedRecordedSystem, RecordedSystem
from queryeval.tasks.base import get_task

REPO = Path(__file__).resolve().parents[2]
SDMX = REPO / "examples" / "sdmx"
IDS = st.text(alphabet="ab\u00e9\U0001f600", min_size=0, max_size=3)


# ============================================================================ id index

@settings(max_examples=150, deadline=None)
@given(st.lists(IDS, max_size=40), st.lists(IDS, max_size=10))
def test_id_index_agrees_with_a_dict(ids, probes):
    index = IdIndex.from_ids(ids)
    oracle: dict[str, list[int]] = {}
    for i, value in enumerate(ids):
        oracle.setdefault(value, []).append(i)
    for value in [*ids, *probes]:
        assert index.get_all(value) == oracle.get(value, [])
        assert index.get(value) == (oracle[value][0] if value in oracle else None)
        assert (value in index) == (value in oracle)
    keys = [id_key(v) for v in probes]
    got = index.lookup(np.array([k[0] for k in keys], dtype=np.uint64),
                       np.array([k[1] for k in keys], dtype=np.uint64), missing=-7)
    assert got.tolist() == [oracle[v][0] if v in oracle else -7 for v in probes]
    assert index.count_common(IdIndex.from_ids(probes)) == len(set(probes) & set(ids))
    assert len(index.duplicate_rows()) == len(ids) - len(set(ids))


def test_id_index_narrows_keys_whose_first_half_collides():
    """Two ids with equal first 64 bits (forced) are still told apart by the second half."""
    b = KeyBuilder()
    b.hi.extend([5, 5, 5])
    b.lo.extend([9, 3, 7])
    b.values.extend([0, 1, 2])
    index = b.build()
    got = index.lookup(np.array([5, 5, 5, 5], dtype=np.uint64), np.array([3, 7, 9, 4], dtype=np.uint64))
    assert got.tolist() == [1, 2, 0, -1]


# ============================================================================ ordered records

def _write_lines(path: Path, lines: list[dict], cut: str = "") -> None:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines) + cut)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdefg"), st.integers(0, 9)), max_size=25),
       st.permutations(list("abcdef")), st.booleans())
def test_scan_records_orders_and_replaces_like_a_dict(tmp_path_factory, lines, order, cut):
    path = tmp_path_factory.mktemp("scan") / "results.jsonl"
    records = [{"case_id": c, "x": x} for c, x in lines]
    _write_lines(path, records, '{"case_id": "a", "x": 99' if cut else "")
    # oracle: the old reader (last line of a case wins, in its first line's place), then sort
    latest: dict[str, dict] = {}
    for r in records:
        latest[r["case_id"]] = r
    rank = {c: i for i, c in enumerate(order)}
    expected = sorted(latest.values(), key=lambda r: rank.get(r["case_id"], len(rank)))
    stream = scan_records(path, order, with_ids=True)
    assert list(stream) == expected and list(stream) == expected  # re-iterable
    assert len(stream) == len(expected)
    # without ids (how a run finishes): equal ranks are equal ids; "g" is not in the order
    assert list(scan_records(path, order)) == expected
    assert list(scan_records(path)) == list(latest.values())
    assert all(c in stream.ids for c in latest) and "zz" not in stream.ids


def test_scan_records_repairs_a_cut_line_and_names_a_corrupt_one(tmp_path):
    path = tmp_path / "results.jsonl"
    _write_lines(path, [{"case_id": "a"}, {"case_id": "b"}], cut='{"case_id": "c", "x"')
    assert [r["case_id"] for r in scan_records(path, repair=True)] == ["a", "b"]
    assert path.read_text().endswith('{"case_id": "b"}\n')
    path.write_text('{"case_id": "a"}\n\n{"case_id": "b", oops}\n')
    with pytest.raises(InputError, match=r"results.jsonl:3: corrupt result line"):
        list(scan_records(path))


# ============================================================================ recorded responses

def _recorded_file(tmp_path: Path, n: int) -> tuple[Path, list[dict]]:
    rng = random.Random(3)
    lines = [{"case_id": f"c{i}", "turn": 0 if i % 3 else None,
              "indicator_selection": [{"dataset_id": f"D{rng.randrange(4)}", "dimensions": [
                  {"dimension_name": "X", "values": [{"id": f"v{rng.randrange(9)}", "name": "v"}]}]}]}
             for i in range(n)]
    rng.shuffle(lines)
    path = tmp_path / "responses.jsonl"
    path.write_text("\ufeff" + "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines),
                    encoding="utf-8")
    return path, lines


def test_indexed_responses_answer_like_the_in_memory_reader(tmp_path):
    path, lines = _recorded_file(tmp_path, 300)
    task = get_task("indicator_selection")
    indexed = RecordedSystem.load(path, task)
    assert isinstance(indexed, IndexedRecordedSystem)
    csv_path = tmp_path / "responses.csv"  # the same answers, read into memory
    with csv_path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["case_id", "turn", "indicator_selection"])
        for x in lines:
            w.writerow([x["case_id"], "" if x["turn"] is None else x["turn"], json.dumps(x["indicator_selection"])])
    scored = {x["case_id"]: [0] for x in lines} | {"other": [0, 2]}
    assert indexed.bind(scored) == []
    for x in lines:
        request = {"case_id": x["case_id"], "turn": 0}
        assert indexed.call(request, None) == task.parse_output(x["indicator_selection"])
    shipped = pickle.loads(pickle.dumps(indexed))  # what Ray workers get: the outputs themselves
    assert type(shipped) is RecordedSystem and len(shipped.entries) == 300
    assert shipped.call({"case_id": "c4", "turn": 0}, None) == indexed.call({"case_id": "c4", "turn": 0}, None)
    indexed.close()
    assert indexed.call({"case_id": "c5", "turn": 0}, None)  # reopens after close


def test_indexed_responses_report_duplicates_and_turns_by_line(tmp_path):
    task = get_task("indicator_selection")
    path = tmp_path / "r.jsonl"
    line = {"case_id": "a", "indicator_selection": []}
    _write_lines(path, [line, {**line, "case_id": "b"}, {**line, "turn": 0}, {**line, "case_id": "b"}])
    with pytest.raises(InputError, match=r"r.jsonl:4: case_id: duplicate response for case 'b' \(first at line 2\)"):
        RecordedSystem.load(path, task)
    _write_lines(path, [line, {**line, "turn": 0}])  # no turn and turn 0: the same answer twice
    system = RecordedSystem.load(path, task)
    with pytest.raises(InputError, match=r"r.jsonl:2: case_id: duplicate response for case 'a' turn 0 \(first at line 1\)"):
        system.bind({"a": [0]})
    for bad in (-1, 2**31, 2**70):  # found by bench/fuzz.py: 2**70 overflowed the index
        _write_lines(path, [{**line, "turn": bad}])
        with pytest.raises(InputError, match=r"r.jsonl:1: turn: must be an integer from 0 to 2,147,483,647"):
            RecordedSystem.load(path, task)
    csv_path = tmp_path / "r.csv"
    csv_path.write_text("case_id,turn,query\na," + "9" * 30 + ",SELECT 1\n")
    with pytest.raises(InputError, match=r"r.csv:2: turn: must be an integer from 0"):
        RecordedSystem.load(csv_path, get_task("query"))


# ============================================================================ lazy suites

def _jsonl_suite_from_yaml(folder: Path, out: Path) -> Path:
    suite = load_suite(folder)
    out.write_text("".join(c.model_dump_json(exclude_defaults=True) + "\n" for c in suite.cases))
    return out


def test_cases_jsonl_suite_is_lazy_and_scores_like_the_yaml_suite(tmp_path):
    jsonl = _jsonl_suite_from_yaml(SDMX / "suite", tmp_path / "suite.jsonl")
    suite = load_suite(jsonl)
    assert suite.lazy and len(suite) == len(load_suite(SDMX / "suite").cases)
    assert [c.id for c in suite.iter_cases()] == [c.id for c in suite.iter_cases()]
    assert main(["run", str(SDMX / "suite"), "--responses", str(SDMX / "responses.jsonl"),
                 "--out", str(tmp_path / "a"), "-q", "--no-report"]) == 0
    assert main(["run", str(jsonl), "--responses", str(SDMX / "responses.jsonl"),
                 "--out", str(tmp_path / "b"), "-q", "--no-report"]) == 0
    a, b = (json.loads(next((tmp_path / x).rglob("metrics_*.json")).read_text()) for x in "ab")
    assert a["overall_metrics"] == b["overall_metrics"] and a["group_metrics"] == b["group_metrics"]
    assert b["overall_metrics"]["macro_precision"] == pytest.approx(0.8333, abs=1e-4)


def test_cases_jsonl_errors_name_line_and_field(tmp_path, capsys):
    path = tmp_path / "s.jsonl"
    case = {"id": "c1", "conversation": [{"role": "user", "content": "hi", "target": {"indicator_selection": []}}]}
    bad = {**case, "id": "c2", "conversation": [{"role": "robot", "content": "x"}]}
    _write_lines(path, [case, bad])
    assert main(["validate", str(path)]) == 2
    assert "s.jsonl:2: conversation[0].role:" in capsys.readouterr().err
    _write_lines(path, [case, {**case, "name": "again"}])
    with pytest.raises(InputError, match=r"s.jsonl:2: id: duplicate case id 'c1' \(first defined at .*s.jsonl:1\)"):
        load_suite(path)
    _write_lines(path, [{"id": "q1", "question": "DABench?"}])
    with pytest.raises(InputError, match="needs its labels"):
        load_suite(path)


def test_questions_csv_duplicates_name_both_lines(tmp_path):
    path = tmp_path / "q.csv"
    row = ["What?", "x", "d.pdf", "ds", "c1", "0" * 32]
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question", "answer", "document_name", "dataset", "chunk_id", "content_hash"])
        w.writerows([row, [*row[:1], "y", *row[2:]], row])
    with pytest.raises(InputError, match=r"q.csv:4: question: duplicate qa_pair_id .* as line 2\)"):
        load_suite(path)


# ============================================================================ runs

def test_a_resumed_out_of_order_log_is_finished_in_suite_order(tmp_path):
    out = tmp_path / "runs"
    assert main(["run", str(SDMX / "suite"), "--responses", str(SDMX / "responses.jsonl"),
                 "--out", str(out), "-q", "--no-report"]) == 0
    (batch,) = out.rglob("batch_*.json")
    log = RunLog.open(batch)
    before = log.paths.results_csv.read_text()
    lines = log.paths.results_jsonl.read_text().splitlines(keepends=True)
    random.Random(1).shuffle(lines)
    log.paths.results_jsonl.write_text("".join(lines[:5] + lines))  # shuffled, 5 cases twice
    assert main(["run", "--resume", str(batch), "-q", "--no-report"]) == 0
    assert log.paths.results_csv.read_text() == before


def test_reports_are_left_to_the_report_command_above_the_limit(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(run_reports, "REPORT_CASE_LIMIT", 5)
    out = tmp_path / "runs"
    assert main(["run", str(SDMX / "suite"), "--responses", str(SDMX / "responses.jsonl"),
                 "--out", str(out)]) == 0
    assert "no xlsx/HTML report written (more than 5)" in " ".join(capsys.readouterr().err.split())
    assert not list(out.rglob("report_*")) and list(out.rglob("metrics_*.json"))
    (batch,) = out.rglob("batch_*.json")
    assert main(["report", str(batch)]) == 0
    assert list(out.rglob("report_*.xlsx"))


PEAK = """
import resource, sys
from queryeval.cli.app import main
code = main(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.slow
def test_peak_memory_per_case_is_small(tmp_path):
    """4,000 and 40,000 recorded retrieval answers: the peak RSS grows by well under 1.5 KB per
    case (about 0.3 KB: numpy arrays of offsets, keys and per-case scores); before streaming
    every case held its Case, its parsed output and its record, over 12 KB each."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from stream import write_retrieval
    finally:
        sys.path.pop(0)
    peaks = []
    for n in (4_000, 40_000):
        args = write_retrieval(tmp_path, n)
        proc = subprocess.run([sys.executable, "-c", PEAK, "run", *args, "--out", str(tmp_path / f"o{n}"),
                               "--no-report", "-q"], capture_output=True, text=True, check=False, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        peaks.append(int(proc.stderr.strip().splitlines()[-1]) * 1024)
        for batch in (tmp_path / f"o{n}").rglob("batch_*.json"):
            k = json.loads(batch.read_text())["evaluation_config"]["k_value"]
            metrics = json.loads(batch.with_name(batch.name.replace("batch_", "metrics_")).read_text())
            assert metrics["overall_metrics"]["total_questions"] == n
            # every other question has its chunk at rank 1, 2 or 3 (uniformly)
            assert metrics["overall_metrics"]["recall_at_k"] == pytest.approx(0.5 if k == 3 else 0.5 / 3, abs=0.02)
    per_case = (peaks[1] - peaks[0]) / 36_000
    assert per_case < 1500, f"{per_case:.0f} bytes of peak RSS per case"


# ============================================================================ exact means

FINITE = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(FINITE | st.integers(-5, 5) | st.booleans(), min_size=1, max_size=30), st.randoms())
def test_exact_mean_is_the_correctly_rounded_mean_in_any_order(values, rnd):
    from fractions import Fraction

    from queryeval.metrics.mean import ExactMean

    exact = sum(map(Fraction, values)) / len(values)
    shuffled = list(values)
    rnd.shuffle(shuffled)
    for order in (values, shuffled):
        m = ExactMean()
        for v in order:
            m.add(v)
        assert m.mean() == float(exact) and len(m) == len(values)
    total = sum(map(Fraction, values))
    try:
        expected_sum = float(total)
    except OverflowError:
        expected_sum = float("inf") if total > 0 else float("-inf")
    assert m.sum() == expected_sum


def test_exact_mean_zero_division_and_non_finite_values():
    from queryeval.metrics.mean import ExactMean

    m = ExactMean()
    assert m.mean() is None and m.sum() == 0.0  # no values: no mean
    m.add(1e308)
    m.add(1e308)
    assert m.mean() == 1e308 and m.sum() == float("inf")  # np.mean would overflow to inf here
    m.add(float("inf"))
    assert m.mean() == float("inf")
    m.add(float("-inf"))
    assert m.mean() != m.mean()  # inf + -inf: NaN, as IEEE


def test_rescore_streams_in_suite_order_and_equals_the_derived_batch(tmp_path):
    """Re-scoring a retrieval run at k=1 reads the source from disk in its CSV (suite) order and
    gives the same metrics and CSV as the run's own derived k=1 batch."""
    from queryeval.report.rescore import rescore_run

    ex = REPO / "examples" / "retrieval"
    out = tmp_path / "runs"
    assert main(["run", str(ex / "questions.csv"), "--corpus", str(ex / "corpus.jsonl"), "--k", "1,3",
                 "--out", str(out), "-q", "--no-report"]) == 0
    batches = {json.loads(b.read_text())["evaluation_config"]["k_value"]: RunLog.open(b)
               for b in out.rglob("batch_*.json")}
    result = rescore_run(batches[3].paths.batch, {"k": [1]}, out=tmp_path / "re", reports=False)
    derived = batches[1]
    strip = {"timestamp", "batch_id"}
    got = {k: v for k, v in json.loads(result.log.paths.metrics.read_text()).items() if k not in strip}
    want = {k: v for k, v in json.loads(derived.paths.metrics.read_text()).items() if k not in strip}
    assert got == want and got["overall_metrics"]["total_questions"] == 67
    assert result.log.paths.results_csv.read_text() == derived.paths.results_csv.read_text()
    assert [r["qa_pair_id"] for r in result.records] == [r["qa_pair_id"] for r in derived.scan_records()]
