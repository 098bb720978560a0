"""Metrics: pure functions, one family per module (sets, ranking, answers, tables, fields).

Rules every metric follows (:mod:`queryeval.metrics.protocol`): ground truth first, then the
prediction, ``(gold, pred)``; a per-case kernel under a public aggregate; declared bounds and
a declared value on empty input (``ZeroDivision``: gold empty, prediction empty, both), also
in the function's docstring and in docs/; no rounding inside a metric; empty input is an
explicit, documented case, never a silent 0. The per-case metrics are listed in one registry,
:mod:`queryeval.metrics.registry`, which tests/metrics/test_metrics_common.py runs over.
"""

import importlib as _importlib

FAMILIES = ("selection", "sets", "answers", "ranking", "tables", "fields", "sparql", "mean",
            "squad", "touched", "protocol", "registry")
"""Submodules reachable as attributes (``queryeval.metrics.selection.score``), imported on
first use."""


def __getattr__(name: str):
    if name in FAMILIES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
