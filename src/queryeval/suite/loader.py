"""Load a suite: a YAML file, a multi-document YAML file, or a folder of them.

A YAML document holds one case (a mapping) or a list of cases. Every error names the file,
the line and the field, e.g.::

    cases/mex.yaml:12: conversation[0].target.indicator_selection[0].dimensions[1].values[0].id: field required
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from pydantic import ValidationError

from queryeval.errors import InputError
from queryeval.suite.common import (
    Suite,
    _near,
    first_error,
    hash_files,
    missing_columns_error,
    resolve_sources,
)
from queryeval.suite.models import Case
from queryeval.suite.yamlsrc import YamlDoc, format_loc, printable, read_yaml_documents

YAML_SUFFIXES = (".yaml", ".yml")


def validation_error(exc: ValidationError, doc: YamlDoc, prefix: tuple = ()) -> InputError:
    """Turn pydantic's errors into one InputError line naming file, line and field."""
    msg, first_loc = first_error(exc)
    loc = (*prefix, *first_loc)
    return InputError(msg, path=doc.path, line=doc.line_of(loc), field=format_loc(loc) or None)


def _cases_from_doc(doc: YamlDoc) -> list[tuple[Case, tuple]]:
    items: list[tuple[object, tuple]]
    if isinstance(doc.data, list):
        items = [(item, (i,)) for i, item in enumerate(doc.data)]
    elif isinstance(doc.data, dict):
        items = [(doc.data, ())]
    else:
        raise InputError(
            f"a case must be a mapping (or a list of mappings), got {type(doc.data).__name__}",
            path=doc.path, line=doc.line,
        )
    out = []
    for item, prefix in items:
        if not isinstance(item, dict):
            raise InputError("a case must be a mapping", path=doc.path,
                             line=doc.line_of(prefix), field=format_loc(prefix) or None)
        try:
            case = Case.model_validate(item)
        except ValidationError as exc:
            raise validation_error(exc, doc, prefix) from None
        resolve_sources(case, doc.path.parent)
        out.append((case, prefix))
    return out


def yaml_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix.lower() in YAML_SUFFIXES and p.is_file())
        if not files:
            raise InputError("no .yaml or .yml files in folder", path=path)
        return files
    return [path]


def load_yaml_suite(path: str | Path) -> Suite:
    path = Path(path)
    files = yaml_files(path)
    cases: list[Case] = []
    origin: dict[str, tuple[str, int]] = {}
    for f in files:
        for doc in read_yaml_documents(f):
            for case, prefix in _cases_from_doc(doc):
                line = doc.line_of(prefix)
                if case.id in origin:
                    first_file, first_line = origin[case.id]
                    raise InputError(
                        f"duplicate case id {case.id!r} (first defined at {first_file}:{first_line})",
                        path=f, line=doc.line_of((*prefix, "id")), field=format_loc((*prefix, "id")),
                    )
                origin[case.id] = (str(f), line)
                cases.append(case)
    if not cases:
        raise InputError("suite has no cases", path=path)
    root = path if path.is_dir() else None
    return Suite(cases=cases, sources=files, hash=hash_files(files, root), origin=origin)


def load_dabench_suite(questions: str | Path, labels: str | Path) -> Suite:
    """DABench questions + labels JSONL -> single-turn cases with ``target.answers``.

    The question's concepts, level, constraints, format and file name go into
    ``case.metadata``; cases come in labels-file order (the reference's order).
    """
    from queryeval.suite.dabench import join_cases, read_labels, read_questions

    questions, labels = Path(questions), Path(labels)
    q_records = read_questions(questions)
    l_records = read_labels(labels)
    line_of = {r.id: r.line for r in l_records}
    cases: list[Case] = []
    origin: dict[str, tuple[str, int]] = {}
    for q in join_cases(q_records, l_records, labels_path=labels):
        cases.append(Case(
            id=q.id, name=q.question[:80], cluster=q.file_name,  # questions on one CSV file
            metadata={"concepts": q.concepts, "level": q.level, "constraints": q.constraints,
                      "format": q.format, "file_name": q.file_name, "label_pairs": q.label_pairs},
            conversation=[{"role": "user", "content": q.question,
                           "target": {"answers": [{"name": n, "value": v} for n, v in q.answers]}}],
        ))
        origin[q.id] = (str(labels), line_of.get(q.id, 0))
    if not cases:
        raise InputError("no labelled questions", path=labels)
    return Suite(cases=cases, sources=[questions, labels],
                 hash=hash_files([questions, labels]), origin=origin)


# The CSV suites, by the columns that tell them apart (a header is matched to the kind it
# overlaps most; a tie goes to the kind needing fewer columns, the closer one).
RETRIEVAL_COLUMNS = ("question", "answer", "document_name", "dataset", "chunk_id")  # content_hash optional
CSV_KINDS = (
    ("a fields evaluation table", ("Question",), "and one ground-truth column per field"),
    ("a retrieval questions CSV", RETRIEVAL_COLUMNS, "(content_hash optional)"),
)
SUPPORTED_FORMATS = (
    "a .yaml/.yml file or a folder of them; a .jsonl of cases (a 'conversation' on each line); "
    "DABench questions .jsonl with --labels; BuildingQA .json; a retrieval questions .csv "
    f"({', '.join(RETRIEVAL_COLUMNS)}); a fields evaluation table .csv/.xlsx (Question and "
    "one column per field); ragas, DeepEval, inspect_ai/OpenAI-evals samples, HF datasets "
    "(saved folders, .parquet, {\"data\": [...]} .json), BEIR folders, TREC qrels with "
    "a queries file (docs/formats.md)"
)


def csv_kind(path: Path, header: list[str]) -> str:
    """``"retrieval"`` or ``"fields"`` when the header has every column of that kind, else
    the InputError naming what the closest kind misses."""
    if all(c in header for c in RETRIEVAL_COLUMNS):
        return "retrieval"
    if "Question" in header and "content_hash" not in header:
        return "fields"
    scores = []
    for n, (kind, required, extra) in enumerate(CSV_KINDS):
        score = sum(1 for c in required if c in header or _near(c, header) is not None)
        scores.append((score, -n, kind, required, extra))
    score, _, kind, required, extra = max(scores)
    if score == 0:
        shown = printable(", ".join(header))[:200] or "(nothing)"
        raise InputError(f"unknown suite format: a CSV header of {shown}; supported: "
                         f"{SUPPORTED_FORMATS}", path=path, line=1)
    raise missing_columns_error(path, header, kind, required, extra)


def _csv_header(path: Path) -> list[str]:
    from queryeval.io.jsonl import iter_csv

    for _line, row in iter_csv(path, kind="suite-lines"):
        return [c.strip() for c in row]
    raise InputError("empty file: a CSV suite needs a header row and one row per question",
                     path=path, line=1)


def _title_case_retrieval(path: Path, header: list[str]) -> None:
    """A header naming three or more of the retrieval questions' columns in another letter
    case (``Question, Answer, Document_Name, ...``, with or without ``content_hash``) is
    refused with the did-you-mean, not read as a fields table."""
    folded = {h.lower() for h in header}
    exact = all(c in header for c in RETRIEVAL_COLUMNS)
    if not exact and sum(c in folded for c in (*RETRIEVAL_COLUMNS, "content_hash")) >= 3:
        raise missing_columns_error(path, header, "a retrieval questions CSV", RETRIEVAL_COLUMNS,
                                    "(content_hash optional)")


def _foreign() -> ModuleType:
    """:mod:`queryeval.suite.foreign`, imported when a path needs it (the seed's questions
    CSV, a YAML or JSONL suite of cases do not: their runs skip its seven modules)."""
    from queryeval.suite import foreign

    return foreign


def _foreign_fits(path: Path, header: list[str]) -> bool:
    """Whether a table's header is another tool's format (a questions CSV is read by its own
    reader, :func:`csv_kind`; question rows in xlsx have no other reader)."""
    from queryeval.suite.foreign import detect

    have = set(header)
    skip = (detect.DABENCH, detect.BUILDINGQA) + ((detect.QUESTIONS,) if path.suffix.lower()
                                                  == ".csv" else ())
    return any(f.matches(have) for f in detect.FORMATS if f not in skip)


def _load_table(path: Path, corpus: str | Path | None) -> Suite:
    """A .csv or .xlsx suite: the seed's retrieval questions (CSV), a fields table, or a
    foreign format told by its header (ragas, DeepEval, inspect, question rows in xlsx)."""
    csv = path.suffix.lower() == ".csv"
    if csv:
        header = _csv_header(path)
    else:
        from queryeval.suite.foreign.records import table_header

        header = table_header(path)
    _title_case_retrieval(path, header)
    if csv and "content_hash" in header and all(c in header for c in RETRIEVAL_COLUMNS):
        from queryeval.suite.retrieval import read_questions_csv

        return read_questions_csv(path)
    if "Question" not in header and _foreign_fits(path, header):
        return _foreign().load_records_suite(path, corpus)
    if csv and csv_kind(path, header) == "retrieval":  # (csv_kind raises for no kind)
        from queryeval.suite.retrieval import read_questions_csv

        return read_questions_csv(path)
    if not csv and "Question" not in header:
        from queryeval.suite.foreign import detect

        detect.detect(header, path=path, where={"line": 1})
    from queryeval.suite.fields import load_fields_suite

    return load_fields_suite(path)


def _starts_a_json_record(path: Path) -> bool:
    """Whether the first non-blank character of ``path`` opens a JSON object (DABench's
    labels are JSONL); unreadable text counts as one, left to the JSONL reader's error."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4096).lstrip()
    except OSError:
        return True
    return not head or head.startswith((b"{", b"\xef\xbb\xbf{"))


UNLABELLED_SUFFIXES = (".csv", ".xlsx", ".json", ".parquet")
"""Suites that carry their own ground truth, so ``--labels`` is refused with them (it goes
with DABench questions JSONL and TREC/BEIR queries files; YAML suites, folders and JSONL
files of cases are refused too)."""


@dataclass(frozen=True)
class SuiteFormat:
    """A suite reader, registered in :data:`queryeval.registry.FORMATS` (built in below,
    ``queryeval.registry.register_format`` in the process, or an entry point of the group
    ``queryeval.formats`` naming an instance): :func:`load_suite` asks the formats whose
    ``suffixes`` hold the path's (lower-case, with the dot; ``"/"`` a folder, ``"*"`` any
    path), registered ones before the built-ins, and reads the path with the first whose
    ``claims(path, labels)`` is true (no ``claims``: every such path)."""

    name: str
    description: str
    load: Callable[..., Suite]
    """``load(path, *, labels, corpus) -> Suite``; a bad file raises InputError naming the
    file, line/record and field."""
    suffixes: tuple[str, ...] = ()
    claims: Callable[[Path, Path | None], bool] | None = None
    labels: bool = False
    """Read with ``--labels`` (a questions file and its judgements); the others without."""


def _load_folder(path: Path, *, labels: Path | None, corpus: str | Path | None) -> Suite:
    loaded = _foreign().load_folder(path, corpus)
    return loaded if loaded is not None else load_yaml_suite(path)


def _load_jsonl(path: Path, *, labels: Path | None, corpus: str | Path | None) -> Suite:
    from queryeval.suite.jsonl_cases import is_cases_jsonl, read_cases_jsonl

    first = is_cases_jsonl(path)
    if first is None:
        raise InputError("empty file: a JSONL suite needs one case (a JSON object with a "
                         "'conversation') per line", path=path)
    if first:
        return read_cases_jsonl(path)
    return _foreign().load_records_suite(path, corpus)


def _is_qrels(path: Path, labels: Path | None) -> bool:
    from queryeval.suite.foreign.beir import is_beir_qrels
    from queryeval.suite.foreign.trecqrels import looks_like_qrels

    return is_beir_qrels(path) or looks_like_qrels(path)


def _load_qrels(path: Path, *, labels: Path | None, corpus: str | Path | None) -> Suite:
    from queryeval.suite.foreign.beir import is_beir_qrels

    if is_beir_qrels(path):
        return _foreign().load_beir(path)
    raise InputError("TREC qrels need their queries: give the queries file (qid<TAB>text "
                     "or JSONL) as the suite and this file as --labels", path=path)


def _labels_are_qrels(path: Path, labels: Path | None) -> bool:
    """Not DABench's JSONL labels: read as TREC qrels, whose reader names the bad line."""
    from queryeval.suite.foreign.trecqrels import looks_like_qrels

    return labels is not None and labels.suffix.lower() != ".jsonl" and (
        looks_like_qrels(labels) or not _starts_a_json_record(labels))


YAML_FORMAT = SuiteFormat("yaml", "suite YAML (a case or a list of cases per document)",
                          lambda path, *, labels, corpus: load_yaml_suite(path),
                          suffixes=YAML_SUFFIXES)
FOLDER_FORMAT = SuiteFormat("folder", "a folder of suite YAML files, a BEIR folder or a saved "
                            "HF dataset", _load_folder, suffixes=("/",))
JSONL_FORMAT = SuiteFormat("jsonl", "cases JSONL, or another tool's records (docs/formats.md)",
                           _load_jsonl, suffixes=(".jsonl",))
RECORDS_FORMAT = SuiteFormat(
    "records", "BuildingQA JSON, HF datasets, another tool's records (docs/formats.md)",
    lambda path, *, labels, corpus: _foreign().load_records_suite(path, corpus),
    suffixes=(".json", ".parquet"))
TABLE_FORMAT = SuiteFormat("table", "retrieval questions CSV, a fields table, question rows",
                           lambda path, *, labels, corpus: _load_table(path, corpus),
                           suffixes=(".csv", ".xlsx"))
QRELS_FORMAT = SuiteFormat("qrels", "BEIR qrels (a TREC qrels file alone is refused)",
                           _load_qrels, suffixes=(".tsv", ".qrels", ".txt"), claims=_is_qrels)
TREC_FORMAT = SuiteFormat("trec", "TREC/BEIR queries with --labels QRELS",
                          lambda path, *, labels, corpus: _foreign().load_trec(path, labels,
                                                                                corpus),
                          suffixes=("*",), claims=_labels_are_qrels, labels=True)
DABENCH_FORMAT = SuiteFormat("dabench", "DABench questions JSONL with --labels LABELS",
                             lambda path, *, labels, corpus: load_dabench_suite(path, labels),
                             suffixes=("*",), labels=True)


def suite_format(path: Path, labels: Path | None = None) -> SuiteFormat | None:
    """The registered format that reads ``path`` (None: none does)."""
    from queryeval.errors import ConfigError
    from queryeval.registry import FORMATS

    suffix = "/" if path.is_dir() else path.suffix.lower()
    for name in FORMATS.in_order():
        try:
            fmt = FORMATS.get(name)
        except ConfigError:  # an installed format that does not load reads nothing
            if name in FORMATS.builtins:
                raise
            continue
        if fmt.labels != (labels is not None):
            continue
        if (suffix in fmt.suffixes or "*" in fmt.suffixes) and (
                fmt.claims is None or fmt.claims(path, labels)):
            return fmt
    return None


def _supported() -> str:
    """The built-in formats' description, then each registered or installed one's."""
    from queryeval.errors import ConfigError
    from queryeval.registry import FORMATS

    extra = []
    for name in FORMATS.in_order():
        if name not in FORMATS.builtins:
            try:
                fmt = FORMATS.get(name)
            except ConfigError:
                continue
            extra.append(f"{fmt.description} ({', '.join(fmt.suffixes)})")
    return "; ".join([SUPPORTED_FORMATS, *extra])


def load_suite(path: str | Path, *, labels: str | Path | None = None,
               corpus: str | Path | None = None) -> Suite:
    """Load a suite from a path, choosing the reader from the path's form.

    * a folder, ``.yaml`` or ``.yml``: suite YAML; a BEIR folder (``queries.jsonl``,
      ``qrels/``) or a saved HF dataset (``datasets.save_to_disk``): read by its fields;
    * ``.jsonl`` with ``labels``: DABench questions + labels; with TREC qrels as ``labels``:
      the queries of TREC judgements;
    * ``.jsonl`` whose lines are cases (a ``conversation`` each): a JSONL suite (lazy);
    * ``.csv`` with the retrieval columns: seed 002 retrieval questions;
    * ``.json``: BuildingQA QA JSON (text-to-SPARQL questions with gold queries);
    * ``.csv`` / ``.xlsx`` with a question column and ground-truth columns: seed 004's
      field-retrieval evaluation table;
    * any other ``.jsonl``/``.json``/``.csv``/``.xlsx``/``.parquet``: a foreign format told by
      its fields (ragas, DeepEval, inspect_ai, OpenAI evals, queryeval cases or question rows;
      docs/formats.md), one clear line when it fits none or several.

    ``corpus``: the run's corpus, to match ragas/DeepEval contexts to its chunks (and fill
    the content hashes of TREC judgements); without it a context is its own text's MD5.
    """
    from queryeval.io.files import check_input

    path = Path(path)
    if not path.exists():
        raise InputError("no such file or folder", path=path)
    if not path.is_dir():
        check_input(path, "suite-lines")  # a FIFO or a device is no suite, whatever its name
    if labels is not None:
        kind = None
        if path.is_dir():
            kind = "folder suite (YAML cases, a BEIR folder or a saved dataset)"
        elif path.suffix.lower() in YAML_SUFFIXES:
            kind = "YAML suite"
        elif path.suffix.lower() in UNLABELLED_SUFFIXES:
            kind = f"{path.suffix} suite"
        elif path.suffix.lower() == ".jsonl":
            from queryeval.suite.jsonl_cases import is_cases_jsonl

            kind = "JSONL suite of cases" if is_cases_jsonl(path) else None
        if kind is not None:
            raise InputError(f"given with a {kind}, which carries its own ground truth; "
                             "--labels goes with a DABench questions .jsonl or a TREC "
                             "queries file (.tsv/.jsonl)", path=path, field="--labels")
        if not Path(labels).exists():
            raise InputError("no such file", path=labels)
        labels = Path(labels)
    fmt = suite_format(path, labels)
    if fmt is not None:
        return fmt.load(path, labels=labels, corpus=corpus)
    raise InputError(f"unknown suite format {path.suffix or '(no extension)'!r}; supported: "
                     f"{_supported()}", path=path)
