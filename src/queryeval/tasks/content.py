"""What a task's reports show, described as data; the report layer renders it.

A task says *what* its console summary and its report files hold (:meth:`Task.summary`,
:meth:`Task.report_content`) with these small records; ``queryeval.report`` decides *how*
(rich tables, xlsx layouts, export formats). So tasks never import the report layer, and
the imports flow one way: tasks -> run -> report.

* Console summary: a list of :class:`Overall`, :class:`Groups` and :class:`Note`.
* Report files: a list of :class:`Workbook` (the xlsx beside the run log, in one of the
  report layer's layouts) and :class:`Export` (a file in another tool's format).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Overall:
    """The run's overall figures (``metrics["overall_metrics"]``): ``keys`` in that order
    (None: every scalar figure)."""

    keys: Sequence[str] | None = None
    title: str = "Overall"


@dataclass(frozen=True)
class Groups:
    """One table of per-group figures: a row per group of ``groups`` (name -> figures), a
    column per name in ``columns``; ``label`` names the grouping (``By <label>``)."""

    groups: Mapping[str, Mapping[str, Any]]
    label: str
    columns: Sequence[str]


@dataclass(frozen=True)
class Note:
    """A sentence the reader must not miss (``warning``) or should know (``info``)."""

    text: str
    level: Literal["warning", "info"] = "info"


@dataclass(frozen=True)
class Workbook:
    """The task's xlsx report in the report layer's ``layout`` (``selection``, ``answers``,
    ``retrieval``, ``fields``, ``table`` …); ``options`` are what that layout needs from
    the task (e.g. the columns and row function of the ``table`` layout)."""

    layout: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Export:
    """A file in another tool's format beside the run log: ``fmt`` names the format (e.g.
    ``dabench``), ``data`` is what it is written from, ``filename`` its name in the run's
    folder (``{batch_id}`` is replaced by the run's id)."""

    fmt: str
    filename: str
    data: Any


Section = Overall | Groups | Note
ReportItem = Workbook | Export
