"""ndcg@k = DCG@k / IDCG@k with trec_eval's gains and discounts (``ndcg_cut.k``; ``ndcg``).

DCG@k = sum over retrieved documents at 1-based rank r <= k of gain / log2(r + 1), with
gain = the judged relevance level when it is > 0, else 0 (negative and zero judgements
and unjudged documents add nothing). IDCG@k is the DCG@k of the judged relevant documents
sorted by gain descending (all judgements, whether retrieved or not). Without a cutoff both
run over every position. Zero division: IDCG = 0 (no relevant judgement) scores 0.
"""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._gains import ideal, ranked, segmented_cumsum
from queryeval.metrics.ranking._hits import Hits


def compute(hits: Hits, k: int | None) -> np.ndarray:
    within = hits.grank < k if k is not None else np.ones(hits.grank.size, dtype=bool)
    dcg = np.bincount(
        hits.gq[within],
        weights=hits.ggain[within] / np.log2(hits.grank[within] + 2.0),
        minlength=hits.n_queries,
    )
    iq, ipos, igain = hits.ideal_rows(k)
    idcg = np.bincount(iq, weights=igain / np.log2(ipos + 2.0), minlength=hits.n_queries)
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
    """trec_eval 10.0 ``Rndcg`` (``Rndcg.L=G,...`` with gains, see ``_gains``): the mean of
    nDCG at the "R levels": for each positive gain present, the number of judgements with
    that gain or more (gains descending), nDCG@that number; plus, when at least R+ + 2
    documents were retrieved (R+ = judgements with a positive gain; trec_eval's loop), DCG
    over all retrieved / IDCG@R+. Queries without a relevant judgement (relevance >= L) score
    0; so do those with no positive gain, where trec_eval divides 0 by 0 (``-l 0`` with only
    level-0 judgements, or gains that are all <= 0)."""
    nq = hits.n_queries
    iq, ipos, igain = ideal(hits, spec.gains)
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
    gq, grank, ggain = ranked(hits, spec.gains)
    w = ggain / np.log2(grank + 2.0)
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


def with_gains(hits: Hits, gains: tuple[tuple[int, float], ...], k: int | None = None) -> np.ndarray:
    """trec_eval ``ndcg.L=G,...``: nDCG over the whole ranking with the gains of ``_gains``:
    DCG sums the gain of every retrieved document (negative gains too); IDCG is the DCG of the
    ideal ranking (positive gains, descending). A zero ideal DCG scores 0. With ``k`` (only
    ir_measures' ``nDCG(gains=...)@k``, which maps the qrels' levels to the gains and asks
    pytrec_eval for ``ndcg_cut_k``): both sums stop at rank k."""
    q, rank, g = ranked(hits, gains)
    iq, ipos, ig = ideal(hits, gains)
    if k is not None:
        top, itop = rank < k, ipos < k
        q, rank, g = q[top], rank[top], g[top]
        iq, ipos, ig = iq[itop], ipos[itop], ig[itop]
    dcg = np.bincount(q, weights=g / np.log2(rank + 2.0), minlength=hits.n_queries)
    idcg = np.bincount(iq, weights=ig / np.log2(ipos + 2.0), minlength=hits.n_queries)
    out = np.zeros(hits.n_queries)
    np.divide(dcg, idcg, out=out, where=idcg > 0)
    return out


def ndcg_rel(hits: Hits, spec) -> np.ndarray:
    """trec_eval ``ndcg_rel`` (gains as ``_gains``; ``ndcg_rel.L=G,...``): nDCG averaged over
    the R+ judgements with a positive gain. Each retrieved document with a positive gain at
    0-based rank i adds DCG@(i+1) / IDCG@min(i+1, R+); each one not retrieved adds
    DCG(all retrieved) / IDCG@R+. The sum over R+; 0 when the sum is not > 0 (trec_eval's
    test, so negative gains can floor a query at 0) or R+ = 0."""
    nq = hits.n_queries
    q, rank, g = ranked(hits, spec.gains)
    dcg_at = segmented_cumsum(q, g / np.log2(rank + 2.0), nq)  # DCG through each row
    iq, ipos, ig = ideal(hits, spec.gains)
    idcg_at = segmented_cumsum(iq, ig / np.log2(ipos + 2.0), nq)
    n_pos = np.bincount(iq, minlength=nq)
    ifirst = np.cumsum(n_pos) - n_pos
    idcg = np.zeros(nq)
    has = n_pos > 0
    idcg[has] = idcg_at[ifirst[has] + n_pos[has] - 1]
    n_rows = np.bincount(q, minlength=nq)
    dcg = np.zeros(nq)
    dcg[n_rows > 0] = dcg_at[np.cumsum(n_rows)[n_rows > 0] - 1]
    pos = g > 0
    pq = q[pos]
    cut = np.minimum(rank[pos] + 1, n_pos[pq])  # >= 1: a positive gain is in the ideal
    term = dcg_at[pos] / idcg_at[ifirst[pq] + cut - 1]
    total = np.bincount(pq, weights=term, minlength=nq).astype(np.float64)
    missing = n_pos - np.bincount(pq, minlength=nq)
    rest = np.zeros(nq)
    np.divide(missing * dcg, idcg, out=rest, where=has)
    total += rest
    out = np.zeros(nq)
    np.divide(total, n_pos, out=out, where=has & (total > 0))
    return out
