"""The reports of one finished run: the task's files (the xlsx in its layout, exports, a
``Repeats`` sheet for a run with repeats) and the HTML page.

The run layer never imports this module: whoever starts a run and wants its reports
(``qe.evaluate``, ``qe.resume``, ``queryeval rescore``) passes :func:`write_run_reports` as
the run's ``reporter``, and the run layer calls it once the run log is complete (the data
flows one way: run log -> reports)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from queryeval.errors import OutputError
from queryeval.io.writing import release_quietly
from queryeval.report.task_reports import write_task_reports
from queryeval.run.log import RunLog

REPORT_CASE_LIMIT = 100_000
"""Above this many cases a run writes no xlsx/HTML report by itself (they hold every case in
memory, and Excel stops at 1,048,576 rows); ``queryeval report RUN`` still writes them."""


def written_file(exc: OSError, fallback: Path) -> Path:
    """The file a failed report write was for: the error's own file name, mapped back from
    the temporary file of an atomic write (``.NAME.XXXX.tmp``) to ``NAME``; else ``fallback``."""
    if not exc.filename:
        return fallback
    path = Path(str(exc.filename))
    name = path.name
    if name.startswith(".") and name.endswith(".tmp") and name.count(".") >= 3:
        return path.with_name(name[1:-len(".tmp")].rsplit(".", 1)[0])
    return path


@contextlib.contextmanager
def reporting(fallback: Path) -> Iterator[None]:
    """An ``OSError`` while writing a report becomes one :class:`OutputError` line."""
    try:
        yield
    except OSError as exc:
        error = OutputError.from_os(written_file(exc, fallback), exc)
        release_quietly(exc)
        raise error from None


def write_run_reports(log: RunLog, task: Any, records: Any, metrics: dict,
                      warnings: list[str] | None = None) -> list[Path]:
    """Write the reports of a finished run (``records``: its records in suite order). Above
    :data:`REPORT_CASE_LIMIT` cases nothing is written and a line goes to ``warnings``."""
    if len(records) > REPORT_CASE_LIMIT:
        if warnings is not None:
            warnings.append(f"{len(records):,} cases: no xlsx/HTML report written (more than "
                            f"{REPORT_CASE_LIMIT:,}); `queryeval report {log.paths.batch}` "
                            "writes them")
        return []
    with reporting(log.paths.report_xlsx):
        written = write_task_reports(task, log.paths, list(records), metrics)
    from queryeval.report.html import write_html_report

    html = log.paths.folder / f"report_{log.paths.batch_id}.html"
    with reporting(html):
        written.append(Path(write_html_report(log.paths.batch)))
    return written
