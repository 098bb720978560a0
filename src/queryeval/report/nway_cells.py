"""What every rendering of an N-way comparison shares (markdown, LaTeX, CSV, xlsx, console,
HTML): run letters, the cell text with its marks, a table's scope and the legend. Both
``compare_nway`` and ``html_compare`` import it, so neither imports the other back."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from queryeval.report.compare_nway import NWayComparison, Table

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def letter(i: int) -> str:
    """The short name of run ``i``: a, b, …, z, then a1, b1, …"""
    return LETTERS[i % 26] + (str(i // 26) if i >= 26 else "")


def _num(v: float | None) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4f}"


def _cells(comp: NWayComparison, table: Table, metric: str) -> list[tuple[str, bool, str, bool]]:
    """Per run: (value text, best, letters of runs it is significantly better than, worse
    than the baseline)."""
    best = set(table.best(metric))
    out = []
    for k, v in enumerate(table.means[metric]):
        better, worse = table.marks(metric, k, comp.alpha)
        out.append((_num(v), k in best, "".join(letter(x) for x in better), 0 in worse))
    return out


def _scope(table: Table) -> str:
    if table.key is None:
        return "overall"
    also = f" (also {', '.join(table.also)})" if table.also else ""
    return f"{table.key} = {table.member}{also}"


def _legend(comp: NWayComparison) -> str:
    against = "the baseline (a)" if comp.pairs == "baseline" else "every other run"
    return (f"Best mean in bold. Letters: significantly better than that run; ▼: significantly "
            f"worse than the baseline (paired randomization test against {against}, "
            f"Holm-adjusted across each table's tests, alpha {comp.alpha:g}; counts are not "
            f"tested, and a metric equal case by case to an earlier one shares its test).")
