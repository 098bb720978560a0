"""Load a suite: a YAML file, a multi-document YAML file, or a folder of them.

A YAML document holds one case (a mapping) or a list of cases. Every error names the file,
the line and the field, e.g.::

    cases/mex.yaml:12: conversation[0].target.indicator_selection[0].dimensions[1].values[0].id: field required
"""

from __future__ import annotations

import hashlib
import types
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from queryeval.errors import InputError
from queryeval.suite.models import Case
from queryeval.suite.yamlsrc import YamlDoc, format_loc, printable, read_yaml_documents

YAML_SUFFIXES = (".yaml", ".yml")


class Suite:
    """The cases of a suite, where each came from, and a hash of the source files.

    Line-based formats are *lazy*: the loader checks every line once (so a bad line stops
    the run before it starts, naming its line), keeps the count and the task kinds, and
    :meth:`iter_cases` reads the file again on each pass, one case at a time. Other formats
    hold their cases in :attr:`cases`. Either way, :meth:`iter_cases` is how a run reads them.
    """

    def __init__(self, cases: list[Case] | None = None, sources: list[Path] | None = None,
                 hash: str = "", origin: dict[str, tuple[str, int]] | None = None, *,  # noqa: A002
                 reader: Callable[[], Iterator[Case]] | None = None, count: int | None = None,
                 kinds: set[str] | None = None) -> None:
        if (cases is None) == (reader is None):
            raise ValueError("give cases or a reader")
        self._cases = cases
        self._reader = reader
        self._count = len(cases) if cases is not None else count
        self._kinds = kinds
        self.sources = sources or []
        self.hash = hash
        self.origin = origin or {}  # case id -> (file, line), for eager suites

    @property
    def lazy(self) -> bool:
        return self._cases is None

    @property
    def cases(self) -> list[Case]:
        """Every case in a list (a lazy suite is read into memory on first use)."""
        if self._cases is None:
            self._cases = list(self.iter_cases())
        return self._cases

    def iter_cases(self) -> Iterator[Case]:
        if self._cases is not None:
            return iter(self._cases)
        return self._reader()  # type: ignore[misc]

    def __len__(self) -> int:
        if self._count is None:
            self._count = sum(1 for _ in self.iter_cases())
        return self._count

    def task_kinds(self) -> set[str]:
        if self._kinds is None:
            kinds: set[str] = set()
            for case in self.iter_cases():
                kinds |= case.task_kinds()
            self._kinds = kinds
        return set(self._kinds)


def lazy_suite(path: Path, read: Callable[[Path], Iterator[tuple[int, Case]]], *, empty: str,
               duplicate: Callable[[str, int], str], duplicate_field: str,
               kinds: set[str] | None = None) -> Suite:
    """A lazy suite over a line-based file: one checking pass now (every bad line, no case at
    all, and a repeated id are one InputError naming the line; ids are checked through their
    128-bit keys, :mod:`queryeval.io.idindex`, not a set), then ``read`` again on each pass.
    ``read(path)`` yields ``(line, case)``; ``duplicate(id, first_line)`` words the error."""
    from queryeval.io.idindex import KeyBuilder

    keys = KeyBuilder()
    found: set[str] = set()
    for line, case in read(path):
        keys.add(case.id, line)
        if kinds is None:
            found |= case.task_kinds()
    if not len(keys):
        raise InputError(empty, path=path)
    dup = keys.build().first_duplicate()
    if dup is not None:
        first, line = dup
        case_id = next(c.id for ln, c in read(path) if ln == line)
        raise InputError(duplicate(case_id, first), path=path, line=line, field=duplicate_field)
    return Suite(reader=lambda: (case for _, case in read(path)), sources=[path],
                 hash=hash_files([path]), count=len(keys), kinds=found if kinds is None else kinds)


def hash_files(paths: Iterable[Path], root: Path | None = None) -> str:
    """sha256 over each file's relative name and bytes, in sorted order (read in 1 MiB
    pieces: a large suite is hashed without holding it)."""
    from queryeval.io.files import open_input

    h = hashlib.sha256()
    for p in sorted(paths):
        name = p.relative_to(root).as_posix() if root and root in p.parents else p.name
        h.update(name.encode() + b"\0")
        with open_input(p, "responses") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
        h.update(b"\0")
    return "sha256:" + h.hexdigest()


def _fields_at(model: Any, loc: tuple) -> list[str]:
    """The field names of the pydantic model found at ``loc`` inside ``model`` (through
    lists, dicts and Optional), or [] where ``loc`` leads to no model."""
    import typing

    from pydantic import BaseModel

    def unwrap(tp: Any, want: type | None = None) -> Any:
        for _ in range(10):
            origin = typing.get_origin(tp)
            if origin in (typing.Union, types.UnionType, typing.Annotated):
                args = [a for a in typing.get_args(tp) if a is not type(None)]
                if origin is typing.Annotated:
                    args = args[:1]
                models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
                tp = models[0] if models else (args[0] if args else tp)
            else:
                return tp
        return tp

    tp: Any = model
    for part in loc:
        tp = unwrap(tp)
        origin = typing.get_origin(tp)
        if isinstance(part, int) and origin in (list, tuple, set, frozenset):
            tp = typing.get_args(tp)[0] if typing.get_args(tp) else Any
        elif isinstance(tp, type) and issubclass(tp, BaseModel) and part in tp.model_fields:
            tp = tp.model_fields[part].annotation
        elif origin is dict and len(typing.get_args(tp)) == 2:
            tp = typing.get_args(tp)[1]
        else:
            return []
    tp = unwrap(tp)
    return list(tp.model_fields) if isinstance(tp, type) and issubclass(tp, BaseModel) else []


def first_error(exc: ValidationError, model: Any = Case) -> tuple[str, tuple]:
    """The error a user should read first, worded as one line, and its ``loc``. An unknown
    key (a typo) is named before the "field required" that the typo causes, with the
    closest known field: ``unknown field, did you mean 'conversation'?``."""
    import difflib

    errors = exc.errors(include_url=False)
    chosen = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = tuple(chosen["loc"])
    explained = {id(chosen)}
    if chosen["type"] == "extra_forbidden":
        parent, key = loc[:-1], str(loc[-1])
        missing = [str(e["loc"][-1]) for e in errors
                   if e["type"] == "missing" and tuple(e["loc"][:-1]) == parent]
        known = list(dict.fromkeys([*missing, *_fields_at(model, parent)]))
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        msg = "unknown field"
        if close:
            msg += f", did you mean {printable(close[0])!r}?"
            explained |= {id(e) for e in errors if e["type"] == "missing"
                          and tuple(e["loc"]) == (*parent, close[0])}
    else:
        msg = printable(str(chosen["msg"]))
        msg = msg[:1].lower() + msg[1:]
        if msg.startswith("value error, "):
            msg = msg[len("value error, "):]
    more = sum(1 for e in errors if id(e) not in explained)
    if more:
        msg += f" (and {more} more error{'s' if more > 1 else ''})"
    return msg, loc


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
        _resolve_sources(case, doc.path.parent)
        out.append((case, prefix))
    return out


def _resolve_sources(case: Case, folder: Path) -> None:
    """Relative ``target.query.source`` paths are relative to the suite file."""
    for turn in case.conversation:
        q = turn.target.query if turn.target is not None else None
        if q is not None and q.source and not q.source.startswith(("http://", "https://")):
            q.source = ",".join(str((folder / p.strip()).resolve()) for p in q.source.split(","))


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
            id=q.id, name=q.question[:80],
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
RETRIEVAL_COLUMNS = ("question", "answer", "document_name", "dataset", "chunk_id", "content_hash")
CSV_KINDS = (
    ("a fields evaluation table", ("Question",), "and one ground-truth column per field"),
    ("a retrieval questions CSV", RETRIEVAL_COLUMNS, ""),
)
SUPPORTED_FORMATS = (
    "a .yaml/.yml file or a folder of them; a .jsonl of cases (a 'conversation' on each line); "
    "DABench questions .jsonl with --labels; BuildingQA .json; a retrieval questions .csv "
    f"({', '.join(RETRIEVAL_COLUMNS)}); a fields evaluation table .csv/.xlsx (Question and "
    "one column per field)"
)


def _near(name: str, header: list[str]) -> str | None:
    """The header cell that is a near miss for column ``name`` (case, typo), if any."""
    import difflib

    folded = {h.strip().lower(): h for h in header}
    if name.lower() in folded:
        return folded[name.lower()]
    close = difflib.get_close_matches(name.lower(), list(folded), n=1, cutoff=0.75)
    return folded[close[0]] if close else None


def missing_columns_error(path: Path, header: list[str], kind: str, required: tuple[str, ...],
                          extra: str = "") -> InputError:
    """``missing column content_hash (a retrieval questions CSV needs question, ...)`` with a
    did-you-mean for a header cell that nearly names a missing column."""
    present = set(header)
    missing = [c for c in required if c not in present]
    hints = []
    for col in missing:
        near = _near(col, [h for h in header if h not in required])
        if near is not None:
            hints.append(f"{printable(near)!r} for {col!r}")
    needs = f"{kind} needs {', '.join(required)}" + (f" {extra}" if extra else "")
    msg = f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} ({needs})"
    if hints:
        msg += f"; did you mean {', '.join(hints)}?"
    return InputError(msg, path=path, line=1)


def csv_kind(path: Path, header: list[str]) -> str:
    """``"retrieval"`` or ``"fields"`` when the header has every column of that kind, else
    the InputError naming what the closest kind misses."""
    if "content_hash" in header and all(c in header for c in RETRIEVAL_COLUMNS):
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


def load_suite(path: str | Path, *, labels: str | Path | None = None) -> Suite:
    """Load a suite from a path, choosing the reader from the path's form.

    * a folder, ``.yaml`` or ``.yml``: suite YAML;
    * ``.jsonl`` with ``labels``: DABench questions + labels;
    * ``.jsonl`` whose lines are cases (a ``conversation`` each): a JSONL suite (lazy);
    * ``.csv`` with a ``content_hash`` column: seed 002 retrieval questions;
    * ``.json``: BuildingQA QA JSON (text-to-SPARQL questions with gold queries);
    * ``.csv`` / ``.xlsx`` with a question column and ground-truth columns: seed 004's
      field-retrieval evaluation table.
    """
    from queryeval.io.files import check_input

    path = Path(path)
    if not path.exists():
        raise InputError("no such file or folder", path=path)
    if not path.is_dir():
        check_input(path, "suite-lines")  # a FIFO or a device is no suite, whatever its name
    if labels is not None:
        if path.is_dir() or path.suffix.lower() in YAML_SUFFIXES:
            raise InputError("--labels goes with a DABench questions .jsonl file, not a YAML suite",
                             path=path)
        if not Path(labels).exists():
            raise InputError("no such file", path=labels)
        return load_dabench_suite(path, labels)
    if path.is_dir() or path.suffix.lower() in YAML_SUFFIXES:
        return load_yaml_suite(path)
    if path.suffix.lower() == ".jsonl":
        from queryeval.suite.jsonl_cases import is_cases_jsonl, read_cases_jsonl

        first = is_cases_jsonl(path)
        if first is None:
            raise InputError("empty file: a JSONL suite needs one case (a JSON object with a "
                             "'conversation') per line", path=path)
        if first:
            return read_cases_jsonl(path)
        raise InputError("a DABench questions file needs its labels: add --labels LABELS.jsonl "
                         "(a suite of cases in JSONL has a 'conversation' on each line)", path=path)
    if path.suffix.lower() == ".json":
        from queryeval.suite.buildingqa import read_buildingqa

        return read_buildingqa(path)
    if path.suffix.lower() == ".csv":
        if csv_kind(path, _csv_header(path)) == "retrieval":
            from queryeval.suite.retrieval import read_questions_csv

            return read_questions_csv(path)
        from queryeval.suite.fields import load_fields_suite

        return load_fields_suite(path)
    if path.suffix.lower() == ".xlsx":
        from queryeval.suite.fields import load_fields_suite

        return load_fields_suite(path)
    raise InputError(f"unknown suite format {path.suffix or '(no extension)'!r}; supported: "
                     f"{SUPPORTED_FORMATS}", path=path)
