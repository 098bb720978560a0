"""ndcg@k = DCG@k / IDCG@k with trec_eval's gains and discounts (``ndcg_cut.k``; ``ndcg``).

DCG@k = sum over retrieved documents at 1-based rank r <= k of gain / log2(r + 1), with
gain = the judged relevance level when it is > 0, else 0 (negative and zero judgements
and unjudged documents add nothing). IDCG@k is the DCG@k of the judged relevant documents
sorted by gain descending (all judgements, whether retrieved or not). Without a cutoff both
run over every position. Zero division: IDCG = 0 (no relevant judgement) scores 0.
"""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._hits import Hits, position_in_group


def compute(hits: Hits, k: int | None) -> np.ndarray:
    within = hits.grank < k if k is not None else np.ones(hits.grank.size, dtype=bool)
    dcg = np.bincount(
        hits.gq[within],
        weights=hits.ggain[within] / np.log2(hits.grank[within] + 2.0),
        minlength=hits.n_queries,
    )
    ideal = hits.ideal_pos < k if k is not None else np.ones(hits.ideal_pos.size, dtype=bool)
    idcg = np.bincount(
        hits.ideal_q[ideal],
        weights=hits.ideal_gain[ideal] / np.log2(hits.ideal_pos[ideal] + 2.0),
        minlength=hits.n_queries,
    )
    out = np.zeros(hits.n_queries)
    np.divide(dcg, idcg, out=out, where=idcg > 0)
    return out


def _interval_sums(values: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """``values[start[i]:end[i]].sum()`` for every i, summed in order (no prefix-sum
    cancellation)."""
    out = np.zeros(start.size)
    ok = end > start
    if not ok.any() or values.size == 0:
        return out
    padded = np.append(values, 0.0)
    idx = np.empty(2 * int(ok.sum()), dtype=np.int64)
    idx[0::2] = start[ok]
    idx[1::2] = end[ok]
    out[ok] = np.add.reduceat(padded, idx)[0::2]
    return out


def rndcg(hits: Hits, spec) -> np.ndarray:
    """trec_eval 10.0 ``Rndcg`` (default gains): the mean of nDCG at the "R levels": for
    each positive relevance level present, the number of judgements at that level or above
    (levels descending), nDCG@that number; plus, when at least R+ + 2 documents were
    retrieved (R+ = positive judgements; trec_eval's loop), DCG over all retrieved / IDCG@R+.
    Queries without a
    relevant judgement score 0 (so do those whose only relevant level is 0, under ``-l 0``,
    where trec_eval divides 0 by 0)."""
    nq = hits.n_queries
    iq, ipos, igain = hits.ideal_q, hits.ideal_pos, hits.ideal_gain
    n_pos = np.bincount(iq, minlength=nq)
    ifirst = np.cumsum(n_pos) - n_pos
    # boundaries: the last ideal row of each (query, level)
    last = np.ones(iq.size, dtype=bool)
    if iq.size > 1:
        last[:-1] = (iq[1:] != iq[:-1]) | (igain[1:] != igain[:-1])
    bq = iq[last]
    bcut = ipos[last] + 1
    # trec_eval's loop notices the drop to gain 0 while handling document R+ (0-based), adds
    # that document's gain and stops; the final term exists only if documents remain after it.
    extra = np.flatnonzero((hits.num_ret > n_pos + 1) & (n_pos > 0))
    tq = np.concatenate((bq, extra))
    t_ideal = np.concatenate((bcut, n_pos[extra]))  # IDCG cutoff
    t_dcg = np.concatenate((bcut, hits.num_ret[extra]))  # DCG cutoff
    ideal_w = igain / np.log2(ipos + 2.0)
    idcg = _interval_sums(ideal_w, ifirst[tq], ifirst[tq] + t_ideal)
    gq, grank = hits.gq, hits.grank
    w = hits.ggain / np.log2(grank + 2.0)
    n_g = np.bincount(gq, minlength=nq)
    gfirst = np.cumsum(n_g) - n_g
    width = int(grank.max()) + 2 if grank.size else 1
    width = max(width, int(t_dcg.max()) + 1 if t_dcg.size else 1)
    key = gq.astype(np.int64) * width + grank
    gend = np.searchsorted(key, tq.astype(np.int64) * width + np.minimum(t_dcg, width - 1))
    dcg = _interval_sums(w, gfirst[tq], gend)
    terms = np.zeros(tq.size)
    np.divide(dcg, idcg, out=terms, where=idcg > 0)
    total = np.bincount(tq, weights=terms, minlength=nq)
    count = np.bincount(tq[idcg > 0], minlength=nq)
    out = np.zeros(nq)
    np.divide(total, count, out=out, where=(count > 0) & (hits.num_rel > 0))
    return out


def with_gains(hits: Hits, gains: tuple[tuple[int, float], ...]) -> np.ndarray:
    """trec_eval ``ndcg.L=G,...``: nDCG over the whole ranking with relevance level L worth
    gain G (levels not named keep gain = level; level 0 may get a gain; gains may be
    negative). DCG sums the gain of every retrieved judged document; the ideal ranking takes
    the judgements (relevance >= 0) by gain, descending, while the gain is > 0. A zero ideal
    DCG scores 0. (trec_eval sorts the gains with an integer-truncating comparison, so it can
    misorder two levels whose gains differ by less than 1; we sort exactly.)"""
    table = dict(gains)

    def gain_of(levels: np.ndarray) -> np.ndarray:
        out = np.where(levels > 0, levels, 0.0).astype(np.float64)
        for level, gain in table.items():
            out[levels == level] = gain
        return out

    if hits.jq is None:
        raise ValueError("internal: judged ranks were not built for ndcg with gains")
    g = gain_of(hits.jrel)
    dcg = np.bincount(hits.jq, weights=g / np.log2(hits.jrank + 2.0), minlength=hits.n_queries)
    rel, q = hits.judged_rel, hits.judged_q
    judged = np.flatnonzero(rel >= 0)
    ig = gain_of(rel[judged])
    keep = ig > 0
    rows, ig = judged[keep], ig[keep]
    order = np.lexsort((-ig, q[rows]))
    iq, ig = q[rows][order], ig[order]
    pos = position_in_group(iq, hits.n_queries)
    idcg = np.bincount(iq, weights=ig / np.log2(pos + 2.0), minlength=hits.n_queries)
    out = np.zeros(hits.n_queries)
    np.divide(dcg, idcg, out=out, where=idcg > 0)
    return out
