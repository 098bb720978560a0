"""What every suite reader shares: the :class:`Suite` it returns, lazy suites, input hashes,
source paths, and the one-line errors for a bad record or a CSV header. The readers
(``jsonl_cases``, ``retrieval``, ``fields``, ``buildingqa``, ``dabench``) import this module;
only the dispatcher (``loader``) imports the readers, so no reader imports its dispatcher."""

from __future__ import annotations

import hashlib
import types
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from queryeval.errors import InputError
from queryeval.suite.models import Case
from queryeval.suite.yamlsrc import printable


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
               kinds: set[str] | None = None,
               ids: Callable[[Path], Iterator[tuple[int, str]]] | None = None) -> Suite:
    """A lazy suite over a line-based file: one checking pass now (every bad line, no case at
    all, and a repeated id are one InputError naming the line; ids are checked through their
    128-bit keys, :mod:`queryeval.io.idindex`, not a set), then ``read`` again on each pass.
    ``read(path)`` yields ``(line, case)``; ``duplicate(id, first_line)`` words the error.
    ``ids(path)``, given with ``kinds``, yields ``(line, case id)`` as ``read`` yields the
    cases, checking every line without building a case: the checking pass reads it instead
    (for a reader whose every accepted line makes a valid case)."""
    from queryeval.io.idindex import KeyBuilder

    keys = KeyBuilder()
    found: set[str] = set()
    if ids is not None and kinds is not None:
        for line, case_id in ids(path):
            keys.add(case_id, line)
    else:
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


def resolve_sources(case: Case, folder: Path) -> None:
    """Relative ``target.query.source`` paths are relative to the suite file; a URL (an
    endpoint, ``postgresql://…``) is left as it is."""
    from queryeval.io.urls import is_url

    for turn in case.conversation:
        q = turn.target.query if turn.target is not None else None
        if q is not None and q.source and not is_url(q.source):
            q.source = ",".join(str((folder / p.strip()).resolve()) for p in q.source.split(","))


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
