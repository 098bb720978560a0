"""The engine's entry points: :func:`evaluate` (dicts) and :func:`evaluate_arrays` (arrays)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from queryeval.metrics.ranking import (
    _counts,
    _g,
    _hit_rate,
    _iprec,
    _judged,
    _map,
    _mrr,
    _ndcg,
    _precision,
    _rbp,
    _recall,
)
from queryeval.metrics.ranking._arrays import RankingArrays, arrays_from_dicts
from queryeval.metrics.ranking._hits import Hits, build_hits
from queryeval.metrics.ranking._names import MetricSpec, parse_metrics


def _cut(kernel: Callable[[Hits, int | None], np.ndarray]):
    return lambda hits, spec: kernel(hits, spec.k)


_KERNELS: dict[str, Callable[[Hits, MetricSpec], np.ndarray]] = {
    "recall": _cut(_recall.compute),
    "precision": _cut(_precision.compute),
    "ndcg": lambda hits, spec: (_ndcg.compute(hits, spec.k) if spec.gains is None
                                else _ndcg.with_gains(hits, spec.gains, spec.k)),
    "map": _cut(_map.compute),
    "mrr": _cut(_mrr.compute),
    "hit_rate": _cut(_hit_rate.compute),
    "gm_map": _map.gm_map,
    "num_q": _counts.num_q,
    "num_ret": _counts.num_ret,
    "num_rel": _counts.num_rel,
    "num_rel_ret": _counts.num_rel_ret,
    "rprec": _counts.rprec,
    "set_p": _counts.set_p,
    "set_recall": _counts.set_recall,
    "set_f": _counts.set_f,
    "bpref": _judged.bpref,
    "infap": _judged.infap,
    "unj": _judged.unj,
    "judged_share": _judged.judged,
    "ir_judged": _judged.ir_judged,
    "iprec_at_recall": _iprec.compute,
    "iprec_v9": _iprec.compute_v9,
    "11pt_avg": _iprec.eleven_point,
    "rndcg": _ndcg.rndcg,
    "rbp": _rbp.rbp,
    "err_qmax": _rbp.err,
    "gdeval_err": _rbp.gdeval_err,
    "ndcg_rel": _ndcg.ndcg_rel,
    "g": _g.g_measure,
    "bing": _g.bin_g,
    "rprec_mult": _precision.rprec_mult,
    "relative_p": _precision.relative,
    "set_relative_p": _counts.set_relative_p,
    "set_map": _counts.set_map,
    "gm_bpref": _judged.gm_bpref,
    "num_nonrel_judged_ret": _judged.num_nonrel_judged_ret,
    "utility": _counts.utility,
}


def summarise(spec: MetricSpec, values: np.ndarray) -> float:
    """trec_eval's summary ("all") of per-query values: mean, sum (counts) or geometric mean
    (``gm_map``, whose per-query values are logs)."""
    if spec.aggregate == "sum":
        return float(values.sum())
    if spec.aggregate == "gm":
        return float(np.exp(values.mean()))
    return float(values.mean())


@dataclass(frozen=True)
class RankingResult(Mapping[str, float]):
    """Means per metric, and (on request) per-query values aligned with ``qids``.

    Behaves as a read-only mapping ``{metric name: mean}`` so ``result["ndcg@10"]`` works.

    Attributes:
        means: ``{name: summary over evaluated queries}``, keys as the caller spelled them:
            the mean, except trec_eval's counts (``num_*``: the sum) and ``gm_map`` (the
            geometric mean; its per-query values are log(max(AP, 0.00001))).
        per_query: ``{name: float64 array}`` aligned with ``qids``; empty unless requested.
        qids: evaluated query ids, sorted (Python ``str`` order).
        n_missing: judged queries absent from the run (scored 0 or left out, per
            ``missing_query``).
        n_without_relevant: evaluated queries with no relevant judgement (relevance >= the
            level): each scores 0 on every metric and counts in the means, in both
            ``missing_query`` modes (trec_eval and pytrec_eval count them).
    """

    means: dict[str, float]
    qids: list[str]
    per_query: dict[str, np.ndarray] = field(default_factory=dict)
    n_missing: int = 0
    n_without_relevant: int = 0

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
    relevance_level: int = 1,
    judged_only: bool = False,
    max_docs: int | None = None,
) -> RankingResult:
    """Evaluate prepared arrays (see :func:`arrays_from_dicts` and the TREC readers).

    ``relevance_level``, ``judged_only`` and ``max_docs`` are trec_eval's ``-l``, ``-J`` and
    ``-M`` (see :func:`evaluate`).

    Raises:
        ValueError: an unknown metric name, or no query to evaluate.
    """
    specs = parse_metrics(list(metrics) if not isinstance(metrics, str) else metrics)
    if arrays.n_queries == 0:
        raise ValueError(
            "no query to evaluate: the qrels are empty"
            + (" or share no query with the run" if arrays.n_missing else "")
        )
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, int | np.integer):
        raise ValueError(f"relevance_level must be an integer, got {relevance_level!r}")
    # one sparse structure per (relevance level, judged-only, tie rule) the measures ask for:
    # the call's, or an ir_measures string's own rel= / judged_only= / provider's ties
    groups: dict[tuple[int, bool, bool], list[MetricSpec]] = {}
    for s in specs:
        key = (int(relevance_level) if s.level is None else s.level,
               bool(judged_only) if s.judged_only is None else s.judged_only, s.ties == "asc")
        groups.setdefault(key, []).append(s)
    values: dict[str, np.ndarray] = {}
    absent = arrays.seg_len == 0  # judged queries the run lacks (scored, under "zero")
    for (level, only, ascending), group in groups.items():
        hits = build_hits(
            arrays, strategy, level=level, judged_only=only,
            need_judged=any(s.needs_judged for s in group),
            max_docs=None if max_docs is None else int(max_docs), ascending_ties=ascending,
        )
        for s in group:
            v = _KERNELS[s.measure](hits, s)
            if s.ir and s.measure in ("num_q", "num_rel") and absent.any():
                v = np.where(absent, 0.0, v)  # ir_measures: 0, the default, for those
            values[s.name] = v
    values = {s.name: values[s.name] for s in specs}
    means = {s.name: summarise(s, values[s.name]) for s in specs}
    return RankingResult(
        means=means,
        qids=list(arrays.qids),
        per_query=values if per_query else {},
        n_missing=arrays.n_missing,
        n_without_relevant=int(np.count_nonzero(hits.num_rel == 0)),
    )


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    metrics: str | Sequence[str],
    *,
    per_query: bool = False,
    missing_query: str = "zero",
    relevance_level: int = 1,
    judged_only: bool = False,
    max_docs: int | None = None,
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
        relevance_level: a judged document is relevant when its relevance is >= this
            (trec_eval ``-l``, default 1; must be >= 0). nDCG/RBP/ERR gains ignore it.
        judged_only: drop every retrieved document without a judgement >= 0 before
            ranking (trec_eval ``-J``).
        max_docs: evaluate only each query's top ``max_docs`` documents in trec_eval order
            (trec_eval ``-M``; applied before ``judged_only``, as trec_eval does).

    Returns:
        A :class:`RankingResult` (a mapping ``{name: mean}``).

    Raises:
        ValueError: unknown metric names, malformed input, NaN scores, nothing to evaluate.
    """
    arrays = arrays_from_dicts(qrels, run, missing_query)
    return evaluate_arrays(
        arrays, metrics, per_query=per_query, relevance_level=relevance_level,
        judged_only=judged_only, max_docs=max_docs,
    )
