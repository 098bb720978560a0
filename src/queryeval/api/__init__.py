"""The Python API: ``evaluate``, ``resume``, ``load``, ``compare`` and the objects they return.

Everything here is also reachable from the package itself (``import queryeval as qe``;
``qe.evaluate(...)``). See docs/python-api.md.
"""

from queryeval.api.compare import Comparison, compare
from queryeval.api.evaluate import evaluate, load, resume, task_options
from queryeval.api.run import Run

__all__ = ["Comparison", "Run", "compare", "evaluate", "load", "resume", "task_options"]
