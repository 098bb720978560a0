"""Agreement between a judge and human labels (binary: ``pass`` is the positive class).

Pure functions, no I/O:

* :func:`confusion` — the 2x2 matrix ``[[TN, FP], [FN, TP]]``, rows the human label, columns
  the judge's (scikit-learn's ``confusion_matrix(human, judge, labels=["fail", "pass"])``);
* :func:`rates` — Cohen's kappa, TPR (sensitivity: human passes the judge passes), TNR
  (specificity: human fails the judge fails) and accuracy from those four counts; a figure
  whose denominator is 0 is ``None`` (kappa when both raters use one label only, as
  scikit-learn's ``cohen_kappa_score`` gives NaN there);
* :func:`agreement` — those figures with percentile bootstrap intervals, resampling cases
  (seeded: the same labels give the same interval); resamples where a figure is undefined
  are left out of its interval;
* :func:`self_consistency` — how a judge agrees with itself over N verdicts per case:
  unanimous cases, mean pairwise agreement and Fleiss' kappa.

The bootstrap is here, not :func:`queryeval.metrics.stats.bootstrap_ci` (a mean of one
column, and in a layer above metrics): kappa is not a mean of per-case values, so each
resample's four counts are recomputed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

LABELS = ("fail", "pass")


def _binary(values: Sequence[str], name: str) -> np.ndarray:
    out = np.empty(len(values), dtype=bool)
    for i, v in enumerate(values):
        if v not in LABELS:
            raise ValueError(f"{name}[{i}]: must be 'pass' or 'fail', got {v!r}")
        out[i] = v == "pass"
    return out


def confusion(human: Sequence[str], judge: Sequence[str]) -> list[list[int]]:
    """``[[TN, FP], [FN, TP]]``: rows the human label (fail, pass), columns the judge's."""
    if len(human) != len(judge):
        raise ValueError(f"{len(human)} human labels but {len(judge)} judge verdicts")
    h, j = _binary(human, "human"), _binary(judge, "judge")
    return [[int(np.sum(~h & ~j)), int(np.sum(~h & j))],
            [int(np.sum(h & ~j)), int(np.sum(h & j))]]


def _figures(tn, fp, fn, tp):
    """kappa, tpr, tnr, accuracy from count arrays (NaN where undefined)."""
    tn, fp, fn, tp = (np.asarray(x, dtype=float) for x in (tn, fp, fn, tp))
    n = tn + fp + fn + tp
    with np.errstate(divide="ignore", invalid="ignore"):
        po = (tn + tp) / n
        pe = ((tp + fn) * (tp + fp) + (tn + fp) * (tn + fn)) / (n * n)
        kappa = np.where(pe == 1.0, np.nan, (po - pe) / (1.0 - pe))
        tpr = tp / (tp + fn)
        tnr = tn / (tn + fp)
    return {"kappa": kappa, "tpr": tpr, "tnr": tnr, "accuracy": po}


def _none(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def rates(matrix: Sequence[Sequence[int]]) -> dict[str, float | None]:
    """Cohen's kappa, TPR, TNR and accuracy of a ``[[TN, FP], [FN, TP]]`` matrix."""
    (tn, fp), (fn, tp) = matrix
    if tn + fp + fn + tp == 0:
        return {"kappa": None, "tpr": None, "tnr": None, "accuracy": None}
    return {k: _none(float(v)) for k, v in _figures(tn, fp, fn, tp).items()}


def agreement(human: Sequence[str], judge: Sequence[str], *, confidence: float = 0.95,
              resamples: int = 2000, seed: int = 0) -> dict:
    """The figures of :func:`rates`, each as ``{"value", "ci_low", "ci_high"}``, with
    ``n``, ``confusion`` and the bootstrap settings. Intervals are None with no cases, or
    for a figure undefined in every resample."""
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    if resamples < 1:
        raise ValueError("resamples must be >= 1")
    matrix = confusion(human, judge)
    point = rates(matrix)
    h, j = _binary(human, "human"), _binary(judge, "judge")
    n = len(h)
    out: dict = {"n": n, "confusion": matrix, "labels": list(LABELS),
                 "confidence": confidence, "resamples": resamples, "seed": seed}
    if n == 0:
        out.update({k: {"value": None, "ci_low": None, "ci_high": None} for k in point})
        return out
    rng = np.random.default_rng(seed)
    cells = np.stack([~h & ~j, ~h & j, h & ~j, h & j]).astype(np.int64)  # tn fp fn tp
    rows = max(1, 4_000_000 // n)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in point}
    done = 0
    while done < resamples:
        take = min(rows, resamples - done)
        idx = rng.integers(0, n, size=(take, n))
        counts = cells[:, idx].sum(axis=2)  # (4, take)
        for k, v in _figures(*counts).items():
            parts[k].append(v)
        done += take
    tail = (1.0 - confidence) / 2.0
    for k, value in point.items():
        draws = np.concatenate(parts[k])
        draws = draws[~np.isnan(draws)]
        if draws.size == 0:
            lo = hi = None
        else:
            lo, hi = (float(x) for x in np.quantile(draws, [tail, 1.0 - tail]))
        out[k] = {"value": value, "ci_low": lo, "ci_high": hi}
    return out


def self_consistency(verdicts: Sequence[Sequence[str]]) -> dict:
    """Agreement of a judge with itself: ``verdicts[i]`` the N >= 2 verdicts of case i.

    ``unanimous``: share of cases whose verdicts are all the same; ``pairwise``: mean over
    cases of the share of agreeing pairs among the N(N-1)/2; ``fleiss_kappa``: Fleiss' kappa
    (None when every verdict is the same label: no chance correction possible)."""
    if not verdicts:
        return {"cases": 0, "repeats": 0, "unanimous": None, "pairwise": None,
                "fleiss_kappa": None}
    sizes = {len(v) for v in verdicts}
    if len(sizes) != 1 or min(sizes) < 2:
        raise ValueError("every case needs the same number (>= 2) of verdicts")
    (m,) = sizes
    passes = np.array([int(np.sum(_binary(v, f"verdicts[{i}]")))
                       for i, v in enumerate(verdicts)], dtype=float)
    fails = m - passes
    per_case = (passes * (passes - 1) + fails * (fails - 1)) / (m * (m - 1))
    p_bar = float(per_case.mean())
    p_pass = float(passes.sum() / (len(verdicts) * m))
    pe = p_pass ** 2 + (1 - p_pass) ** 2
    kappa = None if pe == 1.0 else (p_bar - pe) / (1.0 - pe)
    return {"cases": len(verdicts), "repeats": m,
            "unanimous": float(np.mean((passes == 0) | (passes == m))),
            "pairwise": p_bar, "fleiss_kappa": kappa}
