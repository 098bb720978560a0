"""Fuzz every reader of user input (issue 9): hypothesis-generated and mutated files.

The oracle is the same for every reader: it returns normally, or it raises
:class:`~queryeval.errors.InputError` (``ConfigError`` where the module documents it) whose
one-line text names the file. Anything else (``KeyError``, ``TypeError``, ``RecursionError``,
``OverflowError``...) is a crash and fails the test with the input that caused it.

Two generators per reader:

* *structured*: valid-ish records built from the seed file's own records, with fields
  dropped, duplicated or replaced by random JSON (``st.recursive``), huge numbers, NaN and
  Infinity, odd text; serialised with random line endings and an optional BOM;
* *mutated*: the valid seed file with 1-4 byte-level edits (truncate, bit flip, insert BOM /
  CRLF / NUL / invalid UTF-8 / deep nesting / huge numbers / long lines, delete spans,
  duplicate or swap lines).

The registry :data:`READERS` is shared with ``bench/fuzz.py`` (many more examples per reader,
with a per-reader table of inputs tried, accepted, rejected and crashes).
"""

from __future__ import annotations

import io
import json
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from helpers.fuzz_readers import (  # noqa: E402,F401
    CORPUS_PARQUET,
    FUZZ,
    READERS,
    RECORDED,
    Reader,
    _buildingqa,
    _corpus,
    _dabench,
    _fields_data,
    _fields_eval,
    _questions_csv,
    _recorded,
    _runlog_batch,
    _runlog_results,
    _trec,
    check,
    mutated,
)
from queryeval.errors import InputError

# ============================================================================ seed files


# ============================================================================ reader calls


# ============================================================================ strategies


# --- mutations of a valid seed file


# ============================================================================ registry


# ============================================================================ the tests


@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
def test_seed_file_is_accepted(reader: Reader, tmp_path: Path) -> None:
    """Each seed is valid: the mutations start from a file the reader accepts."""
    assert check(reader, reader.seed, tmp_path) == "accepted"


@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
def test_structured_inputs(reader: Reader) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)

        @FUZZ
        @given(data=reader.structured)
        def run(data: bytes) -> None:
            check(reader, data, folder)

        run()


@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
def test_mutated_inputs(reader: Reader) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)

        @FUZZ
        @given(data=mutated(reader.seed))
        def run(data: bytes) -> None:
            check(reader, data, folder)

        run()


@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
def test_empty_and_blank_files(reader: Reader, tmp_path: Path) -> None:
    for data in (b"", b"\n", b"\xef\xbb\xbf", b"\r\n\r\n", b"\x00", b"   \t\n"):
        assert check(reader, data, tmp_path) in ("accepted", "rejected", "skipped")


# ============================================================================ hostile YAML


def _yaml_error(tmp_path: Path, text: str | bytes) -> InputError:
    from queryeval.suite import load_suite

    path = tmp_path / "suite.yaml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    with pytest.raises(InputError) as info:
        load_suite(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    return info.value


def test_yaml_alias_bomb_is_refused(tmp_path: Path) -> None:
    """'Billion laughs': 9 levels of 9 aliases stand for 9**9 (387 million) strings. The
    walker counts nodes reached again through aliases and stops at 100,000 (under a second,
    a few MB) instead of expanding them."""
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        text += f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]\n"
    err = _yaml_error(tmp_path, text)
    assert "alias bomb" in err.message and err.line is not None


def test_yaml_merge_key_bomb_is_refused(tmp_path: Path) -> None:
    """Merge keys (<<) nested inline: PyYAML's flatten would build 2 * 10**8 pairs first."""
    level = "&a0 {x: 1, y: 2}"
    for i in range(1, 9):
        level = f"&a{i} {{<<: [{level}, " + ", ".join([f"*a{i - 1}"] * 9) + "]}"
    err = _yaml_error(tmp_path, "top: " + level + "\n")
    assert "merge bomb" in err.message and err.field == "top"


def test_yaml_alias_reuse_within_limits_still_loads(tmp_path: Path) -> None:
    """A shared target referenced by 300 cases is ordinary reuse, not a bomb."""
    from queryeval.suite import load_suite

    shared = ("x-shared: &sel\n  indicator_selection:\n  - dataset_id: D\n    dimensions:\n"
              "    - dimension_name: C\n      values: [{id: MEX, name: Mexico}]\n")
    cases = "".join(f"- id: c{i}\n  conversation:\n  - role: user\n    content: q{i}\n"
                    f"    target: *sel\n" for i in range(300))
    path = tmp_path / "suite.yaml"
    path.write_text("---\n" + shared.replace("x-shared: &sel\n", "- &sel\n")[:0]
                    + "- id: c-first\n  conversation:\n  - role: user\n    content: q\n    target: &sel\n"
                    "      indicator_selection:\n      - dataset_id: D\n        dimensions:\n"
                    "        - dimension_name: C\n          values: [{id: MEX, name: Mexico}]\n"
                    + cases)
    suite = load_suite(path)
    assert len(suite) == 301
    assert suite.cases[-1].conversation[0].target.indicator_selection[0].dataset_id == "D"
    merged = tmp_path / "merge.yaml"
    merged.write_text("id: m\nconversation:\n- &base {role: user, content: a}\n- {<<: *base, content: b}\n")
    assert load_suite(merged).cases[0].conversation[1].content == "b"


@pytest.mark.parametrize(("text", "expected"), [
    (b"\x00", "unacceptable character #x0000"),                       # was a 2-line message
    ("id: " + "9" * 5000 + "\n", "cannot read value int"),            # was ValueError
    ("? {a: 1}\n: 2\n", "a mapping key must be a scalar"),            # was TypeError
    ("? [[1]]\n: 2\n", "a mapping key must be a scalar"),             # was TypeError
    ("id: 2001-13-45\n", "cannot read value timestamp"),              # was ValueError
    ("id: !!timestamp 'x'\n", "cannot read value timestamp"),         # was AttributeError
    ("[" * 500 + "]" * 500, "nesting too deep"),  # ours; deeper, PyYAML >= 6.0.4 stops first
    ("[" * 5000 + "]" * 5000, "invalid YAML: "),     # whoever stops it: one line, the file
    ('id: x\nconversation: [{role: user, content: q, "a\\nb": 1}]\n', "unknown field"),
])
def test_yaml_regressions(tmp_path: Path, text: str | bytes, expected: str) -> None:
    assert expected in _yaml_error(tmp_path, text).message


# ============================================================================ regressions found by fuzzing


def _raises_input_error(read: Callable[[Path], Any], path: Path, data: bytes) -> InputError:
    path.write_bytes(data)
    with pytest.raises(InputError) as info:
        read(path)
    text = str(info.value)
    assert "\n" not in text and path.name in text, text
    return info.value


def test_huge_json_integer_is_an_input_error(tmp_path: Path) -> None:
    """json.loads raises a plain ValueError (not JSONDecodeError) past 4,300 digits."""
    huge = b"9" * 5000
    err = _raises_input_error(_dabench("read_responses"), tmp_path / "r.jsonl",
                              b'{"id": ' + huge + b', "response": "x"}\n')
    assert err.line == 1 and "more than 4300 digits" in err.message
    err = _raises_input_error(_corpus, tmp_path / "c.jsonl", b'{"chunk_id": ' + huge + b"}\n")
    assert err.line == 1 and "digits" in err.message
    err = _raises_input_error(_buildingqa, tmp_path / "qa.json", b"[" + huge + b"]")
    assert "digits" in err.message
    assert "deep" in _raises_input_error(_dabench("read_labels"), tmp_path / "l.jsonl",
                                         b"[" * 100_000).message


def test_lone_surrogate_escape_is_an_input_error(tmp_path: Path) -> None:
    """'\\ud800' is valid JSON but no text: md5(content.encode()) used to raise."""
    err = _raises_input_error(_corpus, tmp_path / "c.jsonl",
                              b'{"chunk_id": "c2", "content": "chunk \\ud800two"}\n')
    assert err.line == 1 and "surrogate" in err.message
    ok = tmp_path / "ok.jsonl"  # a correctly paired escape (an emoji) is fine
    ok.write_bytes(b'{"chunk_id": "c2", "content": "chunk \\ud83d\\ude00"}\n')
    assert _corpus(ok)[0].content == "chunk \U0001F600"
    err = _raises_input_error(_dabench("read_responses"), tmp_path / "r.jsonl",
                              b'{"id": 1, "response": "\\udfff"}\n')
    assert "surrogate" in err.message


def test_trec_empty_qrels_is_an_input_error(tmp_path: Path) -> None:
    """evaluate_files used to raise ValueError('no query to evaluate') naming no file."""
    err = _raises_input_error(_trec("qrels"), tmp_path / "empty.qrels", b"")
    assert "no query to evaluate" in err.message


def test_parquet_errors_are_input_errors(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    # empty file: pq.read_table raised ArrowInvalid from load_data_table
    _raises_input_error(_fields_data, tmp_path / "data.parquet", b"")
    # invalid UTF-8 inside a string column: to_pylist raised UnicodeDecodeError
    sink = io.BytesIO()
    pq.write_table(pa.table({"item": ["Carrots", "Lemons"]}), sink)
    bad = sink.getvalue().replace(b"Carrots", b"\xc3arrots")
    assert "invalid Parquet" in _raises_input_error(_fields_data, tmp_path / "d.parquet", bad).message
    sink = io.BytesIO()
    pq.write_table(pa.table({"chunk_id": ["c1"], "content": ["Carrots"]}), sink)
    bad = sink.getvalue().replace(b"Carrots", b"\xc3arrots")
    _raises_input_error(_corpus, tmp_path / "corpus.parquet", bad)
    # pyarrow's message spans lines: the error must stay on one
    _raises_input_error(_corpus, tmp_path / "c.parquet", b"\xef\xbb\xbf" + CORPUS_PARQUET)


def test_fields_csv_errors_are_input_errors(tmp_path: Path) -> None:
    """load_data_table / load_evaluation_table let UnicodeDecodeError and csv.Error out."""
    err = _raises_input_error(_fields_data, tmp_path / "data.csv", b"item\nCarrots\n\xff\n")
    assert err.line == 3 or "UTF-8" in err.message
    err = _raises_input_error(_fields_eval, tmp_path / "eval.csv",
                              b"Question,item\n" + b"x" * 200_000 + b",y\n")
    assert "invalid CSV" in err.message
    err = _raises_input_error(_fields_eval, tmp_path / "eval2.csv", b'"a\nb",x\n')
    assert "\\n" in err.message  # the header cell's newline is escaped, not printed


def test_questions_csv_header_with_newline_stays_one_line(tmp_path: Path) -> None:
    err = _raises_input_error(_questions_csv, tmp_path / "q.csv",
                              b'"What is one, r\nquestion,answer,document_name,dataset,chunk_id,content_hash')
    assert err.line == 1 and "missing column" in err.message


def test_run_log_corruption_is_an_input_error(tmp_path: Path) -> None:
    """read_records indexed rec['case_id'] on any JSON value; open() indexed batch['batch_id']
    and called .get on whatever the batch file held."""
    err = _raises_input_error(_runlog_results, tmp_path / "results_fz.jsonl", b"\xef\xbb\xbfnull\nnull\n")
    assert err.line == 1
    err = _raises_input_error(_runlog_results, tmp_path / "results_fz.jsonl", b'{"status": "ok"}\n')
    assert "case_id" in err.message
    _raises_input_error(_runlog_results, tmp_path / "results_fz.jsonl", b'{"case_id": ' + b"9" * 5000 + b"}\n")
    _raises_input_error(_runlog_batch, tmp_path / "batch_fz.json", b"null")
    err = _raises_input_error(_runlog_batch, tmp_path / "batch_fz.json",
                              b'{"log_schema": "queryeval.runlog/1"}')
    assert err.field == "batch_id"
    err = _raises_input_error(_runlog_batch, tmp_path / "batch_fz.json",
                              b'{"log_schema": "queryeval.runlog/1", "batch_id": "../x"}')
    assert err.field == "batch_id"


@pytest.mark.parametrize("task", ["retrieval", "answers", "query", "indicator_selection", "fields"])
def test_recorded_turn_must_be_an_integer(tmp_path: Path, task: str) -> None:
    """A list or object as ``turn`` became an unhashable dict key (TypeError)."""
    line = json.loads(RECORDED[task].splitlines()[0])
    line.pop("turn", None)
    for bad in ([], {"a": 1}, 1.5, True, "x"):
        data = json.dumps({**line, "turn": bad}).encode() + b"\n"
        err = _raises_input_error(_recorded(task), tmp_path / "responses.jsonl", data)
        assert err.line == 1, err


def test_recorded_csv_turn_is_read_as_an_integer(tmp_path: Path) -> None:
    from queryeval.systems.recorded import RecordedSystem
    from queryeval.tasks.base import get_task

    path = tmp_path / "p.csv"
    path.write_bytes(b"case_id,turn,query\nc1,2,SELECT 1\nc2,,ASK {}\n")
    system = RecordedSystem.load(path, get_task("query"))
    assert set(system.entries) == {("c1", 2), ("c2", None)}


def test_recorded_key_with_newline_stays_one_line(tmp_path: Path) -> None:
    data = b'{"case_id": "c1", "indicator_selection": [], "\\n": 1}\n'
    err = _raises_input_error(_recorded("indicator_selection"), tmp_path / "responses.jsonl", data)
    assert err.field == "\\n" and "extra inputs" in err.message


# ============================================================================ through the CLI

CLI_SUITE = b"""\
- id: case-2
  conversation:
  - role: user
    content: Mean fare?
    target:
      answers: {mean_fare: '34.65'}
- id: case-3
  conversation:
  - role: user
    content: Max age?
    target:
      answers: [{name: max_age, value: '80'}]
"""
CLI_RESPONSES = (b'{"case_id": "case-2", "response": "@mean_fare[34.65]"}\n'
                 b'{"case_id": "case-3", "response": "@max_age[79]"}\n')


def _assert_cli_outcome(rc: int, err: str) -> None:
    assert rc in (0, 2), (rc, err)
    assert "Traceback" not in err, err
    if rc == 2:
        lines = [x for x in err.splitlines() if x.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), err


def test_cli_validate_and_run_on_mutated_inputs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """~20 mutated suites and 20 mutated responses files: exit 0 or 2, one line, no traceback."""
    from queryeval.cli.app import main

    suite, responses = tmp_path / "suite.yaml", tmp_path / "responses.jsonl"
    outcomes: Counter = Counter()

    @settings(max_examples=20, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(fuzz_suite=mutated(CLI_SUITE), fuzz_responses=mutated(CLI_RESPONSES))
    def run(fuzz_suite: bytes, fuzz_responses: bytes) -> None:
        suite.write_bytes(fuzz_suite)
        responses.write_bytes(CLI_RESPONSES)
        capsys.readouterr()
        rc = main(["validate", str(suite)])
        _assert_cli_outcome(rc, capsys.readouterr().err)
        outcomes[f"validate:{rc}"] += 1
        suite.write_bytes(CLI_SUITE)
        responses.write_bytes(fuzz_responses)
        rc = main(["run", str(suite), "--responses", str(responses), "--out", str(tmp_path / "runs")])
        _assert_cli_outcome(rc, capsys.readouterr().err)
        outcomes[f"run:{rc}"] += 1

    run()
    # both paths seen: the mutations are not all fatal, nor all harmless
    assert outcomes["validate:2"] and outcomes["run:2"], outcomes
    assert outcomes["validate:0"] + outcomes["run:0"], outcomes


def test_cli_error_names_file_line_and_field(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from queryeval.cli.app import main

    path = tmp_path / "suite.yaml"
    path.write_bytes(CLI_SUITE.replace(b"content: Max age?", b"content: Max age?\n    colour: red"))
    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err.strip() == f"error: {path}:11: [1].conversation[0].colour: unknown field"


def test_trec_relevance_beyond_int64_is_an_input_error(tmp_path: Path) -> None:
    """Minimal input hypothesis found: the exact path's np.asarray(dtype=int64) overflowed."""
    err = _raises_input_error(_trec("qrels"), tmp_path / "t.qrels", b"q1 0 d1 999999999999999999999999999999\n")
    assert err.line == 1 and "out of range" in err.message
    path = tmp_path / "ok.qrels"
    path.write_bytes(b"q1 0 d1 9223372036854775807\n")
    from queryeval.suite.trec import read_qrels

    assert read_qrels(path) == {"q1": {"d1": 2**63 - 1}}


@pytest.mark.parametrize("data", [
    {"head": {"vars": 0}, "results": {"x": {"x": 0}}},  # minimal inputs hypothesis found
    {"head": {"vars": True, "": False}, "results": None},
    {"columns": ["a"], "rows": 5},
    {"columns": 7, "rows": []},
    {"columns": ["a"], "rows": [1]},
])
def test_as_table_shape_errors_are_input_errors(data: Any) -> None:
    """``[str(v) for v in head_vars]`` iterated an int/bool (TypeError)."""
    from queryeval.metrics.tables import as_table

    for rules in ("clean", "buildingqa"):
        with pytest.raises(InputError):
            as_table(data, rules=rules)


def test_as_table_deeply_nested_value_cell() -> None:
    """cell_to_str followed {"value": {"value": ...}} recursively: 5,000 levels overflowed."""
    from queryeval.metrics.tables import as_table

    cell: Any = "x"
    for _ in range(5000):
        cell = {"value": cell}
    table = as_table({"head": {"vars": ["a"]}, "results": {"bindings": [{"a": cell}]}})
    assert table.rows == [("x",)]
