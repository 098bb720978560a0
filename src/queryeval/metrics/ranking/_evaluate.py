"""The engine's entry points: :func:`evaluate` (dicts) and :func:`evaluate_arrays` (arrays)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from queryeval.metrics.ranking import _hit_rate, _map, _mrr, _ndcg, _precision, _recall
from queryeval.metrics.ranking._arrays import RankingArrays, arrays_from_dicts
from queryeval.metrics.ranking._hits import Hits, build_hits
from queryeval.metrics.ranking._names import parse_metrics

_KERNELS: dict[str, Callable[[Hits, int | None], np.ndarray]] = {
    "recall": _recall.compute,
    "precision": _precision.compute,
    "ndcg": _ndcg.compute,
    "map": _map.compute,
    "mrr": _mrr.compute,
    "hit_rate": _hit_rate.compute,
}


@dataclass(frozen=True)
class RankingResult(Mapping[str, float]):
    """Means per metric, and (on request) per-query values aligned with ``qids``.

    Behaves as a read-only mapping ``{metric name: mean}`` so ``result["ndcg@10"]`` works.

    Attributes:
        means: ``{name: mean over evaluated queries}``, keys as the caller spelled them.
        per_query: ``{name: float64 array}`` aligned with ``qids``; empty unless requested.
        qids: evaluated query ids, sorted (Python ``str`` order).
        n_missing: judged queries absent from the run (scored 0 or left out, per
            ``missing_query``).
    """

    means: dict[str, float]
    qids: list[str]
    per_query: dict[str, np.ndarray] = field(default_factory=dict)
    n_missing: int = 0

    def __getitem__(self, name: str) -> float:
        return self.means[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.means)

    def __len__(self) -> int:
        return len(self.means)

    def query(self, qid: str) -> dict[str, float]:
        """All per-query values of one query (requires ``per_query=True``)."""
        if not self.per_query:
            raise ValueError("per-query values were not requested (per_query=False)")
        i = self.qids.index(qid)
        return {name: float(values[i]) for name, values in self.per_query.items()}


def evaluate_arrays(
    arrays: RankingArrays,
    metrics: str | Sequence[str],
    *,
    per_query: bool = False,
    strategy: str = "auto",
) -> RankingResult:
    """Evaluate prepared arrays (see :func:`arrays_from_dicts` and the TREC readers).

    Raises:
        ValueError: an unknown metric name, or no query to evaluate.
    """
    specs = parse_metrics(list(metrics) if not isinstance(metrics, str) else metrics)
    if arrays.n_queries == 0:
        raise ValueError(
            "no query to evaluate: the qrels are empty"
            + (" or share no query with the run" if arrays.n_missing else "")
        )
    hits = build_hits(arrays, strategy)
    values = {s.name: _KERNELS[s.measure](hits, s.k) for s in specs}
    means = {name: float(v.mean()) for name, v in values.items()}
    return RankingResult(
        means=means,
        qids=list(arrays.qids),
        per_query=values if per_query else {},
        n_missing=arrays.n_missing,
    )


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    metrics: str | Sequence[str],
    *,
    per_query: bool = False,
    missing_query: str = "zero",
) -> RankingResult:
    """Score a run against relevance judgements with trec_eval's conventions.

    Args:
        qrels: ``{qid: {docid: relevance}}``; relevance is an integer, > 0 means relevant
            and is the nDCG gain.
        run: ``{qid: {docid: score}}``; higher scores rank first, ties go to the greater
            docid (trec_eval). NaN scores are refused.
        metrics: names such as ``"ndcg@10"``, ``"recall@100"``, ``"mrr@10"``, ``"map"``,
            ``"precision@5"``, ``"hit_rate@10"``, or trec_eval spellings (``"ndcg_cut.10"``,
            ``"P.5"``, ``"recip_rank"``, ``"success.10"``).
        per_query: also return per-query arrays aligned with ``result.qids``.
        missing_query: a judged query absent from the run scores 0 on every metric
            (``"zero"``, like ``trec_eval -c``) or is left out (``"skip"``, what
            pytrec_eval reports). Run queries that nobody judged are always left out.

    Returns:
        A :class:`RankingResult` (a mapping ``{name: mean}``).

    Raises:
        ValueError: unknown metric names, malformed input, NaN scores, nothing to evaluate.
    """
    arrays = arrays_from_dicts(qrels, run, missing_query)
    return evaluate_arrays(arrays, metrics, per_query=per_query)
