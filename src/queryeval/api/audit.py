"""``qe.audit``: the suite health check of ``queryeval audit`` (docs/audit.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from queryeval.tasks.audit_model import AuditReport, Finding

__all__ = ["AuditReport", "Finding", "audit"]


def audit(suite: str | os.PathLike, *, source: str | os.PathLike | None = None,
          labels: str | os.PathLike | None = None, corpus: str | os.PathLike | None = None,
          runs: list[Any] | None = None, pin: bool = False,
          write_platinum: str | os.PathLike | None = None, timeout_s: float = 30.0,
          max_rows: int = 100_000, test_suite: int = 0,
          store_dir: str | os.PathLike | None = None, cache: bool = True) -> AuditReport:
    """Audit ``suite`` as ``queryeval audit`` does and return the same report:
    ``.findings`` (each with ``case_id``, ``kind``, ``severity``, ``evidence``, ``fix``),
    ``.summary`` (the share of cases with a finding, by kind) and ``.golds`` (query golds'
    executions). ``source``: the database, graph or endpoint of query cases that name none;
    ``runs``: runs of the suite (``qe.Run`` or paths) for ``consensus_failure``; ``pin``:
    write ``<suite>.pins.json``; ``write_platinum``: a file for the cases with no finding;
    ``cache=False``: execute every gold now (times measured now) and refresh the cache of gold
    results (``--no-cache``)."""
    from queryeval.api.evaluate import load
    from queryeval.api.run import Run
    from queryeval.tasks.audit import audit_suite

    options: dict[str, Any] = {"timeout_s": timeout_s, "max_rows": max_rows}
    if source is not None:
        options["source"] = str(source)
    if store_dir is not None:
        options["store_dir"] = str(store_dir)
    return audit_suite(Path(suite), labels=labels, corpus=corpus, query_options=options,
                       neighbours=test_suite,
                       runs=[r if isinstance(r, Run) else load(r) for r in runs or []], pin=pin,
                       platinum=write_platinum, cache=cache)
