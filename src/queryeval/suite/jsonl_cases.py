"""A suite as JSON Lines: one case per line, the same fields as a YAML case document.

    {"id": "c1", "tags": ["gdp"], "conversation": [{"role": "user", "content": "...",
     "target": {"indicator_selection": [...]}}]}

The form for suites too large for YAML (a YAML document is parsed whole; a JSONL suite of a
million cases is read one line at a time). The suite is lazy: loading checks every line and
that ids are unique, keeping only the count, the task kinds and 24 bytes per id; a run reads
the lines again as it goes. Every error names the file, the line and the field.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from queryeval.errors import InputError
from queryeval.io.jsonl import iter_jsonl
from queryeval.suite.common import Suite, first_error, lazy_suite, resolve_sources
from queryeval.suite.models import Case
from queryeval.suite.yamlsrc import format_loc


def is_cases_jsonl(path: Path) -> bool | None:
    """Whether the first non-blank line of ``path`` is an object with a ``conversation``
    (a case), as opposed to a DABench question; None for a file with no line at all. A first
    line that is no JSON object is reported as the error it is."""
    for _line, value in iter_jsonl(path, strict=True):
        return "conversation" in value
    return None


def _case(obj: dict, path: Path, line: int) -> Case:
    try:
        case = Case.model_validate(obj)
    except ValidationError as exc:
        msg, loc = first_error(exc)
        raise InputError(msg, path=path, line=line, field=format_loc(loc) or None) from None
    resolve_sources(case, path.parent)
    return case


def iter_cases_jsonl(path: Path) -> Iterator[tuple[int, Case]]:
    """``(line, case)`` for every non-blank line."""
    for line, obj in iter_jsonl(path, strict=True):
        yield line, _case(obj, path, line)


def read_cases_jsonl(path: str | Path) -> Suite:
    path = Path(path)
    return lazy_suite(path, iter_cases_jsonl, empty="suite has no cases", duplicate_field="id",
                      duplicate=lambda cid, first: f"duplicate case id {cid!r} (first defined at {path}:{first})")
