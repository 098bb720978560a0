"""Suites and recorded outputs in other tools' formats, recognised from their fields
(docs/formats.md): ragas, DeepEval, inspect_ai, OpenAI evals, HF datasets (saved folders,
Parquet, ``{"data": [...]}`` JSON), BEIR folders, TREC qrels with a queries file, and
queryeval's own cases or question rows in those containers.

The dispatcher (:mod:`queryeval.suite.loader`) calls :func:`load_records_suite`,
:func:`load_folder` and :func:`load_trec`; the recorded-outputs reader calls
:func:`recorded_records`. Format modules import only :mod:`~.records`, :mod:`~.build`,
:mod:`~.contexts` and :mod:`~.detect`.
"""

from __future__ import annotations

from pathlib import Path

from queryeval.errors import InputError
from queryeval.suite.common import Suite
from queryeval.suite.foreign import detect as fmt
from queryeval.suite.foreign.build import suite_of
from queryeval.suite.foreign.contexts import ChunkIndex
from queryeval.suite.foreign.records import Record, first_fields, is_hf_folder, read_records

DABENCH_HINT = ("a DABench questions file needs its labels: add --labels LABELS.jsonl (a suite "
                "of cases in JSONL has a 'conversation' on each line)")


def convert(records: list[Record], path: Path, corpus: str | Path | None,
            found: fmt.Format) -> list:
    from queryeval.suite.foreign import own, ragas, samples
    from queryeval.suite.foreign.deepeval import DEEPEVAL_ROLES

    if found is fmt.DABENCH:
        raise InputError(DABENCH_HINT, path=path)
    if found is fmt.CASES:
        return own.own_cases(records, path)
    if found is fmt.QUESTIONS:
        return own.question_cases(records, path)
    if found is fmt.INSPECT:
        return samples.cases(records, path, "target")
    if found is fmt.OPENAI_EVALS:
        return samples.cases(records, path, "ideal")
    if found is fmt.RAGAS_V01:  # no reference contexts: nothing to match
        return ragas.cases(records, path, None, ragas.RAGAS_V01_ROLES)
    index = ChunkIndex.load(corpus)
    if found is fmt.RAGAS:
        return ragas.cases(records, path, index)
    if found is fmt.DEEPEVAL:
        return ragas.cases(records, path, index, DEEPEVAL_ROLES)
    raise InputError(f"{found.name} is not read from this container", path=path)


def detect_records(records: list[Record], path: Path) -> fmt.Format:
    if not records:
        raise InputError("suite has no records", path=path)
    return fmt.detect(first_fields(records), path=path, where=records[0].where)


def load_records_suite(path: Path, corpus: str | Path | None = None,
                       records: list[Record] | None = None) -> Suite:
    """A JSONL/JSON/CSV/xlsx/Parquet file or a saved HF dataset, its format told by its
    first record's fields."""
    records = read_records(path) if records is None else records
    found = detect_records(records, path)
    if found is fmt.BUILDINGQA:
        from queryeval.suite.buildingqa import read_buildingqa

        return read_buildingqa(path)
    cases = convert(records, path, corpus, found)
    sources = sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink()) \
        if path.is_dir() else [path]  # a link out of the folder is never read (hashed)
    return suite_of(cases, path, sources, root=path if path.is_dir() else None)


def folder_kind(path: Path) -> str | None:
    from queryeval.suite.foreign.beir import is_beir_folder

    if is_beir_folder(path):
        return "beir"
    if is_hf_folder(path):
        return "hf"
    return None


def load_beir(path: Path) -> Suite:
    from queryeval.suite.foreign import beir

    cases, sources, root = beir.cases(path)
    return suite_of(cases, path, sources, root=root)


def load_folder(path: Path, corpus: str | Path | None = None) -> Suite | None:
    kind = folder_kind(path)
    if kind == "beir":
        return load_beir(path)
    if kind == "hf":
        return load_records_suite(path, corpus)
    return None


def load_trec(queries: Path, qrels: Path, corpus: str | Path | None = None) -> Suite:
    from queryeval.suite.foreign import trecqrels

    cases = trecqrels.cases(queries, qrels, ChunkIndex.load(corpus))
    return suite_of(cases, queries, [queries, qrels])


RECORDED_FORMATS = (fmt.RAGAS, fmt.RAGAS_V01, fmt.DEEPEVAL)


PEEK_BYTES = 1 << 20


def _peek_fields(path: Path) -> set[str]:
    """The first record's fields, reading no more than the first line (or the header, at
    most 1 MiB): a million-line responses file of queryeval's own is not read twice, and a
    first line the own reader refuses or answers as an error (bad JSON, over the size cap)
    is left to it (an empty set)."""
    import json

    from queryeval.io.files import open_input

    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".csv"):
        try:
            return first_fields(read_records(path))
        except InputError:
            return set()
    try:
        with open_input(path, "responses") as fh:
            head = b""
            while not head.strip():
                head = fh.readline(PEEK_BYTES)
                if not head or (len(head) == PEEK_BYTES and not head.endswith(b"\n")):
                    return set()
    except (InputError, OSError):
        return set()
    text = head.decode("utf-8-sig", errors="replace")
    import csv

    try:  # whatever this line's trouble, the own reader reports it
        if suffix == ".csv":
            return {c.strip() for c in next(csv.reader([text.rstrip("\r\n")]), [])}
        obj = json.loads(text)
    except (ValueError, RecursionError, csv.Error):
        return set()
    return {k for k, v in obj.items() if v is not None} if isinstance(obj, dict) else set()


TASK_KINDS = {"retrieval": "retrieval", "freeform": "answer", "answers": "answer"}
"""The kind of sample (:func:`~.ragas.sample_kind`) each task reads from a mixed file."""
KIND_NAMES = {"retrieval": "retrieval sample", "answer": "answer-only sample"}
SHOWN_LINES = 10


def recorded_records(path: Path, chunks=None, task: str | None = None,
                     notes: list[str] | None = None) -> list[tuple[int, dict]] | None:
    """A ragas / DeepEval file (or a folder ``datasets``' ``save_to_disk`` wrote) given as
    recorded outputs, as ``(line, queryeval line)`` pairs (``case_id``, ``retrieved_chunks``,
    ``response``); None when the file's first record is not one of theirs (it is read as
    queryeval's own lines). ``chunks()``: the run's corpus (or None), to match retrieved
    contexts to chunks. A saved folder of queryeval's own lines is read as they are.

    ``task``: the run's task name. A mixed file (retrieval samples and answer-only samples)
    answers a retrieval run with its retrieval samples and a free-form run with its
    answer-only ones (:func:`~.ragas.sample_kind`); the samples of the other kind are left
    out, counted and named by line in one line appended to ``notes``."""
    folder = is_hf_folder(path)
    if path.suffix.lower() not in (".jsonl", ".json", ".csv", ".parquet") and not folder:
        return None
    if path.is_dir() and not folder:
        return None
    # a folder or a Parquet file is read whole here: it is never one of queryeval's own JSONL
    # files (read line by line), so its own lines are served from its records
    whole = folder or path.suffix.lower() == ".parquet"
    records = read_records(path) if whole else None
    have = first_fields(records) if records is not None else _peek_fields(path)
    own = "case_id" in have or "qa_pair_id" in have or (
        "id" in have and not any(f.matches(have) for f in RECORDED_FORMATS))
    if records is not None and (own or not records):  # own lines (or none at all)
        return [(n + 1, dict(rec.data)) for n, rec in enumerate(records)]
    if "case_id" in have or "qa_pair_id" in have:
        return None
    found = [f for f in RECORDED_FORMATS if f.matches(have)]
    if len(found) != 1:
        if records is not None:  # never one of queryeval's own JSONL files
            fmt.detect(have, path=path, where=records[0].where if records else None,
                       formats=RECORDED_FORMATS, what="responses")
        return None
    from queryeval.suite.foreign import ragas  # imported for their files only
    from queryeval.suite.foreign.deepeval import DEEPEVAL_ROLES

    roles = {fmt.RAGAS: ragas.RAGAS_ROLES, fmt.RAGAS_V01: ragas.RAGAS_V01_ROLES}.get(
        found[0], DEEPEVAL_ROLES)
    corpus = chunks() if chunks is not None else None
    index = ChunkIndex(corpus) if corpus else None
    keep = TASK_KINDS.get(task or "")
    out = []
    left: dict[str, list[str]] = {}
    for n, rec in enumerate(read_records(path) if records is None else records):
        line = int(rec.where.get("line", n + 1))
        if keep is not None:
            kind = ragas.sample_kind(rec, path, roles, keep)
            if kind != keep:
                left.setdefault(kind, []).append(
                    f"line {line}" if "line" in rec.where else f"record {rec.where['record']}")
                continue
        out.append((line, ragas.recorded_line(rec, path, index, roles)))
    for kind, where in left.items():
        shown = ", ".join(where[:SHOWN_LINES]) + (", ..." if len(where) > SHOWN_LINES else "")
        if notes is not None:
            notes.append(f"{path}: {len(where)} {KIND_NAMES[kind]}(s) left out ({shown}): the "
                         f"run's task is {task}, which reads the {KIND_NAMES[keep]}s")
    return out
