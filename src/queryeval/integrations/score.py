"""One output scored against one queryeval case, with any task: what the inspect_ai scorer
and the promptfoo assertion share. The case is scored as a run scores it (the task's
``requests``/``parse_output``/``score_case`` through the runner's ``evaluate_case``, the
output given as the system's answer to every scored turn) and reduced by the run model
(:func:`queryeval.run.results.reduce_cases`): the same per-case figures and verdict as
``queryeval run`` would give that output. Table metrics (SQL, SPARQL) run the gold and the
given query on the case's ``source``, as in a run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from queryeval.errors import ConfigError


@dataclass(frozen=True)
class CaseScore:
    case_id: str
    task: str
    verdict: str
    """``pass``, ``fail`` or ``error`` (the output could not be read): the task's pass rule."""
    values: dict[str, float]
    """The case's per-case figures (the run model's)."""
    explanation: str
    """For a case that did not pass: expected vs got, or the error."""
    record: dict = field(repr=False)

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


def case_from(question: str | None, target: Any, *, case_id: str = "case",
              case: Mapping | None = None) -> dict:
    """A case dict: ``case`` as given (a whole queryeval case: id, conversation, …), else one
    user turn ``question`` with ``target`` (a mapping or its JSON text, e.g.
    ``{"answers": [{"name": "n", "value": "3"}]}`` or ``{"query": {"gold": ..., "source": ...}}``)."""
    if case is not None:
        return dict(case)
    if isinstance(target, str):
        try:
            target = json.loads(target)
        except json.JSONDecodeError:
            raise ConfigError(f"case {case_id}: the target is not a queryeval target as JSON "
                              f"(got {target[:80]!r})") from None
    if not isinstance(target, Mapping):
        raise ConfigError(f"case {case_id}: the target must be a mapping, got "
                          f"{type(target).__name__}")
    return {"id": str(case_id), "conversation": [
        {"role": "user", "content": str(question or ""), "target": dict(target)}]}


def score_output(case: Mapping | Any, output: Any, *, task: str | None = None,
                 timeout: float | None = 60.0, **options: Any) -> CaseScore:
    """Score ``output`` (what the system said: text, or the task's output dict) against
    ``case`` (a case dict or :class:`~queryeval.suite.models.Case`). ``task``: the task kind
    (default: inferred from the case's targets); ``options``: task options as
    :func:`queryeval.evaluate` takes them (``rules``, ``match``, ``source``, …)."""
    from queryeval.api.cases import check_cases
    from queryeval.api.evaluate import task_options
    from queryeval.report.junit import case_outcome
    from queryeval.run.results import reduce_cases
    from queryeval.run.runner import RetryPolicy, evaluate_case
    from queryeval.systems.factory import make_system
    from queryeval.tasks.base import get_task, infer_task

    (the_case,) = check_cases([case])
    name = infer_task(the_case.task_kinds(), task)
    scorer = get_task(name, task_options(None, **options))
    try:
        system = make_system(lambda request: output, concurrency=1)
        try:
            record = evaluate_case(the_case, system, scorer, timeout=timeout,
                                   policy=RetryPolicy(retries=0, backoff=0.0))
        finally:
            system.close()
    finally:
        scorer.close()
    (result,) = reduce_cases(scorer, [record])
    explanation = case_outcome([record], result)[1]
    return CaseScore(result.case_id, name, result.verdict, dict(result.means), explanation,
                     record)

