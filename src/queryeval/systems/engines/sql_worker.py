"""The SQL worker process: one locked-down sqlite or DuckDB connection, capped memory.

``python -m queryeval.systems.engines.sql_worker DIALECT PATH MEMORY_BYTES THREADS``
(0 means "no cap" / "default"). It sets ``RLIMIT_DATA`` to ``MEMORY_BYTES`` first (heap
and anonymous mappings: an allocation past it fails instead of swapping the machine; the
database file itself is read through the page cache and does not count), opens the
database as :class:`.sql.SqliteSession` / :class:`.sql.DuckDBSession`, then answers
requests with the framing of :mod:`.sparql_worker`: ``("ok", {"columns", "rows",
"truncated", "engine_ms"})`` or ``("error", {"kind", "reason", "syntax_error"?})``.
The parent kills it when a query overruns its deadline (see :mod:`.sql`).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any


def handle(session: Any, request: dict[str, Any]) -> tuple[str, Any]:
    """Run one request; never raises (errors become replies)."""
    from queryeval.systems.engines.base import QueryExecutionError

    start = time.perf_counter()
    try:
        columns, rows, truncated = session.run(
            request["query"], float(request["timeout_s"]), int(request["max_rows"]),
            frozenset(request.get("table_functions") or ()))
    except QueryExecutionError as exc:
        return ("error", exc.to_dict())
    except MemoryError:
        return ("error", {"kind": "failed", "reason": "out of memory (worker cap)"})
    except Exception as exc:  # noqa: BLE001 - an engine error must become a reply
        return ("error", {"kind": "failed", "reason": f"{type(exc).__name__}: {exc}"})
    return ("ok", {"columns": columns, "rows": rows, "truncated": truncated,
                   "engine_ms": (time.perf_counter() - start) * 1000.0})


def worker_main(dialect: str, path: str, memory: int, threads: int) -> int:
    from queryeval.systems.engines.sparql_worker import _EOF, cap_memory, read_frame, write_frame

    channel_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints go to stderr
    channel_in = sys.stdin.buffer
    try:
        cap_memory(memory)
        from queryeval.systems.engines.sql import DuckDBSession, SqliteSession

        if dialect == "sqlite":
            session: Any = SqliteSession(Path(path))
        else:
            session = DuckDBSession(Path(path), threads=threads or None,
                                    memory_limit_bytes=memory or None)
        write_frame(channel_out, ("ready", 0))
    except Exception as exc:  # noqa: BLE001
        write_frame(channel_out, ("fatal", f"{type(exc).__name__}: {exc}"))
        return 1
    while True:
        request = read_frame(channel_in)
        if request is _EOF or request is None:
            session.close()
            return 0
        write_frame(channel_out, handle(session, request))


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] not in ("sqlite", "duckdb"):
        sys.stderr.write("usage: python -m queryeval.systems.engines.sql_worker "
                         "sqlite|duckdb PATH MEMORY_BYTES THREADS\n")
        sys.exit(2)
    sys.exit(worker_main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
