"""Cases given in memory (dicts, :class:`~queryeval.suite.models.Case` objects, a pandas
DataFrame) become a cases-JSONL suite file, so a run from Python is the same run as one from
the command line: same reader, same hash, resumable, re-scorable.

Every case is checked first; a problem is one :class:`~queryeval.errors.InputError` naming
the case's index and the field, e.g. ``cases[3].conversation[0].target: field required``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from queryeval.errors import InputError
from queryeval.suite.models import Case
from queryeval.suite.yamlsrc import format_loc, printable


def _is_dataframe(obj: Any) -> bool:
    return type(obj).__module__.startswith("pandas") and hasattr(obj, "to_dict") \
        and hasattr(obj, "columns")


def _missing(value: Any) -> bool:
    """A DataFrame's empty cell (NaN / None / NaT)."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return type(value).__name__ in ("NaTType", "NAType")


def _from_dataframe(frame: Any) -> list[dict]:
    """One case per row; empty cells are left out (so optional fields take their default).

    Besides the case fields (``id``, ``name``, ``tags``, ``conversation``, …) a row may give a
    single-turn case as ``question`` + ``target`` columns."""
    rows = []
    for row in frame.to_dict(orient="records"):
        item = {str(k): v for k, v in row.items() if not _missing(v)}
        if "conversation" not in item and "question" in item:
            turn: dict[str, Any] = {"role": "user", "content": item.pop("question")}
            if "target" in item:
                turn["target"] = item.pop("target")
            item["conversation"] = [turn]
        if "id" in item and not isinstance(item["id"], str):
            item["id"] = str(item["id"])
        rows.append(item)
    return rows


def _message(exc: ValidationError) -> tuple[str, str]:
    errors = exc.errors(include_url=False)
    first = errors[0]
    msg = printable(first["msg"])
    msg = "unknown field" if first["type"] == "extra_forbidden" else msg[:1].lower() + msg[1:]
    if len(errors) > 1:
        msg += f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''})"
    return format_loc(first["loc"]), msg


def _absolute_sources(case: Case) -> Case:
    """Relative ``target.query.source`` paths are relative to the current directory (there is
    no suite file to be relative to); made absolute before the cases are written elsewhere."""
    for turn in case.conversation:
        q = turn.target.query if turn.target is not None else None
        if q is not None and q.source and not q.source.startswith(("http://", "https://")):
            q.source = ",".join(str(Path(p.strip()).resolve()) for p in q.source.split(","))
    return case


def check_cases(cases: Any, name: str = "cases") -> list[Case]:
    """Validate in-memory cases; raise InputError naming ``cases[i].field`` for the first
    bad one."""
    if _is_dataframe(cases):
        items: Iterable[Any] = _from_dataframe(cases)
    elif isinstance(cases, (str, bytes, Mapping)) or not isinstance(cases, Iterable):
        raise InputError(f"expected a suite path, a list of cases or a DataFrame, got "
                         f"{type(cases).__name__}", field=name)
    else:
        items = cases
    out: list[Case] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        where = f"{name}[{i}]"
        if isinstance(item, Case):
            case = item.model_copy(deep=True)
        elif isinstance(item, Mapping):
            try:
                case = Case.model_validate(dict(item))
            except ValidationError as exc:
                loc, msg = _message(exc)
                raise InputError(msg, field=f"{where}.{loc}" if loc else where) from None
        else:
            raise InputError(f"a case must be a mapping or a Case, got {type(item).__name__}",
                             field=where)
        if case.id in seen:
            raise InputError(f"duplicate case id {case.id!r} (first at {name}[{seen[case.id]}])",
                             field=f"{where}.id")
        seen[case.id] = i
        _check_json(case.model_dump(mode="python", exclude_unset=True), where)
        out.append(_absolute_sources(case))
    if not out:
        raise InputError("no cases given", field=name)
    return out


def _check_json(value: Any, where: str) -> None:
    """The first value a JSON suite could not hold (an object, a NaN or infinity, a key that
    is not text) as an InputError naming its place, as a suite file's reader would refuse
    it; in-memory cases are never stored differently from what was given."""
    import math

    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            raise InputError(f"{v!r} is not a finite number", field=path)
        if isinstance(v, Mapping):
            for k, item in v.items():
                if not isinstance(k, str):
                    raise InputError(f"key {k!r} is not text", field=path)
                stack.append((f"{path}.{k}", item))
        elif isinstance(v, (list, tuple)):
            stack.extend((f"{path}[{j}]", item) for j, item in enumerate(v))
        elif v is not None and not isinstance(v, (str, int, float, bool)):
            raise InputError(f"not a JSON value ({type(v).__name__})", field=path)


def _write_addressed(folder: Path, prefix: str, lines: list[str]) -> Path:
    """``lines`` as ``folder/<prefix>-<sha256 prefix>.jsonl`` (content-addressed: the same
    lines give the same file, left alone when it is already there)."""
    data = "".join(lines).encode("utf-8")
    path = folder / f"{prefix}-{hashlib.sha256(data).hexdigest()[:16]}.jsonl"
    if not path.is_file() or path.read_bytes() != data:
        from queryeval.io.atomic import write_text_atomic
        from queryeval.io.writing import writing

        folder.mkdir(parents=True, exist_ok=True)
        with writing(path):
            write_text_atomic(path, data.decode("utf-8"))
    return path


def write_cases(cases: list[Case], folder: Path) -> Path:
    """Write checked cases as ``folder/cases-<sha256 prefix>.jsonl`` (content-addressed: the
    same cases give the same file, so a run over them can be resumed) and return its path."""
    lines = [c.model_dump_json(exclude_unset=True) + "\n" for c in cases]
    return _write_addressed(folder, "cases", lines)


def is_hf_dataset(obj: Any) -> bool:
    """A ``datasets.Dataset`` or ``DatasetDict`` (told without importing datasets)."""
    return type(obj).__module__.startswith("datasets.") and type(obj).__name__ in (
        "Dataset", "DatasetDict", "IterableDataset")


def write_dataset(dataset: Any, folder: Path) -> Path:
    """A ``datasets.Dataset`` written as ``folder/dataset-<sha256 prefix>.jsonl``, one row a
    line, so the suite loader tells its format from its columns (docs/formats.md) as it does
    for the same rows saved to disk."""
    import json

    if type(dataset).__name__ != "Dataset":
        raise InputError(f"a {type(dataset).__name__}: pass one split's Dataset, e.g. "
                         "dataset['test']", field="suite")
    lines = []
    for i, row in enumerate(dataset.to_list()):
        try:
            lines.append(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
        except (TypeError, ValueError) as exc:
            raise InputError(f"not a JSON value: {exc}", field=f"suite[{i}]") from None
    if not lines:
        raise InputError("the dataset has no rows", field="suite")
    return _write_addressed(folder, "dataset", lines)
