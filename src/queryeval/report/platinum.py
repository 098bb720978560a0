"""How a comparison moves on a subset of its cases (``compare --cases FILE``: the platinum
suite ``queryeval audit --write-platinum`` wrote): each run's mean of one metric over the
cases every run has, and over those of them in the subset; the runs' ranks by each mean; the
Spearman rank correlation between the two rankings (scipy's, average ranks for ties)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from typing import Any

from queryeval.errors import ConfigError


def case_ids(cases: str | os.PathLike | Iterable[str]) -> set[str]:
    """The case ids of ``cases``: a suite file (any format the loader reads) or the ids."""
    if isinstance(cases, (str, os.PathLike)):
        from queryeval.suite import load_suite

        return {c.id for c in load_suite(cases).iter_cases()}
    return {str(c) for c in cases}


def platinum_shift(runs: Sequence[Any], keep: set[str], metric: str) -> dict[str, Any]:
    """``{"metric", "full_cases", "subset_cases", "runs": [{"label", "full", "subset",
    "shift", "full_rank", "subset_rank"}], "spearman"}`` (``shift``: subset mean minus full
    mean; rank 1 = best; ``spearman`` None for fewer than three runs or a ranking with every
    mean equal, where it is undefined)."""
    from scipy.stats import rankdata, spearmanr

    from queryeval.run.results import RunResults, lower_is_better

    loaded = [RunResults.open(r) if not isinstance(r, RunResults) else r for r in runs]
    per = [{c.case_id: c.means for c in run.cases} for run in loaded]
    common = [cid for cid in per[0] if all(cid in p for p in per[1:])
              and all(metric in p[cid] for p in per)]
    subset = [cid for cid in common if cid in keep]
    if not subset:
        raise ConfigError(f"no case of --cases has {metric!r} in every run")
    full = [math.fsum(p[c][metric] for c in common) / len(common) for p in per]
    part = [math.fsum(p[c][metric] for c in subset) / len(subset) for p in per]
    sign = 1.0 if lower_is_better(loaded[0].task, metric) else -1.0
    rank_full = rankdata([sign * v for v in full])
    rank_part = rankdata([sign * v for v in part])
    rho = None
    if len(loaded) >= 3 and len(set(full)) > 1 and len(set(part)) > 1:
        rho = float(spearmanr(full, part).statistic)
    return {"metric": metric, "full_cases": len(common), "subset_cases": len(subset),
            "runs": [{"label": run.label, "full": f, "subset": s, "shift": s - f,
                      "full_rank": float(rf), "subset_rank": float(rs)}
                     for run, f, s, rf, rs in zip(loaded, full, part, rank_full, rank_part, strict=True)],
            "spearman": rho}


def shift_html(shift: dict[str, Any]) -> str:
    """The shift table as an HTML section (every label escaped): per run the mean on all
    shared cases, on the subset, the shift and both ranks; the Spearman line under it."""
    from html import escape

    def num(x: float) -> str:
        return f"{x:.4f}"

    rows = "".join(
        f"<tr><td>{escape(str(r['label']))}</td><td>{num(r['full'])}</td>"
        f"<td>{r['full_rank']:g}</td><td>{num(r['subset'])}</td><td>{r['subset_rank']:g}</td>"
        f"<td>{r['shift']:+.4f}</td></tr>" for r in shift["runs"])
    rho = shift["spearman"]
    said = ("undefined (fewer than 3 runs or equal means)" if rho is None else f"{rho:.3f}")
    return (f'<section id="platinum-shift"><h2>--cases: {escape(str(shift["metric"]))} on '
            f'{shift["subset_cases"]} of {shift["full_cases"]} cases</h2>'
            '<div class="scroll"><table><thead><tr><th>run</th><th>all cases</th><th>rank</th>'
            '<th>--cases</th><th>rank</th><th>shift</th></tr></thead>'
            f"<tbody>{rows}</tbody></table></div><p>Spearman between the rankings: {said}</p>"
            "</section>")


def add_shift(path: Any, kind: str, shift: dict[str, Any] | None) -> Any:
    """Add ``shift`` to a comparison written at ``path``: the ``--json`` document gains
    ``platinum_shift``; the HTML page the :func:`shift_html` section before ``</body>``.
    Other kinds (and no shift) are left as written. Returns ``path``."""
    from pathlib import Path

    from queryeval.io.atomic import write_text_atomic

    if shift is None or kind not in ("json", "html"):
        return path
    text = Path(path).read_text(encoding="utf-8")
    if kind == "json":
        import json

        doc = json.loads(text)
        doc["platinum_shift"] = shift
        write_text_atomic(path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    else:
        cut = text.rfind("</body>")
        cut = len(text) if cut < 0 else cut
        write_text_atomic(path, text[:cut] + shift_html(shift) + text[cut:])
    return path
