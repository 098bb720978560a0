"""The questions CSV reader (``suite/retrieval._read_questions``) reads rows through
``csv.reader`` and one ``itemgetter`` per row, and the suite's checking pass reads only the
questions' ids (no case built). Both are held to the general path on random files: the
seed's reader as it was (``csv.DictReader``, a dict per row, every case built and validated
by pydantic), written here as the oracle. Same cases (every field, what was set), same line
of each, same count, and the same one-line error (file, line, field) on every bad file:
short and long rows, blank lines, repeated header names, empty questions, bad or
letter-case-differing digests, graded and out-of-range relevance, ids, several rows per
question, repeated relevant chunks and questions.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from queryeval.cli.app import main
from queryeval.errors import InputError
from queryeval.suite.common import lazy_suite
from queryeval.suite.models import Case
from queryeval.suite.retrieval import (
    _iter_question_cases,
    _question_ids,
    qa_pair_id,
    read_questions_csv,
)

HASH = hashlib.md5(b"chunk").hexdigest()  # noqa: S324 - the seed's content hash
OTHER = hashlib.md5(b"other").hexdigest()  # noqa: S324
COLUMNS = ("question", "answer", "document_name", "dataset", "chunk_id", "content_hash")
MAX = 2**31 - 1


# --------------------------------------------------------------------------- the oracle
def _oracle(path: Path) -> list[tuple[int, Case]]:
    """The general path: the reader before the fast path (csv.DictReader, a dict of values
    per row, then each case built by pydantic), with the two rules the fast path adds as
    InputErrors naming the row (a digest must be 32 hex digits and nothing else; a relevance
    at most 2**31 - 1), which pydantic refused before without naming file or line."""
    md5 = re.compile(r"[0-9a-fA-F]{32}")
    out: list[tuple[int, Case]] = []
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        if any(c not in header for c in COLUMNS[:5]):
            raise InputError("missing column", path=path, line=1)
        groups: list[dict] = []
        try:
            for row in reader:
                line = reader.line_num
                if None in row:
                    raise InputError("more fields than the header", path=path, line=line)
                if None in row.values():
                    raise InputError("fewer fields than the header", path=path, line=line)
                v = {k: row.get(k) or "" for k in (*COLUMNS, "id", "relevance")}
                if not v["question"].strip():
                    raise InputError("empty question", path=path, line=line, field="question")
                digest = v["content_hash"]
                if digest and not md5.fullmatch(digest):
                    raise InputError(f"not an MD5 hex digest: {digest!r}", path=path, line=line,
                                     field="content_hash")
                if not digest and not v["chunk_id"]:
                    raise InputError("no chunk_id and no content_hash: a row needs one to name "
                                     "its relevant chunk", path=path, line=line, field="chunk_id")
                rel = v["relevance"].strip()
                if rel and not re.fullmatch(r"[0-9]+", rel):
                    raise InputError(f"must be an integer >= 0, got {rel!r}", path=path,
                                     line=line, field="relevance")
                if rel and int(rel) > MAX:
                    raise InputError(f"must be an integer from 0 to {MAX} (trec_eval's range), "
                                     f"got {rel[:20]!r}", path=path, line=line, field="relevance")
                explicit = v["id"].strip()
                same = (v["dataset"], v["question"], v["answer"])
                key = ("id", explicit) if explicit else ("qa", *same)
                identity = f"hash:{digest.lower()}" if digest else f"id:{v['chunk_id']}"
                relevant = {"chunk_id": v["chunk_id"], "content_hash": digest,
                            "relevance": int(rel) if rel else 1}
                g = groups[-1] if groups else None
                if g is None or g["key"] != key:
                    groups.append({"line": line, "v": v, "key": key, "same": same,
                                   "cid": explicit or qa_pair_id(*same), "relevant": [relevant],
                                   "names": [v["document_name"]], "seen": {identity: line}})
                    continue
                if same != g["same"]:
                    raise InputError(f"duplicate qa_pair_id {explicit} (the id of the question "
                                     f"at line {g['line']})", path=path, line=line, field="id")
                if identity in g["seen"]:
                    raise InputError(
                        f"the same relevant chunk as line {g['seen'][identity]} for the same "
                        "question (same dataset, question and answer)", path=path, line=line,
                        field="content_hash" if digest else "chunk_id")
                g["seen"][identity] = line
                g["relevant"].append(relevant)
                if v["document_name"] not in g["names"]:
                    g["names"].append(v["document_name"])
        except csv.Error as exc:
            raise InputError(f"invalid CSV: {exc}", path=path, line=reader.line_num) from None
    for g in groups:
        v = g["v"]
        target = {"document_name": " | ".join(g["names"]), "dataset": v["dataset"],
                  "answer": v["answer"]}
        if len(g["relevant"]) == 1 and g["relevant"][0]["relevance"] == 1:
            target.update(content_hash=v["content_hash"], chunk_id=v["chunk_id"])
        else:
            target["relevant"] = g["relevant"]
        out.append((g["line"], Case(
            id=g["cid"], name=v["question"][:80], tags=[v["dataset"]] if v["dataset"] else [],
            cluster=target["document_name"],  # questions on one document share a cluster
            metadata={"dataset": v["dataset"]},
            conversation=[{"role": "user", "content": v["question"],
                           "target": {"retrieval": target}}])))
    return out


def _outcome(read, path: Path):
    try:
        return ("ok", read(path))
    except InputError as exc:
        return ("error", str(exc))


def _set_fields(model) -> object:
    """A model's data with, at every level, the fields that were set (what task_kinds reads)."""
    if isinstance(model, list):
        return [_set_fields(m) for m in model]
    if not hasattr(model, "model_fields_set"):
        return model
    return {"set": sorted(model.model_fields_set),
            **{k: _set_fields(getattr(model, k)) for k in type(model).model_fields}}


def _cases(path: Path):
    return [(line, _set_fields(case)) for line, case in _iter_question_cases(path)]


def _oracle_cases(path: Path):
    return [(line, _set_fields(case)) for line, case in _oracle(path)]


# --------------------------------------------------------------------------- random files
cell = {
    "question": st.sampled_from(["Q1?", "Q2?", "Q1?", " ", "", "Q3, with a comma\nand a line"]),
    "answer": st.sampled_from(["a", "b", ""]),
    "document_name": st.sampled_from(["d.pdf", "e.pdf", ""]),
    "dataset": st.sampled_from(["ds1", "ds2", ""]),
    "chunk_id": st.sampled_from(["c1", "c2", "", "c1"]),
    "content_hash": st.sampled_from([HASH, HASH.upper(), OTHER, "", "", "zz", HASH + "\n",
                                     " " + HASH]),
    "id": st.sampled_from(["", "", "i1", " i1 ", "i2", " "]),
    "relevance": st.sampled_from(["", "", "1", "0", "2", " 3 ", "x", "١", "2147483647",
                                  "2147483648", "0002", "9" * 30, "-1", " "]),
    "extra": st.sampled_from(["", "x"]),
}
# the required columns, some optional ones (a repeated name too), in any order
HEADERS = st.lists(st.sampled_from(["content_hash", "id", "relevance", "extra", "chunk_id"]),
                   max_size=4).flatmap(lambda more: st.permutations([*COLUMNS[:5], *more]))


@st.composite
def csv_text(draw) -> str:
    header = draw(HEADERS)
    out = io.StringIO()
    w = csv.writer(out, lineterminator=draw(st.sampled_from(["\n", "\r\n"])))
    w.writerow(header)
    for _ in range(draw(st.integers(0, 8))):
        shape = draw(st.sampled_from(["row"] * 8 + ["blank", "short", "long", "repeat"]))
        if shape == "blank":
            out.write("\n")
            continue
        row = [draw(cell[h]) for h in header]
        if shape == "short":
            row = row[:draw(st.integers(0, len(row) - 1))]
        elif shape == "long":
            row.append("more")
        w.writerow(row)
        if shape == "repeat":  # the same question again: another relevant chunk, or a repeat
            row[header.index("chunk_id")] = draw(cell["chunk_id"])
            w.writerow(row)
    return out.getvalue()


FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(text=csv_text())
def test_reader_equals_the_general_path(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("q") / "q.csv"
    path.write_text(text, encoding="utf-8", newline="")
    want = _outcome(_oracle_cases, path)
    assert _outcome(_cases, path) == want
    if want[0] == "ok":  # the checking pass reads the same ids at the same lines
        assert list(_question_ids(path)) == [(line, c["id"]) for line, c in want[1]]


@FUZZ
@given(text=csv_text())
def test_checking_pass_without_cases_equals_the_one_that_builds_them(tmp_path_factory, text):
    """read_questions_csv's checking pass (ids only) against lazy_suite's general pass over
    the cases: the same count and the same error (a duplicate question included)."""
    path = tmp_path_factory.mktemp("q") / "q.csv"
    path.write_text(text, encoding="utf-8", newline="")

    def general(p: Path):
        return lazy_suite(p, _iter_question_cases, empty="no questions", duplicate_field="question",
                          duplicate=lambda cid, first: (
                              f"duplicate qa_pair_id {cid} (the rows of one question, one per "
                              "relevant chunk, must be adjacent; the same dataset, question and "
                              f"answer as line {first})"), kinds={"retrieval"})

    def shape(read):
        kind, got = _outcome(read, path)
        return (kind, len(got) if kind == "ok" else got)

    assert shape(read_questions_csv) == shape(general)


@FUZZ
@given(text=csv_text())
def test_an_accepted_row_makes_a_valid_case(tmp_path_factory, text):
    """The rule the checking pass relies on: whatever the reader accepts, pydantic accepts
    (no ValidationError from any row of any file)."""
    path = tmp_path_factory.mktemp("q") / "q.csv"
    path.write_text(text, encoding="utf-8", newline="")
    try:
        list(_iter_question_cases(path))
    except InputError:
        pass
    except ValidationError as exc:  # pragma: no cover - the failure this test looks for
        pytest.fail(f"a row the reader accepted is not a valid case: {exc}")


# --------------------------------------------------------------------------- named cases
def _write(tmp_path: Path, *rows: str, header: str = ",".join(COLUMNS) + ",relevance") -> Path:
    path = tmp_path / "q.csv"
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(("cell", "line", "field", "message"), [
    (f'"{HASH}\n"', 3, "content_hash", "not an MD5 hex digest: '" + HASH + "\\n'"),
    (f"{HASH},2147483648", 2, "relevance",
     "must be an integer from 0 to 2147483647 (trec_eval's range), got '2147483648'"),
])
def test_what_pydantic_refused_is_one_line_naming_file_row_and_field(tmp_path, capsys, cell, line,
                                                                      field, message):
    """A digest followed by a line break and a relevance beyond trec_eval's range passed the
    reader and failed when the case was built: a pydantic message without file or line."""
    row = f"Q?,A,d.pdf,ds,c1,{cell}" + ("" if "," in cell else ",")
    path = _write(tmp_path, row)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {path}:{line}: {field}: {message}"


def test_the_largest_relevance_is_read(tmp_path):
    path = _write(tmp_path, f"Q?,A,d.pdf,ds,c1,,{'0' * 40}2147483647")
    (case,) = read_questions_csv(path).cases
    assert case.conversation[0].target.retrieval.relevant[0].relevance == MAX


def test_a_csv_error_names_the_last_row_read_whole(tmp_path):
    """As csv.DictReader did: a field past the csv module's limit on line 3 is reported at
    line 2, the last row read."""
    path = tmp_path / "q.csv"
    path.write_text("question,answer,document_name,dataset,chunk_id\nQ?,A,d,ds,c1\n"
                    f"Q2?,A,d,ds,{'c' * 200_000}\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        list(_iter_question_cases(path))
    assert _outcome(_oracle_cases, path) == ("error", str(info.value))
    assert f"{path}:2:" in str(info.value)


def test_qa_pair_id_is_the_md5_of_dataset_question_answer_as_a_uuid():
    digest = hashlib.md5(b"ds||What?||42").digest()  # noqa: S324
    assert qa_pair_id("ds", "What?", "42") == str(uuid.UUID(bytes=digest))


def test_a_single_relevant_run_imports_no_ranking_engine_help_renderer_or_foreign_formats(
        tmp_path):
    """A run of the seed's shape (one relevant chunk per question, recorded responses) loads
    neither the ranking engine, nor typer's rich help (Markdown, tracebacks), nor the
    other tools' suite formats, nor the GitHub outputs: imports are part of a CLI run's CPU."""
    questions = _write(tmp_path, f"Q?,A,d.pdf,ds,c1,{HASH},", f"Q2?,A,d.pdf,ds,c2,{OTHER},")
    responses = tmp_path / "r.jsonl"
    responses.write_text('{"qa_pair_id": "%s", "retrieved_chunks": [{"chunk_id": "c1", '
                         '"content_hash": "%s", "score": 0.5}]}\n' % (qa_pair_id("ds", "Q?", "A"), HASH),
                         encoding="utf-8")
    code = ("import sys\nfrom queryeval.cli.app import main\n"
            f"code = main(['run', {str(questions)!r}, '--responses', {str(responses)!r}, '--k', '1,3',"
            f" '--no-report', '-q', '--out', {str(tmp_path / 'runs')!r}])\n"
            "print('EXIT', code)\n"
            "print('RANKING', sorted(m for m in sys.modules if m.startswith('queryeval.metrics.ranking')))\n"
            "for m in ('queryeval.metrics.ranking._evaluate', 'typer.rich_utils', 'queryeval.suite.foreign.ragas',"
            " 'queryeval.report.github'):\n"
            "    print(m, m in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                         env={"PATH": "", "GITHUB_ACTIONS": "", "HOME": str(tmp_path)}).stdout
    assert "EXIT 0" in out
    # the one recall and reciprocal rank (metrics/ranking's per-query kernels, its package
    # loading names on first use), never the engine that evaluates a run
    assert ("RANKING ['queryeval.metrics.ranking', 'queryeval.metrics.ranking._mrr', "
            "'queryeval.metrics.ranking._recall']") in out
    assert "queryeval.metrics.ranking._evaluate False" in out
    assert "typer.rich_utils False" in out
    assert "queryeval.suite.foreign.ragas False" in out
    assert "queryeval.report.github False" in out
