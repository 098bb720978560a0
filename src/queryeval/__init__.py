"""queryeval: evaluate how well AI data assistants find the right data.

The Python API (see docs/python-api.md)::

    import queryeval as qe

    run = qe.evaluate("examples/sdmx/suite", system=my_bot)
    run.metrics, run.to_pandas(), run.groups, run.report("out/")
    qe.compare(qe.load("runs/.../batch_<id>.json"), run).regressions

Names are imported on first use, so ``import queryeval`` stays light (the CLI imports it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from queryeval._version import __version__

_LAZY = {
    "evaluate": "queryeval.api.evaluate",
    "resume": "queryeval.api.evaluate",
    "load": "queryeval.api.evaluate",
    "compare": "queryeval.api.compare",
    "audit": "queryeval.api.audit",
    "AuditReport": "queryeval.api.audit",
    "Finding": "queryeval.api.audit",
    "judge_agreement": "queryeval.api.judge",
    "Run": "queryeval.api.run",
    "Comparison": "queryeval.api.compare",
    "MultiComparison": "queryeval.api.compare",
    "SequentialDecision": "queryeval.api.compare",
    "register_task": "queryeval.tasks.base",
    "register_format": "queryeval.registry",
    "register_system": "queryeval.registry",
    "Task": "queryeval.tasks.base",
    "TaskOptions": "queryeval.tasks.base",
    "TurnOutcome": "queryeval.tasks.base",
    "Case": "queryeval.suite.models",
    "InputError": "queryeval.errors",
    "ConfigError": "queryeval.errors",
    "OutputError": "queryeval.errors",
    "SystemCallError": "queryeval.errors",
    "QueryevalError": "queryeval.errors",
    "GateFailure": "queryeval.errors",
}
_SUBMODULES = ("api", "metrics", "testing", "errors", "tasks", "systems", "suite", "report", "run")

__all__ = [  # noqa: RUF022 - the API first, then the types it uses
    "__version__", "evaluate", "resume", "load", "compare", "audit", "judge_agreement", "Run", "Comparison", "register_task",
    "register_format", "register_system",
    "Task", "TaskOptions", "TurnOutcome", "Case", "InputError", "ConfigError", "OutputError",
    "SystemCallError", "QueryevalError", "GateFailure", "AuditReport", "Finding",
    "MultiComparison", "SequentialDecision",
]

if TYPE_CHECKING:  # for type checkers and editors; at run time these load on first use
    from queryeval.api.audit import AuditReport, Finding, audit
    from queryeval.api.compare import Comparison, MultiComparison, SequentialDecision, compare
    from queryeval.api.evaluate import evaluate, load, resume
    from queryeval.api.judge import judge_agreement
    from queryeval.api.run import Run
    from queryeval.errors import (
        ConfigError,
        GateFailure,
        InputError,
        OutputError,
        QueryevalError,
        SystemCallError,
    )
    from queryeval.registry import register_format, register_system
    from queryeval.suite.models import Case
    from queryeval.tasks.base import Task, TaskOptions, TurnOutcome, register_task


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"queryeval.{name}")
    raise AttributeError(f"module 'queryeval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, *_SUBMODULES])
