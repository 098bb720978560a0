"""Which format a record's fields say a file is in.

Each format is named by the fields it needs (``required``: all of them) and the fields that
tell it apart (``any_of``: at least one, when given). A file's first record (a JSONL line,
a JSON array's first item, a table's header, a dataset's columns) is matched against every
format: exactly one match is the format; two or more is *ambiguous* and none is *unknown*,
each one clear line naming the closest format and the fields it misses (docs/formats.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from queryeval.errors import InputError
from queryeval.suite.yamlsrc import printable


@dataclass(frozen=True)
class Format:
    key: str
    name: str
    required: tuple[str, ...]
    any_of: tuple[str, ...] = ()
    fallback: bool = False
    """Matches only when no other format does (DABench's ``id`` + ``question`` is in many)."""

    def matches(self, fields: set[str]) -> bool:
        return all(f in fields for f in self.required) and (
            not self.any_of or any(f in fields for f in self.any_of))

    def overlap(self, fields: set[str]) -> int:
        return sum(f in fields for f in (*self.required, *self.any_of))

    def missing(self, fields: set[str]) -> list[str]:
        out = [f for f in self.required if f not in fields]
        if self.any_of and not any(f in fields for f in self.any_of):
            out.append("one of " + ", ".join(self.any_of))
        return out

    def describe(self) -> str:
        parts = list(self.required)
        if self.any_of:
            parts.append(f"and one of {', '.join(self.any_of)}")
        return f"{self.name} ({', '.join(parts)})"


RAGAS = Format("ragas", "a ragas EvaluationDataset", ("user_input",),
               ("retrieved_contexts", "reference_contexts", "response", "reference"))
RAGAS_V01 = Format("ragas_v01", "a ragas 0.1 dataset", ("question",), ("ground_truth", "contexts"))
DEEPEVAL = Format("deepeval", "DeepEval goldens/test cases", ("input",),
                  ("expected_output", "actual_output", "context", "retrieval_context"))
INSPECT = Format("inspect", "inspect_ai samples", ("input", "target"))
OPENAI_EVALS = Format("openai_evals", "OpenAI evals samples", ("input", "ideal"))
CASES = Format("cases", "queryeval cases", ("id", "conversation"))
QUESTIONS = Format("questions", "queryeval retrieval questions", ("question",),
                   ("chunk_id", "content_hash"))
DABENCH = Format("dabench", "DABench questions", ("id", "question"), fallback=True)
BUILDINGQA = Format("buildingqa", "BuildingQA QA JSON", ("building_id", "queries"))

FORMATS = (RAGAS, DEEPEVAL, INSPECT, OPENAI_EVALS, CASES, QUESTIONS, RAGAS_V01, DABENCH, BUILDINGQA)


def detect(fields: Iterable[str], *, path: Path, where: dict | None = None,
           formats: tuple[Format, ...] = FORMATS, what: str = "suite") -> Format:
    """The one format whose fields ``fields`` has; else one InputError line."""
    have = {str(f) for f in fields}
    found = [f for f in formats if f.matches(have) and not f.fallback] or [
        f for f in formats if f.matches(have) and f.fallback]
    if len(found) == 1:
        return found[0]
    shown = printable(", ".join(sorted(have)))[:200] or "(none)"
    if found:
        names = " and ".join(f.describe() for f in found[:2])
        raise InputError(f"ambiguous {what} format: its fields ({shown}) fit both {names}; "
                         "drop the fields of the one it is not (docs/formats.md)",
                         path=path, **(where or {}))
    closest = max(formats, key=lambda f: (f.overlap(have), -formats.index(f)))
    if closest.overlap(have) == 0:
        raise InputError(f"unknown {what} format: fields {shown} fit none of the known formats "
                         f"(e.g. {RAGAS.describe()}; see docs/formats.md)", path=path,
                         **(where or {}))
    raise InputError(f"unknown {what} format: closest is {closest.describe()}, missing "
                     f"{'; '.join(closest.missing(have))} (fields: {shown}; see docs/formats.md)",
                     path=path, **(where or {}))
