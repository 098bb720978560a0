"""The metric protocol: what every registered metric declares (scikit-learn's metrics
conventions, held by one common test over the registry, tests/metrics/test_metrics_common.py).

A metric is a function of ``(gold, pred)``, ground truth first, then the system's output,
returning one float. It declares:

* its ``bounds`` ``(lower, upper)`` and whether ``higher_is_better`` (so its best value);
* its value on empty input, :class:`ZeroDivision`: one setting with the three cases, gold
  empty, prediction empty, both; a case may be :data:`REFUSED` (the metric raises
  ``ValueError``: no value is defined, e.g. a DABench question without labels);
* ``order_invariant``: the prediction's order does not change the value (set metrics);
* ``swap``: how it behaves with ``(gold, pred)`` swapped: ``"symmetric"`` (the same value),
  ``"mirror:<name>"`` (the value of metric ``<name>`` on the unswapped pair, as precision and
  recall; checked on non-empty inputs), ``"asymmetric"`` (some pair gives another value, so
  a call site that swaps its arguments is caught by the tests), or ``"typed"`` (gold and
  prediction are different kinds of value, e.g. labels and a response text);
* ``perfect(gold)``: the prediction that scores best, and ``best_for(gold)``: the best value
  a prediction can reach for that gold when it is below ``best`` (seed 004's MRR over
  several items, precision at k over fewer than k relevant documents).

Kernels that divide take their zero-division value as a ``zero_division=`` keyword (the
family's declared value its default) and divide with :func:`ratio`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

REFUSED: Final = "refused"
"""A :class:`ZeroDivision` case with no defined value: the metric raises ``ValueError``."""

Empty = float | Literal["refused"]


def ratio(num: float, den: float, *, zero_division: float) -> float:
    """``num / den``, or ``zero_division`` when ``den`` is 0 (the package's one guarded
    division for per-case rates)."""
    return num / den if den else zero_division


@dataclass(frozen=True)
class ZeroDivision:
    """A metric's value on empty input: ``gold`` (the ground truth is empty, the prediction
    not), ``pred`` (the prediction is empty, the ground truth not) and ``both``; each a
    float or :data:`REFUSED`."""

    gold: Empty
    pred: Empty
    both: Empty


def _same(gold: Any) -> Any:
    return gold


@dataclass(frozen=True)
class Metric:
    """One registered metric (see the module docstring for each field)."""

    name: str
    family: str
    """The module under ``queryeval.metrics`` that computes it."""
    fn: Callable[[Any, Any], float]
    """``fn(gold, pred) -> float``."""
    inputs: str
    """What gold and pred are (``terms``, ``selection``, ``text``, ``answers``, ``qrels``,
    ``table``, ``touched``): the common test draws random inputs by this name."""
    zero_division: ZeroDivision
    bounds: tuple[float, float] = (0.0, 1.0)
    higher_is_better: bool = True
    order_invariant: bool = False
    swap: str = "asymmetric"
    perfect: Callable[[Any], Any] = _same
    best_for: Callable[[Any], float] | None = None
    doc: str = ""

    def __post_init__(self) -> None:
        lower, upper = self.bounds
        if not lower <= upper:
            raise ValueError(f"metric {self.name!r}: bounds {self.bounds} are not ordered")
        kind = self.swap.split(":", 1)[0]
        if kind not in ("symmetric", "asymmetric", "mirror", "typed"):
            raise ValueError(f"metric {self.name!r}: swap must be symmetric, asymmetric, "
                             f"mirror:<name> or typed, got {self.swap!r}")

    def __call__(self, gold: Any, pred: Any) -> float:
        return self.fn(gold, pred)

    @property
    def best(self) -> float:
        """The best value in the bounds (upper when higher is better)."""
        return self.bounds[1] if self.higher_is_better else self.bounds[0]

    @property
    def worst(self) -> float:
        return self.bounds[0] if self.higher_is_better else self.bounds[1]

    @property
    def mirror(self) -> str | None:
        """The metric whose value this one takes with gold and pred swapped, if any."""
        kind, _, name = self.swap.partition(":")
        return name if kind == "mirror" else None

    def best_value(self, gold: Any) -> float:
        """The best value a prediction can reach for ``gold``."""
        return self.best if self.best_for is None else self.best_for(gold)
