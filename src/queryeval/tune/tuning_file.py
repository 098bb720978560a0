"""The file ``queryeval tune --json`` writes and ``queryeval run --tuning`` reads (rows of
``Field Name``, ``N``, ``Model``, ...: :mod:`queryeval.report.tuning`)."""

from __future__ import annotations

import json
from pathlib import Path

from queryeval.errors import InputError


def load_tuning(path: str | Path) -> dict[str, dict]:
    """``{field: {"n": N, "model": model}}`` from a ``queryeval tune --json`` file (its
    ``rows``); one :class:`~queryeval.errors.InputError` line naming the file when it is missing,
    not a regular file, or not such a file."""
    from queryeval.io.files import read_input_bytes

    p = Path(path)
    try:
        doc = json.loads(read_input_bytes(p, "tuning").decode("utf-8"))
        rows = doc["rows"]
        return {str(r["Field Name"]): {"n": int(r["N"]), "model": str(r["Model"])} for r in rows}
    except FileNotFoundError:
        raise InputError("file not found", path=p) from None
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError) as exc:
        raise InputError(f"not a 'queryeval tune --json' file: {exc}", path=p) from None
