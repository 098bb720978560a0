"""Model choice per field (the seed's EVALUATE_MODEL): highest mean MRR, ties to the first listed.

MRR per question is seed 004's: sum of 1/rank over the ground-truth items / distinct items,
over the full ranking (:func:`queryeval.metrics.ranking.mrr_from_ranks`). The mean over
questions uses ``math.fsum`` (a correctly rounded sum), and two means count as tied when they
agree to a relative 1e-12, so float noise never overturns the "first listed" rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from queryeval.metrics.ranking import mrr_from_ranks

TIE_REL_TOL = 1e-12


def mean_mrr(ranks_per_question: Sequence[np.ndarray]) -> float:
    """Mean over questions of the per-question MRR; no questions is an error."""
    if not ranks_per_question:
        raise ValueError("mean MRR of zero questions is undefined")
    return math.fsum(mrr_from_ranks(r) for r in ranks_per_question) / len(ranks_per_question)


def choose_model(mrr_by_model: Mapping[str, float]) -> str:
    """The model with the highest mean MRR; among (near-)equal ones, the first in mapping order."""
    if not mrr_by_model:
        raise ValueError("no model to choose from")
    best_name, best = None, -math.inf
    for name, value in mrr_by_model.items():
        if best_name is None or (
            value > best and not math.isclose(value, best, rel_tol=TIE_REL_TOL)
        ):
            best_name, best = name, value
    return best_name  # type: ignore[return-value]
