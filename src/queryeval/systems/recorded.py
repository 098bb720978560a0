"""Recorded outputs as the system under test (``--responses FILE.jsonl``).

Each line records one answer: ``{"case_id": ..., "turn": ..., <task fields>}``. The task
decides how a line is read (:meth:`queryeval.tasks.base.Task.read_recorded_line`); this
module streams the file, reports bad lines with their line number, checks that every line
fits the suite, and answers requests by (case id, turn).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from queryeval.errors import InputError, SystemCallError
from queryeval.io.jsonl import iter_records
from queryeval.suite.yamlsrc import format_loc, printable

if TYPE_CHECKING:
    from queryeval.tasks.base import Task

Key = tuple[str, "int | None"]


def _turn(value: Any, path: Path, lineno: int) -> int | None:
    """A line's ``turn``: an integer, or absent. A CSV cell is text, so digits are read as
    an integer there and an empty cell as absent."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, str) and value.strip().isdigit() and value.strip().isascii():
        return int(value)
    if isinstance(value, str) and not value.strip():
        return None
    raise InputError(f"must be an integer, got {type(value).__name__}",
                     path=path, line=lineno, field="turn")


class RecordedSystem:
    def __init__(self, path: Path, entries: dict[Key, Any], lines: dict[Key, int]) -> None:
        self.path = path
        self.name = f"responses:{path}"
        self.entries = entries
        self.lines = lines

    @classmethod
    def load(cls, path: str | Path, task: Task) -> RecordedSystem:
        path = Path(path)
        entries: dict[Key, Any] = {}
        lines: dict[Key, int] = {}
        for lineno, obj in iter_records(path):
            try:
                case_id, turn, output = task.read_recorded_line(obj)
            except ValidationError as exc:
                err = exc.errors(include_url=False)[0]
                msg = printable(err["msg"][:1].lower() + err["msg"][1:])
                raise InputError(msg, path=path, line=lineno, field=format_loc(err["loc"]) or None) from None
            except (KeyError, TypeError, ValueError) as exc:
                raise InputError(printable(str(exc).strip("'\"")), path=path, line=lineno) from None
            turn = _turn(turn, path, lineno)
            key = (case_id, turn)
            if key in entries:
                raise InputError(
                    f"duplicate response for case {case_id!r}"
                    + (f" turn {turn}" if turn is not None else "")
                    + f" (first at line {lines[key]})",
                    path=path, line=lineno, field="case_id",
                )
            entries[key] = output
            lines[key] = lineno
        return cls(path, entries, lines)

    def bind(self, requests_by_case: dict[str, list[int]]) -> list[str]:
        """Check the file against the suite's scored turns; returns warnings.

        A line for a turn that is not scored is an error (it names the line); a line
        without ``turn`` is accepted for a case with exactly one scored turn. Lines for case
        ids not in the suite are ignored with a warning (a subset of a suite may be run).
        """
        warnings = []
        unknown = 0
        for (case_id, turn), lineno in list(self.lines.items()):
            turns = requests_by_case.get(case_id)
            if turns is None:
                unknown += 1
                continue
            if turn is None:
                if len(turns) != 1:
                    raise InputError(
                        f"turn is required: case {case_id!r} has {len(turns)} scored turns {turns}",
                        path=self.path, line=lineno, field="turn",
                    )
                self.entries[(case_id, turns[0])] = self.entries.pop((case_id, None))
                self.lines[(case_id, turns[0])] = self.lines.pop((case_id, None))
            elif turn not in turns:
                raise InputError(
                    f"turn {turn} of case {case_id!r} is not a user turn with a target "
                    f"(scored turns: {turns})",
                    path=self.path, line=lineno, field="turn",
                )
        if unknown:
            warnings.append(f"{self.path}: {unknown} response(s) for case ids not in the suite were ignored")
        return warnings

    def call(self, request: dict, timeout: float | None) -> Any:
        key = (request["case_id"], request.get("turn"))
        if key not in self.entries:
            raise SystemCallError("missing", f"no recorded response in {self.path.name}")
        return self.entries[key]

    def close(self) -> None:
        pass
