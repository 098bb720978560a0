"""DABench's analysis JSON (``eval_outputs/<name>_evaluation_analysis.json``).

The structure is the one InfiAgent's ``eval_closed_form.py`` writes (``json.dump(...,
indent=4)``)::

    {
        "main_results": {
            "Accuracy by Question": ABQ,
            "Accuracy Proportional by Sub-Question": PSAQ,
            "Accuracy by Sub-Question": UASQ
        },
        "concept_accuracy_analysis": {concept: ABQ, ...},
        "concept_count_accuracy_analysis": {"1": ABQ, "2": ABQ, ...},
        "two_or_more_concepts_accuracy": ABQ of questions with >= 2 concepts, or null
    }

The current reference rounds every figure with Python's ``round(x, 4)`` when it writes this
file (``digits=4``, our default); the seed-era one did not round (``digits=None``). Where the
reference divides by zero-size totals it writes ``0`` in ``main_results`` and ``null`` for
``two_or_more_concepts_accuracy``; we do the same here (our own metrics say ``None``).
Group orders are first-seen in labels order, as in the reference.
"""

from __future__ import annotations

import json
from pathlib import Path

from queryeval.io.atomic import write_text_atomic

DEFAULT_DIGITS = 4


def _r(x: float | None, digits: int | None) -> float | None:
    if x is None or digits is None:
        return x
    return round(x, digits)


def dabench_analysis(metrics: dict, *, digits: int | None = DEFAULT_DIGITS) -> dict:
    """Build the reference's analysis dict from :func:`closed_form_metrics`'s result."""

    def main(key: str) -> float:
        v = metrics[key]
        return 0 if v is None else _r(v, digits)  # type: ignore[return-value]

    multi = [g for k, g in metrics["by_concept_count"].items() if int(k) >= 2]
    n_multi = sum(g["questions"] for g in multi)
    two_or_more = (
        _r(sum(g["correct_questions"] for g in multi) / n_multi, digits) if n_multi else None
    )
    return {
        "main_results": {
            "Accuracy by Question": main("abq"),
            "Accuracy Proportional by Sub-Question": main("psaq"),
            "Accuracy by Sub-Question": main("uasq"),
        },
        "concept_accuracy_analysis": {
            c: _r(g["abq"], digits) for c, g in metrics["by_concept"].items()
        },
        "concept_count_accuracy_analysis": {
            k: _r(g["abq"], digits) for k, g in metrics["by_concept_count"].items()
        },
        "two_or_more_concepts_accuracy": two_or_more,
    }


def write_dabench_analysis(
    path: str | Path, metrics: dict, *, digits: int | None = DEFAULT_DIGITS
) -> Path:
    """Write :func:`dabench_analysis` as JSON (indent 4, like the reference), atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(dabench_analysis(metrics, digits=digits), indent=4)
    write_text_atomic(path, text)  # mode 0o666 & ~umask, like every output file
    return path
