"""What the tests of fuzz readers share with other test files: ``BY_NAME``, ``Crash``, ``FUZZ``, ``READERS``, ``Reader``, ``check``, ``csv_table``, ``json_document``, ``jsonl_records``, ``mutated`` (moved here from test_fuzz_readers.py)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from queryeval.errors import ConfigError, InputError

SUITE_YAML = b"""\
# a two-case suite
---
id: case-1
name: cpi mexico
tags: [imf, cpi]
conversation:
- role: user
  content: How have food prices changed in Mexico?
  target:
    indicator_selection:
    - dataset_id: IMF.STA:CPI
      dimensions:
      - dimension_name: COUNTRY
        values:
        - id: MEX
          name: Mexico
---
- id: case-2
  conversation:
  - role: user
    content: Mean fare?
    target:
      answers: {mean_fare: '34.65'}
"""


DABENCH_QUESTIONS = (
    b'{"id": 0, "question": "Mean fare?", "concepts": ["Summary Statistics"], '
    b'"constraints": "Use pandas.", "format": "@mean_fare[value]", "file_name": "t.csv", '
    b'"level": "easy"}\n'
    b'{"id": 5, "question": "Max age?", "concepts": ["Stats"], "constraints": "", '
    b'"format": "@max_age[value]", "file_name": "t.csv", "level": "hard"}\n'
)


DABENCH_LABELS = (
    b'{"id": 0, "common_answers": [["mean_fare", "34.65"]]}\n'
    b'{"id": 5, "common_answers": [["max_age", "80"], ["max_age", "81"]]}\n'
)


DABENCH_RESPONSES = b'{"id": 0, "response": "@mean_fare[34.65]"}\n{"id": 5, "response": null}\n'


_H1 = hashlib.md5(b"chunk one").hexdigest()  # noqa: S324 - the format's content hash


_H2 = hashlib.md5(b"chunk two").hexdigest()  # noqa: S324


QUESTIONS_CSV = (
    "question,answer,document_name,dataset,chunk_id,content_hash\n"
    f'"What is one, really?",one,doc.pdf,ds,c1,{_H1}\n'
    f"What is two?,two,doc.pdf,ds,c2,{_H2}\n"
).encode()


CORPUS_JSONL = (
    b'{"chunk_id": "c1", "content": "chunk one", "document_name": "doc.pdf", "dataset": "ds"}\n'
    b'{"chunk_id": "c2", "content": "chunk two", "document_name": "doc.pdf", "dataset": "ds", '
    b'"page": 2}\n'
)


CORPUS_CSV = b'chunk_id,content,document_name,dataset\nc1,chunk one,doc.pdf,ds\nc2,"chunk, two",doc.pdf,ds\n'


QRELS = b"q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n"


RUN = b"q1 Q0 d1 1 0.9 tag\nq1 Q0 d2 2 0.5 tag\nq2 Q0 d3 1 1.5 tag\nq2 Q0 d9 2 0.1 tag\n"


BUILDINGQA_JSON = json.dumps([{
    "building_id": "b1.ttl",
    "queries": [{"query_id": "q1", "sparql_query": "SELECT ?x WHERE { ?x a ?t }",
                 "description": "all typed things",
                 "questions": [{"question_number": 1, "text": "What is there?", "source": "human"},
                               {"question_number": 2, "text": "List everything", "source": "llm"}]}],
}], indent=1).encode()


FIELDS_DATA_CSV = (b"item,category,item__description\nCarrots,Vegetable,orange root\n"
                   b"Lemons,Fruit,\nCarrots,Vegetable,\n")


FIELDS_EVAL_CSV = (b"Question,item,category\nWhat cheap vegetables?,Carrots;Onions,Vegetable\n"
                   b'"Citrus, please",Lemons,Fruit\n')


RECORDED = {
    "indicator_selection": (
        b'{"case_id": "c1", "turn": 0, "indicator_selection": [{"dataset_id": "D", "dimensions": '
        b'[{"dimension_name": "COUNTRY", "values": [{"id": "MEX", "name": "Mexico"}]}]}]}\n'
        b'{"case_id": "c2", "indicator_selection": []}\n'),
    "answers": b'{"id": 0, "response": "@mean_fare[34.65]"}\n{"case_id": "7", "response": null}\n',
    "retrieval": (
        b'{"qa_pair_id": "q1", "retrieved_chunks": [{"chunk_id": "c1", "score": 0.5, '
        b'"content": "chunk one"}, {"chunk_id": "c2", "score": 0.1, "content_hash": "' + _H2.encode()
        + b'"}]}\n{"case_id": "q2", "turn": 0, "retrieved_chunks": []}\n'),
    "query": (b'{"case_id": "c1", "query": "SELECT ?x WHERE { ?x a ?t }"}\n'
              b'{"query_id": "q1", "question_number": 2, "building": "b1.ttl", '
              b'"generated_sparql": "SELECT * {}"}\n'),
    "fields": (b'{"case_id": "q1", "fields": {"item": ["Carrots", "Onions"], "category": null}}\n'
               b'{"case_id": "q2", "turn": 0, "fields": {"item": [3.0, "Lemons"]}}\n'),
}


RECORDED_QUERY_CSV = b'case_id,query\nc1,"SELECT ?x WHERE { ?x a ?t }"\nc2,ASK {}\n'


SPARQL_JSON = (b'{"head": {"vars": ["s", "n"]}, "results": {"bindings": ['
               b'{"s": {"type": "uri", "value": "http://x/a"}, "n": {"type": "literal", '
               b'"value": "1", "datatype": "http://www.w3.org/2001/XMLSchema#integer"}},'
               b'{"s": {"type": "bnode", "value": "b0"}}]}}')


RUNLOG_BATCH = json.dumps({"log_schema": "queryeval.runlog/1", "batch_id": "fz",
                           "status": "running", "task": "answers"}).encode()


RUNLOG_RESULTS = (b'{"case_id": "a", "status": "ok", "scores": {"accuracy": 1.0}}\n'
                  b'{"case_id": 2, "status": "error", "error_kinds": ["timeout"]}\n'
                  b'{"case_id": "a", "status": "ok", "scores": {"accuracy": 0.0}}\n')


def _parquet_bytes(records: list[dict]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    try:
        pq.write_table(pa.Table.from_pylist(records), sink)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        # mixed or unwritable types in a column: text columns (still random content)
        keys = list(dict.fromkeys(k for r in records for k in r))
        sink = io.BytesIO()
        pq.write_table(pa.table({k: [None if r.get(k) is None else str(r.get(k)) for r in records]
                                 for k in keys}), sink)
    return sink.getvalue()


def _xlsx_bytes(rows: list[list[Any]]) -> bytes:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    for row in rows:
        ws.append([_xlsx_cell(v) for v in row])
    sink = io.BytesIO()
    wb.save(sink)
    return sink.getvalue()


def _xlsx_cell(v: Any) -> Any:
    if v is None or isinstance(v, (bool, str)):
        return v if not isinstance(v, str) else "".join(ch for ch in v if ch >= " " or ch in "\t\n")
    if isinstance(v, int):
        return v if abs(v) < 2**53 else str(v)
    if isinstance(v, float):
        return v if v == v and abs(v) != float("inf") else str(v)
    return json.dumps(v, default=str)


_CORPUS_RECORDS = [json.loads(line) for line in CORPUS_JSONL.splitlines()]


CORPUS_PARQUET = _parquet_bytes(_CORPUS_RECORDS)


_FIELDS_DATA_ROWS = list(csv.reader(io.StringIO(FIELDS_DATA_CSV.decode())))


FIELDS_DATA_PARQUET = _parquet_bytes([dict(zip(_FIELDS_DATA_ROWS[0], r, strict=True))
                                      for r in _FIELDS_DATA_ROWS[1:]])


_FIELDS_EVAL_ROWS = list(csv.reader(io.StringIO(FIELDS_EVAL_CSV.decode())))


FIELDS_EVAL_XLSX = _xlsx_bytes(_FIELDS_EVAL_ROWS)


SUITE_JSONL = (
    b'{"id": "case-1", "name": "cpi mexico", "tags": ["imf", "cpi"], "conversation": [{"role": "user", '
    b'"content": "How have food prices changed in Mexico?", "target": {"indicator_selection": [{"dataset_id": '
    b'"IMF.STA:CPI", "dimensions": [{"dimension_name": "COUNTRY", "values": [{"id": "MEX", "name": "Mexico"}]}]}]}}]}\n'
    b'{"id": "case-2", "conversation": [{"role": "user", "content": "Mean fare?", '
    b'"target": {"answers": {"mean_fare": "34.65"}}}]}\n'
)


def _load_suite(path: Path) -> Any:
    from queryeval.suite import load_suite

    return load_suite(path)


def _dabench(fn: str) -> Callable[[Path], Any]:
    def read(path: Path) -> Any:
        from queryeval.suite import dabench

        return getattr(dabench, fn)(path)

    return read


def _dabench_suite(fixed_name: str, fixed: bytes) -> Callable[[Path], Any]:
    """``load_suite(questions, labels=...)`` with one of the two files fuzzed."""

    def read(path: Path) -> Any:
        from queryeval.suite import load_suite

        other = path.parent / fixed_name
        other.write_bytes(fixed)
        if fixed_name.startswith("labels"):
            return load_suite(path, labels=other)
        return load_suite(other, labels=path)

    return read


def _suite_jsonl(path: Path) -> Any:
    """Load a line-based suite (JSONL, CSV) and read it again, as a run's passes do."""
    from queryeval.suite import load_suite

    suite = load_suite(path)
    return [c.id for c in suite.iter_cases()]


def _questions_csv(path: Path) -> Any:
    from queryeval.suite.retrieval import read_questions_csv

    return read_questions_csv(path)


def _corpus(path: Path) -> Any:
    from queryeval.suite.retrieval import read_corpus

    return read_corpus(path)


def _trec(kind: str) -> Callable[[Path], Any]:
    """Read a fuzzed qrels (``kind="qrels"``) or run file, then evaluate it against the
    fixed other one."""

    def read(path: Path) -> Any:
        from queryeval.suite import trec

        getattr(trec, f"read_{kind}_columns")(path)
        value = getattr(trec, f"read_{kind}")(path)
        other = path.parent / ("fixed.run" if kind == "qrels" else "fixed.qrels")
        other.write_bytes(RUN if kind == "qrels" else QRELS)
        qrels, run = (path, other) if kind == "qrels" else (other, path)
        try:
            trec.evaluate_files(qrels, run, ["map", "ndcg_cut.10", "recip_rank", "P.5"], per_query=True)
        finally:
            other.unlink()
        return value

    return read


def _buildingqa(path: Path) -> Any:
    from queryeval.suite.buildingqa import read_buildingqa

    return read_buildingqa(path)


def _fields_data(path: Path) -> Any:
    from queryeval.suite.fields import load_data_table

    table = load_data_table(path)
    for f in table.fields.values():
        f.documents  # noqa: B018 - exercise the property
    return table


def _fields_eval(path: Path) -> Any:
    from queryeval.suite.fields import load_evaluation_table, load_fields_suite

    load_evaluation_table(path)
    return load_fields_suite(path)


def _recorded(task_name: str) -> Callable[[Path], Any]:
    def read(path: Path) -> Any:
        from queryeval.systems.recorded import RecordedSystem
        from queryeval.tasks.base import get_task

        system = RecordedSystem.load(path, get_task(task_name))
        system.bind({"c1": [0], "q1": [0], "0": [0], "c2": [0], "7": [0], "q2": [0]})
        return system

    return read


class NotJson(Exception):
    """The mutated bytes are no longer JSON: not an input ``as_table`` ever receives."""


def _sparql_json(path: Path) -> Any:
    from queryeval.metrics.tables import as_table

    try:
        data = json.loads(path.read_bytes())
    except (ValueError, RecursionError):
        raise NotJson from None
    as_table(data, rules="buildingqa")
    return as_table(data)


def _runlog_results(path: Path) -> Any:
    from queryeval.run.log import RunLog

    batch = path.parent / "batch_fz.json"
    batch.write_bytes(RUNLOG_BATCH)
    log = RunLog.open(batch)
    log.read_records()
    return log.read_records(repair=True)


def _runlog_batch(path: Path) -> Any:
    from queryeval.run.log import RunLog

    (path.parent / "results_fz.jsonl").write_bytes(RUNLOG_RESULTS)
    log = RunLog.open(path)
    log.read_records()
    log2 = RunLog.open(path.parent)
    return log2.read_records()


HUGE = "HUGEINT9"  # stands for a 5,000-digit integer, substituted after serialising (_huge)


def _huge(data: bytes) -> bytes:
    """Replace the HUGE marker (quoted or not) by an integer longer than Python's 4,300-digit
    int() limit: ``json.dumps`` and ``str`` cannot write one themselves."""
    digits = b"9" * 5000
    return data.replace(b'"' + HUGE.encode() + b'"', digits).replace(HUGE.encode(), digits)


_TEXT = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ["", " ", "\t", "0", "-1", "1e999", "NaN", "null", "\x00", "\ufeff", "a\r\nb", "é", "𝔘",
     "x" * 300, "@mean_fare[1]", "../../etc/passwd", "a\x00b", "9" * 40])


_NUMBERS = (st.integers(-(2**70), 2**70) | st.floats(allow_nan=True, allow_infinity=True)
            | st.sampled_from([0, -0.0, HUGE, float("nan"), float("inf"), -float("inf")]))


JSON_SCALARS = st.none() | st.booleans() | _NUMBERS | _TEXT


JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(_TEXT, kids, max_size=4),
    max_leaves=12,
)


@st.composite
def perturbed(draw: st.DrawFn, template: Any) -> Any:
    """``template`` with random subtrees dropped, replaced or duplicated (valid-ish data)."""
    roll = draw(st.integers(0, 11))
    if roll == 0:
        return draw(JSON_VALUES)
    if isinstance(template, dict):
        out: dict = {}
        for key, value in template.items():
            r = draw(st.integers(0, 9))
            if r == 0:
                continue
            out[key] = draw(perturbed(value))
        if draw(st.integers(0, 5)) == 0:
            out[draw(_TEXT)] = draw(JSON_VALUES)
        return out
    if isinstance(template, list):
        items = [draw(perturbed(v)) for v in template]
        if items and draw(st.integers(0, 4)) == 0:
            items.append(items[0])
        if draw(st.integers(0, 6)) == 0:
            items = items[: draw(st.integers(0, len(items)))]
        return items
    if roll == 1:
        return draw(JSON_SCALARS)
    return template


def _dump_json(value: Any, dup_key: bool) -> str:
    """JSON with NaN/Infinity allowed; ``dup_key`` repeats the top level's first key."""
    text = json.dumps(value, allow_nan=True, default=str)
    if dup_key and isinstance(value, dict) and value:
        key, val = next(iter(value.items()))
        text = text[:-1] + (", " if len(value) else "") + json.dumps(key) + ": " + json.dumps(
            val, allow_nan=True, default=str) + "}"
    return text


def _line_end(draw: st.DrawFn) -> str:
    return draw(st.sampled_from(["\n", "\r\n", "\r", "\n\n"]))


def _bom(draw: st.DrawFn) -> bytes:
    return b"\xef\xbb\xbf" if draw(st.integers(0, 5)) == 0 else b""


@st.composite
def jsonl_records(draw: st.DrawFn, seed: bytes) -> bytes:
    templates = [json.loads(line) for line in seed.splitlines() if line.strip()]
    n = draw(st.integers(0, 4))
    end = _line_end(draw)
    lines = []
    for _ in range(n):
        rec = draw(perturbed(draw(st.sampled_from(templates))))
        lines.append(_dump_json(rec, draw(st.integers(0, 6)) == 0))
    return _huge(_bom(draw) + end.join(lines).encode("utf-8", "surrogatepass") + (
        end.encode() if draw(st.booleans()) else b""))


@st.composite
def json_document(draw: st.DrawFn, seed: bytes) -> bytes:
    rec = draw(perturbed(json.loads(seed)))
    return _huge(_bom(draw) + _dump_json(rec, draw(st.integers(0, 6)) == 0).encode("utf-8", "surrogatepass"))


@st.composite
def yaml_document(draw: st.DrawFn, seed: bytes) -> bytes:
    docs = [d for d in yaml.safe_load_all(seed) if d is not None]
    out = []
    picked = draw(st.permutations(docs))[: draw(st.integers(1, len(docs)))]  # no repeated ids
    for doc in picked:
        data = draw(perturbed(doc))
        try:
            text = yaml.safe_dump(data, allow_unicode=draw(st.booleans()), sort_keys=False)
        except (yaml.YAMLError, ValueError, TypeError, OverflowError):
            text = json.dumps(data, default=str)  # JSON is YAML
        out.append(text)
    text = "---\n".join(out)
    if draw(st.integers(0, 4)) == 0:
        text = text.replace("\n", "\r\n")
    return _huge(_bom(draw) + text.encode("utf-8", "surrogatepass"))


def _csv_text(draw: st.DrawFn, rows: list[list[Any]]) -> bytes:
    sink = io.StringIO()
    writer = csv.writer(sink, lineterminator=_line_end(draw))
    for row in rows:
        writer.writerow(row)
    return _huge(_bom(draw) + sink.getvalue().encode("utf-8", "surrogatepass"))


def _csv_rows(draw: st.DrawFn, seed: bytes) -> list[list[Any]]:
    rows = list(csv.reader(io.StringIO(seed.decode("utf-8"))))
    header = list(rows[0])
    if draw(st.integers(0, 5)) == 0:
        header = draw(st.permutations(header))[: draw(st.integers(0, len(header)))]
    if draw(st.integers(0, 5)) == 0:
        header.append(draw(st.sampled_from([*header, "", " x ", "id"])) if header else "")
    cells = [c for r in rows[1:] for c in r]
    cell = st.sampled_from(cells) | JSON_SCALARS | st.text(max_size=8)
    body = draw(st.lists(st.lists(cell, min_size=0, max_size=len(header) + 2), max_size=5))
    return [header, *body]


@st.composite
def csv_table(draw: st.DrawFn, seed: bytes) -> bytes:
    return _csv_text(draw, _csv_rows(draw, seed))


@st.composite
def parquet_table(draw: st.DrawFn, records: list[dict]) -> bytes:
    recs = [draw(perturbed(draw(st.sampled_from(records)))) for _ in range(draw(st.integers(0, 4)))]
    recs = [r if isinstance(r, dict) else {"value": r} for r in recs]
    recs = [{str(k): v for k, v in r.items()} for r in recs]
    return _parquet_bytes(recs)


@st.composite
def xlsx_table(draw: st.DrawFn, seed: bytes) -> bytes:
    return _xlsx_bytes(_csv_rows(draw, seed))


_TREC_TOKEN = st.sampled_from(["q1", "q2", "d1", "d2", "d3", "0", "1", "Q0", "tag", "-1", "2.5",
                               "nan", "inf", "-inf", "1e999", "9" * 30, "0x10", "", "é", "\x00",
                               "1_000"]) | st.text(max_size=6)


@st.composite
def trec_lines(draw: st.DrawFn, width: int) -> bytes:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        n = width if draw(st.integers(0, 5)) else draw(st.integers(0, width + 2))
        tokens = [draw(_TREC_TOKEN) for _ in range(n)]
        lines.append(draw(st.sampled_from([" ", "\t", "  "])).join(tokens))
    return _bom(draw) + _line_end(draw).join(lines).encode("utf-8", "surrogatepass")


SPECIALS = [
    b"\xef\xbb\xbf", b"\r\n", b"\r", b"\x00", b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
    b'"', b"'", b",", b"\t", b" ", b"\n", b"{", b"}", b"[", b"]", b":", b"- ", b"&a ", b"*a",
    b"<<: ", b"!!python/object:os.system ", b"!!binary ", b"9" * 5000, b"NaN", b"Infinity",
    b"-Infinity", b"1e999", b"-0", b"[" * 3000, b'{"a":' * 3000, b"- " * 2000, b"null", b"true",
    b"\\u0000", b"\\ud800", b'"\\ud800"', b"x" * 140_000, b"\x1b[31m", "\u2028".encode(),
]


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.integers(0, 10))
        pos = draw(st.integers(0, len(data)))
        if op == 0:
            del data[pos:]
        elif op == 1 and data:
            i = min(pos, len(data) - 1)
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op in (2, 3):
            data[pos:pos] = draw(st.sampled_from(SPECIALS))
        elif op == 4:
            data[pos:pos] = draw(st.binary(min_size=1, max_size=4))
        elif op == 5:
            del data[pos:pos + draw(st.integers(1, 16))]
        elif op == 6:
            lines = bytes(data).split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i])
            data = bytearray(b"\n".join(lines))
        elif op == 7:
            lines = bytes(data).split(b"\n")
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            data = bytearray(b"\n".join(lines))
        elif op == 8:
            data = bytearray(bytes(data).replace(b"\n", b"\r\n"))
        elif op == 9:
            data[0:0] = b"\xef\xbb\xbf"
        else:
            data[pos:pos] = data[pos:pos + draw(st.integers(1, 64))]  # duplicate a span
    return bytes(data)


@dataclass(frozen=True)
class Reader:
    """One reader under test: the file it reads, how to call it, how to generate input."""

    name: str
    filename: str
    seed: bytes
    read: Callable[[Path], Any]
    structured: st.SearchStrategy[bytes]
    allowed: tuple[type[BaseException], ...] = (InputError,)
    names_file: bool = True  # the error text must name the file
    partners: tuple[str, ...] = ()  # fixed files read with it, which an error may name instead
    skip: tuple[type[BaseException], ...] = field(default=())


READERS: list[Reader] = [
    Reader("suite-yaml", "suite.yaml", SUITE_YAML, _load_suite, yaml_document(SUITE_YAML)),
    Reader("suite-jsonl", "suite.jsonl", SUITE_JSONL, _suite_jsonl, jsonl_records(SUITE_JSONL)),
    Reader("dabench-questions", "questions.jsonl", DABENCH_QUESTIONS, _dabench("read_questions"),
           jsonl_records(DABENCH_QUESTIONS)),
    Reader("dabench-labels", "labels.jsonl", DABENCH_LABELS, _dabench("read_labels"),
           jsonl_records(DABENCH_LABELS)),
    Reader("dabench-responses", "responses.jsonl", DABENCH_RESPONSES, _dabench("read_responses"),
           jsonl_records(DABENCH_RESPONSES)),
    Reader("dabench-suite-labels", "fuzzed.jsonl", DABENCH_LABELS,
           _dabench_suite("questions-fixed.jsonl", DABENCH_QUESTIONS), jsonl_records(DABENCH_LABELS),
           partners=("questions-fixed.jsonl",)),
    Reader("dabench-suite-questions", "fuzzed.jsonl", DABENCH_QUESTIONS,
           _dabench_suite("labels-fixed.jsonl", DABENCH_LABELS), jsonl_records(DABENCH_QUESTIONS),
           partners=("labels-fixed.jsonl",)),
    Reader("questions-csv", "questions.csv", QUESTIONS_CSV, _questions_csv, csv_table(QUESTIONS_CSV)),
    # load_suite on a CSV: the kind is told from the header (missing columns, near misses)
    Reader("suite-csv-retrieval", "suite.csv", QUESTIONS_CSV, _suite_jsonl, csv_table(QUESTIONS_CSV)),
    Reader("suite-csv-fields", "suite.csv", FIELDS_EVAL_CSV, _suite_jsonl, csv_table(FIELDS_EVAL_CSV)),
    Reader("corpus-jsonl", "corpus.jsonl", CORPUS_JSONL, _corpus, jsonl_records(CORPUS_JSONL)),
    Reader("corpus-csv", "corpus.csv", CORPUS_CSV, _corpus, csv_table(CORPUS_CSV)),
    Reader("corpus-parquet", "corpus.parquet", CORPUS_PARQUET, _corpus, parquet_table(_CORPUS_RECORDS)),
    Reader("trec-qrels", "test.qrels", QRELS, _trec("qrels"), trec_lines(4)),
    Reader("trec-run", "test.run", RUN, _trec("run"), trec_lines(6)),
    Reader("buildingqa-json", "qa.json", BUILDINGQA_JSON, _buildingqa, json_document(BUILDINGQA_JSON)),
    Reader("fields-data-csv", "data.csv", FIELDS_DATA_CSV, _fields_data, csv_table(FIELDS_DATA_CSV)),
    Reader("fields-data-parquet", "data.parquet", FIELDS_DATA_PARQUET, _fields_data,
           parquet_table([dict(zip(_FIELDS_DATA_ROWS[0], r, strict=True)) for r in _FIELDS_DATA_ROWS[1:]])),
    Reader("fields-eval-csv", "evaluation.csv", FIELDS_EVAL_CSV, _fields_eval, csv_table(FIELDS_EVAL_CSV)),
    Reader("fields-eval-xlsx", "evaluation.xlsx", FIELDS_EVAL_XLSX, _fields_eval, xlsx_table(FIELDS_EVAL_CSV)),
    *[Reader(f"recorded-{name}", "responses.jsonl", seed, _recorded(name), jsonl_records(seed))
      for name, seed in RECORDED.items()],
    Reader("recorded-query-csv", "predictions.csv", RECORDED_QUERY_CSV, _recorded("query"),
           csv_table(RECORDED_QUERY_CSV)),
    Reader("sparql-json", "results.json", SPARQL_JSON, _sparql_json, json_document(SPARQL_JSON),
           names_file=False, skip=(NotJson,)),
    Reader("runlog-results", "results_fz.jsonl", RUNLOG_RESULTS, _runlog_results,
           jsonl_records(RUNLOG_RESULTS), allowed=(InputError, ConfigError)),
    Reader("runlog-batch", "batch_fz.json", RUNLOG_BATCH, _runlog_batch, json_document(RUNLOG_BATCH),
           allowed=(InputError, ConfigError)),
]


BY_NAME = {r.name: r for r in READERS}


class Crash(AssertionError):
    """A reader raised something other than its documented error."""


def check(reader: Reader, data: bytes, folder: Path) -> str:
    """Write ``data`` as the reader's file in ``folder`` and call the reader.

    Returns ``"accepted"``, ``"rejected"`` (documented error, one line naming the file) or
    ``"skipped"``; raises :class:`Crash` for anything else.
    """
    path = folder / reader.filename
    path.write_bytes(data)
    try:
        reader.read(path)
    except reader.skip:
        return "skipped"
    except reader.allowed as exc:
        text = str(exc)
        if "\n" in text or "\r" in text:
            raise Crash(f"{reader.name}: error is not one line: {text!r}\ninput: {data[:300]!r}") from exc
        if reader.names_file and not any(n in text for n in (path.name, *reader.partners)):
            raise Crash(f"{reader.name}: error does not name the file: {text!r}\n"
                        f"input: {data[:300]!r}") from exc
        return "rejected"
    except BaseException as exc:  # noqa: BLE001 - the point: anything else is a crash
        if isinstance(exc, KeyboardInterrupt):
            raise
        tb = "".join(traceback.format_exception(exc)[-3:])
        raise Crash(f"{reader.name}: {type(exc).__name__}: {exc}\ninput: {data[:300]!r}\n{tb}") from exc
    finally:
        for p in folder.iterdir():
            if p.is_file():
                p.unlink()
    return "accepted"


EXAMPLES = 60


FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
