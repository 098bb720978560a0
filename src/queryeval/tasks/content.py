"""What a task's reports show, described as data; the report layer renders it.

A task says *what* its console summary and its report files hold (:meth:`Task.summary`,
:meth:`Task.report_content`) with these small records; ``queryeval.report`` decides *how*
(rich tables, xlsx layouts, export formats). So tasks never import the report layer, and
the imports flow one way: tasks -> run -> report.

* Console summary: a list of :class:`Overall`, :class:`Groups` and :class:`Note`.
* Report files: a list of :class:`Workbook` (the xlsx beside the run log, in one of the
  report layer's layouts) and :class:`Export` (a file in another tool's format).
* What each figure is: :class:`Figures` (``Task.figures``): which keys of the metrics are
  settings, timings, older names of another figure, or not on [0, 1], so no renderer
  guesses from a name or a value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Overall:
    """The run's overall figures (``metrics["overall_metrics"]``): ``keys`` in that order
    (None: every scalar figure); ``what`` heads the names' column (``metric``, ``timing``)."""

    keys: Sequence[str] | None = None
    title: str = "Overall"
    what: str = "metric"


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


_LABEL = re.compile(r" \((?:hit rate|mean over repeats)\)$")


def bare_name(shown: str) -> str:
    """A figure's key from the name a page shows (``recall_at_k (hit rate)`` ->
    ``recall_at_k``, ``successful_retrievals (mean over repeats)`` -> ``successful_retrievals``)."""
    return _LABEL.sub("", shown)


@dataclass(frozen=True)
class Figures:
    """What a task's figures are (keys of ``overall_metrics`` and of each group's figures; a
    nested figure by its last name, e.g. ``avg_score_incorrect``).

    * ``settings``: how the run was scored (``k``, ``match``, ``rules``), stored beside the
      figures: named with the Overall heading, never listed, charted or compared as metrics.
    * ``timings``: durations (``mean_retrieval_time_ms``): listed apart from the metrics.
    * ``aliases``: an older name -> the figure it repeats (``recall_at_k`` -> ``recall@{k}``,
      ``{k}`` the run's ``k``): the figure is listed once, under its own name.
    * ``unbounded``: figures not on [0, 1] although a value may fall there (a retriever's
      similarity score): listed, never drawn on a [0, 1] chart.
    * ``counts``: counts (cases, questions, passes): an int in a plain run's metrics, but the
      mean over the attempts in a run with repeats (``successful_retrievals`` 43.6), so
      their JSON type does not tell them from a rate; never drawn on a [0, 1] chart nor
      taken for a headline rate.
    * ``labels``: an older name -> what it is, shown beside it wherever the older name is
      listed (``recall_at_k`` -> ``hit rate``: ``recall_at_k (hit rate)``, beside
      ``recall@10`` when the two differ); the metrics file keeps the name.
    * ``headline``: the figures that lead the Overall lists, in this order (``recall@{k}``,
      ``hit_rate@{k}``, ``mrr@{k}``, ``ndcg@{k}``; ``{k}`` the run's k); the others follow
      in their order.
    """

    settings: tuple[str, ...] = ()
    timings: tuple[str, ...] = ()
    aliases: Mapping[str, str] = field(default_factory=dict)
    unbounded: tuple[str, ...] = ()
    counts: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    headline: tuple[str, ...] = ()

    def kind(self, key: str) -> str:
        """``setting``, ``timing``, ``alias``, ``unbounded``, ``count`` or ``metric`` for a
        figure's key (a dotted key is judged by its last part; a shown name's label in
        parentheses, ``recall_at_k (hit rate)``, is not part of it)."""
        last = bare_name(str(key)).rsplit(".", 1)[-1]
        for kind, names in (("setting", self.settings), ("timing", self.timings),
                            ("alias", self.aliases), ("unbounded", self.unbounded),
                            ("count", self.counts)):
            if key in names or last in names:
                return kind
        return "metric"

    def chartable(self, key: str) -> bool:
        """Whether a figure may be drawn on a [0, 1] chart (its values must be rates too)."""
        return self.kind(key) == "metric"


Section = Overall | Groups | Note
ReportItem = Workbook | Export
