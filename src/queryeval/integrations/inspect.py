"""An inspect_ai scorer that scores a sample with any queryeval task (extra ``inspect``)::

    from inspect_ai import Task, task
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import generate
    from queryeval.integrations.inspect import queryeval_scorer

    @task
    def shop_sql():
        return Task(
            dataset=[Sample(input="List the items under 1 euro by name.",
                            target='{"query": {"source": "shop.sqlite", '
                                   '"gold": "SELECT name FROM items WHERE price < 1 ORDER BY name"}}')],
            solver=generate(), scorer=queryeval_scorer())

The sample's ``target`` is the scored turn's queryeval target as JSON (``{"answers": [...]}``,
``{"query": {...}}``, ``{"retrieval": {...}}``, …), or ``metadata["queryeval_case"]`` holds a
whole case (id, conversation with targets). The model's completion is scored as
:func:`queryeval.integrations.score.score_output` scores it: the run's pass rule and per-case
figures (table metrics for SQL/SPARQL included). The score's value is 1.0 for a pass, else
0.0 (``metric="NAME"``: that per-case figure instead), so inspect's ``accuracy`` is the share
of cases that pass; ``metadata`` holds the verdict and every figure, ``explanation`` expected
vs got.
"""

from __future__ import annotations

import asyncio
from typing import Any

from queryeval.integrations.score import case_from, score_output

try:
    from inspect_ai.scorer import Score, Target, accuracy, scorer, stderr
    from inspect_ai.solver import TaskState
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError("queryeval.integrations.inspect needs the inspect extra: "
                      "pip install 'queryeval[inspect]'") from exc


def sample_case(state: TaskState, target: Target) -> dict:
    """The queryeval case of a sample: ``metadata["queryeval_case"]``, else its input with its
    target (JSON text)."""
    meta = state.metadata or {}
    if isinstance(meta.get("queryeval_case"), dict):
        return case_from(None, None, case=meta["queryeval_case"])
    return case_from(state.input_text, target.text, case_id=str(state.sample_id))


@scorer(metrics=[accuracy(), stderr()])
def queryeval_scorer(task: str | None = None, metric: str | None = None,
                     **options: Any):
    """``task``: the queryeval task kind (default: inferred from the target); ``metric``: score
    with this per-case figure instead of the pass verdict; ``options``: task options
    (``rules="buildingqa"``, ``match="strict"``, ``source=...`` for every sample, …)."""

    async def score(state: TaskState, target: Target) -> Score:
        case = sample_case(state, target)
        output = state.output.completion if state.output else ""
        result = await asyncio.to_thread(score_output, case, output, task=task, **options)
        if metric is not None and metric not in result.values:
            raise ValueError(f"queryeval_scorer: no per-case metric {metric!r} "
                             f"(has: {', '.join(result.values)})")
        value = result.values[metric] if metric is not None else float(result.passed)
        return Score(value=value, answer=output, explanation=result.explanation or None,
                     metadata={"verdict": result.verdict, "task": result.task,
                               "metrics": result.values})

    return score
