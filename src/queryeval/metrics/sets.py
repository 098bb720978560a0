"""Set metrics for term selection (seed 000).

Terms are grouped by a *dimension key* ``(dataset_id, dimension_name)`` and matched on the
exact ``(id, name)`` pair. For each key present in the target or the selection we count
true positives, false positives and false negatives over **sets** (a term listed twice counts
once).

Zero-division rules (also in docs/term-selection.md):

* A *target dimension* has at least one target term. Its recall is ``tp / (tp + fn)``
  (never 0/0). Its precision is ``tp / (tp + fp)``; when the system selected nothing for it
  (0/0) the precision is **0.0**: silence on a dimension that was asked for is not precise.
* A *dimension not in target* (selected terms, no target terms; an empty target list counts
  as absent, as the seed says) has precision 0.0 and no recall (``None``).
* Case (turn) macro recall = mean recall over target dimensions; **1.0** when the target has
  no dimension (nothing to find).
* Case (turn) macro precision = mean precision over target dimensions plus, when
  ``include_extra`` (the default), the dimensions not in target; **1.0** when that set is
  empty (nothing asked, nothing selected).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field

from queryeval.metrics.mean import mean_of
from queryeval.metrics.protocol import ratio

DimKey = tuple[str, str]  # (dataset_id, dimension_name)
TermKey = tuple[str, str]  # (id, name)


def precision(tp: int, fp: int, *, zero_division: float = 0.0) -> float:
    """``tp / (tp + fp)``; ``zero_division`` when nothing was selected."""
    return ratio(tp, tp + fp, zero_division=zero_division)


def recall(tp: int, fn: int, *, zero_division: float = 1.0) -> float:
    """``tp / (tp + fn)``; ``zero_division`` when there was nothing to find."""
    return ratio(tp, tp + fn, zero_division=zero_division)


def set_confusion(target: Iterable[Hashable], selected: Iterable[Hashable]):
    """Return ``(tp, fp, fn)`` of ``selected`` against ``target``, as lists in first-seen
    order (tp and fn in target order, fp in selection order); duplicates count once."""
    s, t = dict.fromkeys(selected), dict.fromkeys(target)
    return [x for x in t if x in s], [x for x in s if x not in t], [x for x in t if x not in s]


@dataclass
class DimensionScore:
    """One dimension key's confusion sets and figures."""

    dataset_id: str
    dimension: str
    in_target: bool
    tp: list[TermKey]
    fp: list[TermKey]
    fn: list[TermKey]
    precision: float
    recall: float | None

    def to_dict(self) -> dict:
        return {
            "dataset_id": self.dataset_id,
            "dimension": self.dimension,
            "in_target": self.in_target,
            "tp": [list(t) for t in self.tp],
            "fp": [list(t) for t in self.fp],
            "fn": [list(t) for t in self.fn],
            "precision": self.precision,
            "recall": self.recall,
        }

    @classmethod
    def from_dict(cls, d: Mapping) -> DimensionScore:
        return cls(
            dataset_id=d["dataset_id"], dimension=d["dimension"], in_target=d["in_target"],
            tp=[tuple(t) for t in d["tp"]], fp=[tuple(t) for t in d["fp"]],
            fn=[tuple(t) for t in d["fn"]], precision=d["precision"], recall=d["recall"],
        )


@dataclass
class SelectionScore:
    """Figures of one scored turn: per dimension, and the macro averages."""

    dimensions: list[DimensionScore] = field(default_factory=list)
    macro_precision: float = 1.0
    macro_recall: float = 1.0

    @property
    def not_in_target(self) -> list[DimensionScore]:
        return [d for d in self.dimensions if not d.in_target]

    def to_dict(self) -> dict:
        return {
            "macro_precision": self.macro_precision,
            "macro_recall": self.macro_recall,
            "dimensions": [d.to_dict() for d in self.dimensions],
        }


def group_terms(selection: Iterable[Mapping]) -> dict[DimKey, dict[TermKey, None]]:
    """``[{dataset_id, dimensions: [{dimension_name, values: [{id, name}]}]}]`` ->
    ``{(dataset_id, dimension): {(id, name): None, ...}}`` (ordered sets, first-seen
    order); keys with no terms are dropped."""
    out: dict[DimKey, dict[TermKey, None]] = {}
    for ds in selection or ():
        for dim in ds.get("dimensions") or ():
            terms = dict.fromkeys((str(v["id"]), str(v["name"])) for v in dim.get("values") or ())
            if terms:
                key = (str(ds["dataset_id"]), str(dim["dimension_name"]))
                out.setdefault(key, {}).update(terms)
    return out


def score_selection(
    target: Iterable[Mapping] | None,
    selected: Iterable[Mapping] | None,
    *,
    include_extra: bool = True,
) -> SelectionScore:
    """Score one turn's selection against its target (both in the seed 000 shape).

    Dimensions are ordered as they appear in the target, then the ones not in target in the
    order the system selected them.
    """
    tgt = group_terms(target or ())
    sel = group_terms(selected or ())
    dims: list[DimensionScore] = []
    for key in [*tgt, *(k for k in sel if k not in tgt)]:
        t = tgt.get(key, {})
        s = sel.get(key, {})
        tp, fp, fn = set_confusion(t, s)
        in_target = bool(t)
        dims.append(DimensionScore(
            dataset_id=key[0], dimension=key[1], in_target=in_target, tp=tp, fp=fp, fn=fn,
            precision=precision(len(tp), len(fp), zero_division=0.0),
            recall=recall(len(tp), len(fn)) if in_target else None,
        ))
    recalls = [d.recall for d in dims if d.in_target]
    precisions = [d.precision for d in dims if d.in_target or include_extra]
    return SelectionScore(
        dimensions=dims,
        macro_precision=mean_of(precisions) if precisions else 1.0,
        macro_recall=mean_of(recalls) if recalls else 1.0,
    )


class MicroCounts:
    """Pooled TP/FP/FN of a stream of dimension scores, one :meth:`add` at a time (the
    single-pass counterpart of :func:`micro_scores`, which it backs): O(1) memory.

    Dimensions not in target are pooled only when ``include_extra``.
    """

    __slots__ = ("include_extra", "tp", "fp", "fn")

    def __init__(self, *, include_extra: bool = True) -> None:
        self.include_extra = include_extra
        self.tp = self.fp = self.fn = 0

    def add(self, in_target: bool, tp: int, fp: int, fn: int) -> None:
        """Pool one dimension score's counts (``len`` of its tp, fp and fn sets)."""
        if not in_target and not self.include_extra:
            return
        self.tp += tp
        self.fp += fp
        self.fn += fn

    def result(self) -> dict:
        """Same keys and values as :func:`micro_scores` over the dimensions added."""
        tp, fp, fn = self.tp, self.fp, self.fn
        return {
            "tp": tp, "fp": fp, "fn": fn,
            "micro_precision": precision(tp, fp, zero_division=0.0) if (tp + fp or fn) else 1.0,
            "micro_recall": recall(tp, fn),
        }


def micro_scores(dims: Iterable[DimensionScore], *, include_extra: bool = True) -> dict:
    """Pooled TP/FP/FN over many dimension scores, and micro precision and recall.

    Micro recall is over target dimensions only (a dimension not in target has nothing to
    find); micro precision includes dimensions not in target when ``include_extra``.
    """
    acc = MicroCounts(include_extra=include_extra)
    for d in dims:
        acc.add(d.in_target, len(d.tp), len(d.fp), len(d.fn))
    return acc.result()
