"""One error tree for queryeval.

Every error a user can cause carries its context (file, line or record, field) so the CLI
can print exactly one line and exit with code 2. Errors raised by the system under test are
*not* in this tree's user-facing branch: they are recorded on the case (see
:class:`SystemCallError`) and the run goes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class QueryevalError(Exception):
    """Base of every error queryeval raises on purpose."""

    exit_code = 1


class InputError(QueryevalError):
    """Bad user input: a file, a record in it, a field in the record.

    ``str(err)`` is the one line the CLI prints, e.g.
    ``cases/mex.yaml:12: conversation[0].target...values[0].id: field required``.
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
        record: str | None = None,
    ) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        self.record = record
        super().__init__(self.format())

    def format(self) -> str:
        where = ""
        if self.path:
            where = self.path.replace("\n", "\\n")  # a file name's newline: still one line
            if self.line is not None:
                where += f":{self.line}"
            elif self.record is not None:
                where += f": record {self.record}"
        elif self.record is not None:
            where = f"record {self.record}"
        parts = [p for p in (where, self.field) if p]
        return ": ".join([*parts, self.message])


class ConfigError(QueryevalError):
    """A bad option or combination of options (also exit code 2)."""

    exit_code = 2


class OutputError(QueryevalError):
    """Writing the run log or a report failed (disk full, read-only folder, ...): exit code 2.

    ``str(err)`` is one line naming the file and the operating system's reason, e.g.
    ``cannot write runs/2024-05-01/results_x.jsonl: No space left on device``. What was
    written before stays readable, and ``queryeval run --resume`` continues from it.
    """

    exit_code = 2

    def __init__(self, path: str | Path, reason: str, *, action: str = "write") -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"cannot {action} {self.path}: {reason}")

    @classmethod
    def from_os(cls, path: str | Path, exc: OSError, *, action: str = "write") -> OutputError:
        """Build from an ``OSError``: the reason is its ``strerror`` (``No space left on
        device``, ``Permission denied``, ...), falling back to the exception's text."""
        reason = exc.strerror or str(exc) or type(exc).__name__
        return cls(path, reason, action=action)


class SystemCallError(QueryevalError):
    """A call to the system under test failed.

    ``kind`` is one of: ``exception``, ``timeout``, ``connection``, ``http_status``,
    ``malformed``, ``missing``, ``process``. ``retryable`` tells the runner whether another
    attempt may succeed.
    """

    def __init__(self, kind: str, message: str, *, retryable: bool = False,
                 retry_after: float | None = None) -> None:
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after
        super().__init__(f"{kind}: {message}")

    def to_dict(self) -> dict:
        return {"kind": self.kind, "message": self.message}


class GateFailure(QueryevalError):
    """A quality gate (``--fail-under``, ``--fail-on-regression``) was not met."""

    exit_code = 1


NAME_CHARS = 80
"""The longest name :func:`one_line` shows in full by default (longer: cut, with ``…``)."""


def one_line(name: Any, limit: int | None = NAME_CHARS) -> str:
    """A name (or a line holding names) as one line: as written when it is printable (and
    at most ``limit`` characters), else Python's repr of it (of its first ``limit``
    characters) — newlines, tabs, ESC, C1 and bidirectional controls shown as escapes
    (``'B\\n::error::spoof'``), so that no name from a run log, a suite or a system can
    break a line or start one (``::error::`` is a GitHub Actions command)."""
    text = str(name)
    if text.isprintable() and (limit is None or len(text) <= limit):
        return text
    return repr(text if limit is None or len(text) <= limit else text[:limit - 1] + "…")
