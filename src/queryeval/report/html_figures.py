"""Which of a run's figures a page shows, and under which names: what the task declares its
figures are (settings, timings, older names), the overall figures split accordingly, nested
figures flattened, the keys that can share a [0, 1] chart and their order. Read by the HTML
report (:mod:`queryeval.report.html`), the Python API and the viewer, so every surface
lists the same figures.
"""

from __future__ import annotations

import math
import re
from typing import Any

from queryeval.run.results import lower_is_better
from queryeval.tasks.content import Figures

_AT_K = re.compile(r"^(?P<name>[A-Za-z_]+)@(?P<k>\d+)$")


def figure_kinds(task: Any) -> Figures:
    """What the task (a Task, or a task's name) says its figures are
    (:class:`~queryeval.tasks.content.Figures`); nothing declared for a task that does not
    say or cannot be loaded."""
    if isinstance(task, str):
        from queryeval.tasks.base import task_class

        try:
            task = task_class(task)
        except Exception:  # noqa: BLE001 - an unknown or broken plug-in: nothing declared
            return Figures()
    kinds = getattr(task, "figures", None)
    return kinds if isinstance(kinds, Figures) else Figures()


def overall_figures(overall: dict, kinds: Figures | None = None) -> tuple[dict[str, Any], str]:
    """The overall figures split as the task declares them (``kinds``): the metrics to list
    (settings and timings left out, an older name shown as its figure's own name) and the
    settings as heading text (``k = 10, match = numeric``; empty when none)."""
    kinds = kinds or Figures()
    figures = flatten(overall)
    settings = {key: figures.pop(key) for key in list(figures) if kinds.kind(key) == "setting"}
    figures = {key: v for key, v in figures.items() if kinds.kind(key) != "timing"
               and not _bound_of(key, figures)}
    figures = own_names(figures, kinds, settings)
    return figures, ", ".join(f"{key} = {value}" for key, value in settings.items())


def _bound_of(key: str, figures: dict[str, Any]) -> bool:
    """``X_ci_low`` / ``X_ci_high`` beside ``X``: the bounds of X's interval (shown as its
    interval, :func:`figure_interval`), not figures of their own."""
    for end in ("_ci_low", "_ci_high"):
        if key.endswith(end) and key[: -len(end)] in figures:
            return True
    return False


def figure_interval(overall: dict, key: str) -> tuple[float, float] | None:
    """The interval a task recorded beside an overall figure (``X_ci_low``, ``X_ci_high``)."""
    low, high = overall.get(f"{key}_ci_low"), overall.get(f"{key}_ci_high")
    if isinstance(low, (int, float)) and isinstance(high, (int, float)):
        return float(low), float(high)
    return None


def overall_timings(overall: dict, kinds: Figures | None = None) -> dict[str, Any]:
    """The overall figures the task calls timings (``mean_retrieval_time_ms``), listed apart."""
    kinds = kinds or Figures()
    return {key: v for key, v in flatten(overall).items() if kinds.kind(key) == "timing"}


def count_columns(members: dict[str, dict[str, Any]], kinds: Figures) -> dict[str, dict[str, Any]]:
    """A table's rows (member -> figures) with each count column (``Figures.counts``) shown
    as a count: whole numbers when every value is one (``11``, not ``11.0000``), else — a
    count ``--repeats`` averaged (a group's ``cases`` 4/3) — the column named ``KEY (mean
    over repeats)`` in every row, so it stays one column. Display only."""
    means = {key for figures in members.values() for key, v in figures.items()
             if kinds.kind(key) == "count" and isinstance(v, float) and math.isfinite(v)
             and not v.is_integer()}
    out = {}
    for member, figures in members.items():
        row = {}
        for key, v in figures.items():
            if key in means:
                key = f"{key} (mean over repeats)"
            elif (kinds.kind(key) == "count" and isinstance(v, float) and math.isfinite(v)
                  and v.is_integer()):
                v = int(v)
            row[key] = v
        out[member] = row
    return out


def own_names(figures: dict[str, Any], kinds: Figures, settings: dict[str, Any], *,
              counts: bool = True) -> dict[str, Any]:
    """``figures`` under the names every page shows:

    * each older name (``recall_at_k``) under the figure's own name (``recall@5``, ``{k}``
      from ``settings``): dropped when that name is there with the same value, renamed when
      it is not; kept when the two differ (then they are two figures), with the label the
      task gives it (``recall_at_k (hit rate)``) and listed last;
    * the task's headline figures first, in the task's order (retrieval: recall@k,
      hit_rate@k, MRR, nDCG);
    * a count (``Figures.counts``) as a whole number; one that is a fraction (with
      ``--repeats`` a count in the metrics is the mean over the repeats: 32.6667) named
      ``KEY (mean over repeats)`` (:func:`count_columns`; ``counts=False`` leaves that to a
      table of several rows).

    Display only: the metrics file keeps its names and values (:func:`bare_name` reads a
    shown name back)."""
    out = dict(figures)
    labelled: dict[str, Any] = {}
    for alias, target in kinds.aliases.items():
        if alias not in out or "{k}" in target and settings.get("k") is None:
            continue
        name = target.format(k=settings.get("k"))
        if name not in out:
            out = {name if key == alias else key: value for key, value in out.items()}
        elif out[alias] == out[name]:
            del out[alias]
        elif alias in kinds.labels:
            labelled[f"{alias} ({kinds.labels[alias]})"] = out.pop(alias)
    k = settings.get("k")
    lead = [h.format(k=k) for h in kinds.headline if "{k}" not in h or k is not None]
    lead = [h for h in lead if h in out]
    out = {**{h: out[h] for h in lead}, **{n: v for n, v in out.items() if n not in lead},
           **labelled}
    # one row (the Overall figures); a table of group rows names its count columns once,
    # over every row (counts=False here, then count_columns)
    return count_columns({"": out}, kinds)[""] if counts else out


# --- figures ----------------------------------------------------------------------------------
def flatten(figures: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts of figures -> ``{"a.b": value}``; lists are dropped (not figures)."""
    out: dict[str, Any] = {}
    if not isinstance(figures, dict):
        return {prefix or "value": figures}
    for key, value in figures.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict):
            out.update(flatten(value, name))
        elif not isinstance(value, list):
            out[name] = value
    return out


def _is_rate(v: Any) -> bool:
    return isinstance(v, float) and math.isfinite(v) and 0.0 <= v <= 1.0


def rate_keys(members: dict[str, dict[str, Any]], kinds: Figures | None = None) -> list[str]:
    """Keys whose values are, for every member, a float in [0, 1] or None (not all None),
    and that the task calls metrics (``kinds``: no setting, timing, older name or score that
    is not on [0, 1]). Counts are ints in the metrics JSON, so they never qualify; nor do
    latencies and other better-lower figures (by name, see :func:`lower_is_better`)."""
    kinds = kinds or Figures()
    keys: list[str] = []
    for figures in members.values():
        keys += [k for k in figures if k not in keys]
    return [k for k in keys if kinds.chartable(k) and not lower_is_better(None, k.rsplit(".", 1)[-1])
            and all(f.get(k) is None or _is_rate(f.get(k)) for f in members.values())
            and any(_is_rate(f.get(k)) for f in members.values())]


def _prefer(keys: list[str]) -> list[str]:
    """PSAQ first (seed 001's spider chart), then recall@k by k, then the rest in their order."""
    def rank(k: str) -> tuple[int, int]:
        m = _AT_K.match(k)
        if "psaq" in k.lower():
            return (0, 0)
        return (1, int(m["k"])) if m and m["name"] == "recall" else (2, 0)
    return sorted(keys, key=rank)


def batch_to_compare(batch_id: str, derived: Any, derived_from: Any = None) -> str | None:
    """Which batch of a run's family to give ``queryeval compare``, as one sentence (the
    console's derived-batch lines, the HTML report, the viewer): a run with derived batches
    (retrieval's smaller k) is compared through its own batch, which holds every k's
    figures; a derived batch is the run scored at one k alone, for a comparison with a run
    scored at that k only. None for a batch without a family."""
    if isinstance(derived_from, str) and derived_from:
        return (f"this batch is derived from run {derived_from}: to compare the run, give "
                f"queryeval compare batch_{derived_from}.json (every k); this one only to "
                "compare with a run scored at this k alone")
    if not isinstance(derived, dict) or not derived:
        return None
    return (f"to compare this run, give queryeval compare batch_{batch_id}.json: it holds "
            f"the figures at every k; its {len(derived)} derived batch(es) are the run scored "
            "at one smaller k alone, to compare with a run scored at that k only")
