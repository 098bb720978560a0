"""A promptfoo Python assertion: ``get_assert(output, context)`` scores the provider's output
with a queryeval task (docs/ci.md; examples/ci/promptfoo/). promptfoo loads a Python
assertion file by path, so the file is one line::

    # queryeval_assert.py
    from queryeval.integrations.promptfoo import get_assert  # noqa: F401

and the config names it (``promptfooconfig.yaml``)::

    defaultTest:
      assert:
        - type: python
          value: file://queryeval_assert.py
          config: {task: query}          # optional: metric, options, target
    tests:
      - vars:
          question: List the items under 1 euro.
          target: '{"query": {"source": "shop.sqlite", "gold": "SELECT name FROM items WHERE price < 1"}}'

The case: ``config.case`` or ``vars.queryeval_case`` (a whole queryeval case), else the
question (``vars.question``, else the prompt) with the target (``config.target``, else
``vars.target``: the scored turn's queryeval target, a mapping or its JSON text). It returns
promptfoo's GradingResult: ``pass`` (the task's pass rule, or ``score >= config.threshold``
with ``config.metric``), ``score`` (1/0, or that per-case figure), ``reason`` (expected vs
got), ``namedScores`` (every per-case figure, shown as columns by promptfoo).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from queryeval.integrations.score import case_from, score_output


def _case(context: Mapping) -> dict:
    config = context.get("config") or {}
    vars_ = context.get("vars") or {}
    whole = config.get("case") or vars_.get("queryeval_case")
    if isinstance(whole, Mapping):
        return case_from(None, None, case=whole)
    test = context.get("test") or {}
    case_id = str(test.get("description") or vars_.get("id") or "case")
    question = vars_.get("question", context.get("prompt"))
    target = config.get("target", vars_.get("target"))
    return case_from(question, target, case_id=case_id)


def get_assert(output: Any, context: Mapping) -> dict:
    """promptfoo's entry point (see the module's doc)."""
    from queryeval.errors import QueryevalError

    config = dict(context.get("config") or {})
    metric = config.get("metric")
    try:
        result = score_output(_case(context), output, task=config.get("task"),
                              **dict(config.get("options") or {}))
    except QueryevalError as exc:  # a bad case or option: a failed assertion saying why
        return {"pass": False, "score": 0.0, "reason": f"queryeval: {exc}"}
    if metric is not None:
        if metric not in result.values:
            return {"pass": False, "score": 0.0, "reason": f"queryeval: no per-case metric "
                    f"{metric!r} (has: {', '.join(result.values)})"}
        score = float(result.values[metric])
        passed = score >= float(config.get("threshold", 1.0))
    else:
        score, passed = float(result.passed), result.passed
    reason = result.explanation or f"queryeval {result.task}: {result.verdict}"
    return {"pass": passed, "score": score, "reason": reason,
            "namedScores": {k: float(v) for k, v in result.values.items()}}
