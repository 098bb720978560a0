"""A task's report files, from what the task says they hold (:meth:`Task.report_content`:
:class:`~queryeval.tasks.content.Workbook` and :class:`~queryeval.tasks.content.Export`
items; a run with repeats adds its ``Repeats`` sheet to the xlsx), then whatever the task
writes itself (:meth:`Task.write_reports`, the hook for user-registered tasks)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from queryeval.tasks.content import Export, Workbook


def _selection(path: Path, records: list[dict], metrics: dict, **options: Any) -> Path:
    from queryeval.report.selection_xlsx import write_selection_xlsx

    return write_selection_xlsx(path, records, metrics, **options)


def _answers(path: Path, records: list[dict], metrics: dict, **options: Any) -> Path:
    from queryeval.report.answers_xlsx import write_answers_xlsx

    return write_answers_xlsx(path, records, metrics, **options)


def _retrieval(path: Path, records: list[dict], metrics: dict, **options: Any) -> Path:
    from queryeval.report.retrieval_xlsx import write_retrieval_xlsx

    return write_retrieval_xlsx(path, records, metrics, **options)


def _fields(path: Path, records: list[dict], metrics: dict, **options: Any) -> Path:
    from queryeval.report.fields_xlsx import write_fields_xlsx

    return write_fields_xlsx(path, records, metrics, **options)


def _table(path: Path, records: list[dict], metrics: dict, **options: Any) -> Path:
    from queryeval.report.query_xlsx import write_query_xlsx

    return write_query_xlsx(path, records, metrics, **options)


def _freeform(path: Path, records: list[dict], metrics: dict, **options: Any) -> Path:
    from queryeval.report.freeform_xlsx import write_freeform_xlsx

    return write_freeform_xlsx(path, records, metrics, **options)


def _dabench(path: Path, data: Any) -> Path:
    from queryeval.export.dabench import write_dabench_analysis

    return write_dabench_analysis(path, data)


WORKBOOK_LAYOUTS: dict[str, Callable[..., Path]] = {
    "selection": _selection, "answers": _answers, "retrieval": _retrieval,
    "fields": _fields, "table": _table, "freeform": _freeform,
}
EXPORT_FORMATS: dict[str, Callable[[Path, Any], Path]] = {"dabench": _dabench}


def write_task_reports(task: Any, paths: Any, records: list[dict], metrics: dict) -> list[Path]:
    """Write every report file of ``task`` for one run (``paths``: its
    :class:`~queryeval.run.log.RunPaths`); returns the files written."""
    written: list[Path] = []
    for item in task.report_content(records, metrics):
        if isinstance(item, Workbook):
            if item.layout not in WORKBOOK_LAYOUTS:
                raise ValueError(f"unknown workbook layout {item.layout!r}; known: "
                                 + ", ".join(sorted(WORKBOOK_LAYOUTS)))
            written.append(WORKBOOK_LAYOUTS[item.layout](paths.report_xlsx, records, metrics,
                                                         **dict(item.options)))
        elif isinstance(item, Export):
            if item.fmt not in EXPORT_FORMATS:
                raise ValueError(f"unknown export format {item.fmt!r}; known: "
                                 + ", ".join(sorted(EXPORT_FORMATS)))
            name = item.filename.replace("{batch_id}", paths.batch_id)
            written.append(EXPORT_FORMATS[item.fmt](paths.folder / name, item.data))
        else:
            raise TypeError(f"report_content items are Workbook or Export, not {type(item).__name__}")
    if "repeats" in metrics and paths.report_xlsx.exists():  # a run with --repeats
        from queryeval.report.repeats_xlsx import add_repeats_sheet

        add_repeats_sheet(paths.report_xlsx, metrics["repeats"])
    written += [Path(p) for p in task.write_reports(paths, records, metrics)]
    return written
