"""Tuning of field retrieval (seed 004): the model and the exact cut-off N per field.

* :mod:`~queryeval.tune.problem`  the problem and the exact objective of a plan;
* :mod:`~queryeval.tune.exact`    branch and bound with a proof of exactness;
* :mod:`~queryeval.tune.greedy`   the reference's first-fit greedy, for comparison;
* :mod:`~queryeval.tune.models`   model choice by mean MRR;
* :mod:`~queryeval.tune.pipeline` both choices together, as output rows;
* :mod:`~queryeval.report.tuning` (in the report layer) console, JSON, CSV and xlsx writers;
* :mod:`~queryeval.tune.rankings` the precomputed-rankings JSON the ``tune`` command reads.
"""

from queryeval.tune.exact import InfeasibleBudget, Plan, solve_exact
from queryeval.tune.greedy import REFERENCE_BUDGET, greedy_reference_plan
from queryeval.tune.models import choose_model, mean_mrr
from queryeval.tune.pipeline import FieldInput, TuneResult, TuneRow, tune
from queryeval.tune.problem import FieldProblem, Objective, evaluate_plan

__all__ = [
    "REFERENCE_BUDGET",
    "FieldInput",
    "FieldProblem",
    "InfeasibleBudget",
    "Objective",
    "Plan",
    "TuneResult",
    "TuneRow",
    "choose_model",
    "evaluate_plan",
    "greedy_reference_plan",
    "mean_mrr",
    "solve_exact",
    "tune",
]
