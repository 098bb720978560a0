"""Metrics: pure functions, one family per module (sets, ranking, answers, tables, fields).

Rules every metric follows: a per-case kernel under a public aggregate; zero-division
behaviour documented in the function's docstring and in docs/; no rounding inside a metric;
empty input is an explicit, documented case, never a silent 0.
"""

import importlib as _importlib

FAMILIES = ("selection", "sets", "answers", "ranking", "tables", "fields", "sparql", "mean")
"""Submodules reachable as attributes (``queryeval.metrics.selection.score``), imported on
first use."""


def __getattr__(name: str):
    if name in FAMILIES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
