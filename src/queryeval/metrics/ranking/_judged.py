"""Measures that read judged non-relevant and unjudged documents: ``bpref``, ``infAP``,
``unj@k``, ``judged_share@k`` and ir_measures' ``Judged@k`` (trec_eval 10.0 ``m_bpref.c``, ``m_infap.c``, ``m_unjudged.c``).

Over the ranking (0-based rank j), for each relevant retrieved document, with ``n`` the judged
non-relevant (0 <= rel < L), ``r`` the relevant and ``u`` the pooled-but-unjudged (rel < 0)
documents ranked above it, N the query's non-relevant judgements and R = num_rel:

* bpref = (1/R) * sum of (1 - min(n, R) / min(N, R)) (1 when n = 0);
* infAP = (1/R) * sum of (1 if j = 0 else 1/(j+1) + j/(j+1) * (r+n+u)/j * (r+e)/(r+n+2e)),
  e = 0.00001;
* unj@k (trec_eval ``unj``) = documents in the top k without a judgement >= 0, / k;
* judged_share@k = documents in the top k with a judgement >= 0, / k; when fewer than k
  are retrieved the denominator is still k. (Formerly ``judged@k``; it is not ir_measures'
  ``Judged@k``, which is :func:`ir_judged`.)
* ir_measures' ``Judged@k`` (its ``judged`` provider) = documents in the top k, ties by docid
  ascending, that appear in the qrels at any relevance (-1 included), / min(k, retrieved).
* gm_bpref: per query log(max(bpref, 0.00001)); the summary is exp of their mean;
* num_nonrel_judged_ret: retrieved documents judged non-relevant (0 <= rel < L); summed.

R = 0 scores 0.
"""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._hits import Hits
from queryeval.metrics.ranking._map import MIN_GEO_MEAN

_INFAP_EPSILON = 0.00001


def _before(q: np.ndarray, flag: np.ndarray, n_queries: int) -> np.ndarray:
    """Per row (sorted by query then rank): how many earlier rows of its query have ``flag``."""
    c = np.cumsum(flag, dtype=np.int64) - flag
    counts = np.bincount(q, minlength=n_queries)
    first = np.cumsum(counts) - counts
    start = np.concatenate((c, [0]))[first]  # count before each query's first row
    return c - start[q]


def _rows(hits: Hits):
    if hits.jq is None:
        raise ValueError("internal: judged ranks were not built for this measure")
    return hits.jq, hits.jrank, hits.jrel


def bpref(hits: Hits, spec) -> np.ndarray:
    q, _, rel = _rows(hits)
    nonrel = (rel >= 0) & (rel < hits.level)
    n_before = _before(q, nonrel, hits.n_queries)
    relevant = rel >= hits.level
    qr = q[relevant]
    n = n_before[relevant].astype(np.float64)
    big_r = hits.num_rel[qr].astype(np.float64)
    den = np.minimum(hits.num_nonrel[qr], hits.num_rel[qr]).astype(np.float64)
    term = np.ones(qr.size)
    some = n > 0
    term[some] = 1.0 - np.minimum(n[some], big_r[some]) / den[some]
    total = np.bincount(qr, weights=term, minlength=hits.n_queries)
    out = np.zeros(hits.n_queries)
    np.divide(total, hits.num_rel, out=out, where=hits.num_rel > 0)
    return out


def infap(hits: Hits, spec) -> np.ndarray:
    q, rank, rel = _rows(hits)
    relevant = rel >= hits.level
    nonrel = (rel >= 0) & ~relevant
    unjudged = rel < 0
    r = _before(q, relevant, hits.n_queries)[relevant].astype(np.float64)
    n = _before(q, nonrel, hits.n_queries)[relevant].astype(np.float64)
    u = _before(q, unjudged, hits.n_queries)[relevant].astype(np.float64)
    j = rank[relevant].astype(np.float64)
    term = np.ones(j.size)
    later = j > 0
    jl = j[later]
    rl, nl, ul = r[later], n[later], u[later]
    term[later] = 1.0 / (jl + 1.0) + (jl / (jl + 1.0)) * ((rl + nl + ul) / jl) * (
        (rl + _INFAP_EPSILON) / (rl + nl + 2 * _INFAP_EPSILON)
    )
    total = np.bincount(q[relevant], weights=term, minlength=hits.n_queries)
    out = np.zeros(hits.n_queries)
    np.divide(total, hits.num_rel, out=out, where=hits.num_rel > 0)
    return out


def _judged_in_top(hits: Hits, k: int) -> np.ndarray:
    q, rank, rel = _rows(hits)
    mask = (rel >= 0) & (rank < k)
    return np.bincount(q[mask], minlength=hits.n_queries).astype(np.float64)


def unj(hits: Hits, spec) -> np.ndarray:
    k = spec.k
    shown = np.minimum(hits.num_ret, k).astype(np.float64)
    return (shown - _judged_in_top(hits, k)) / float(k)


def judged(hits: Hits, spec) -> np.ndarray:
    return _judged_in_top(hits, spec.k) / float(spec.k)


def ir_judged(hits: Hits, spec) -> np.ndarray:
    """ir_measures' ``Judged@k``; ``hits`` ranked with docid-ascending ties. 0 for a query
    with nothing retrieved (ir_measures' default for a query the run lacks)."""
    q, rank, _ = _rows(hits)
    top = np.bincount(q[rank < spec.k], minlength=hits.n_queries).astype(np.float64)
    shown = np.minimum(hits.num_ret, spec.k).astype(np.float64)
    out = np.zeros(hits.n_queries)
    np.divide(top, shown, out=out, where=shown > 0)
    return out


def gm_bpref(hits: Hits, spec) -> np.ndarray:
    return np.log(np.maximum(bpref(hits, spec), MIN_GEO_MEAN))


def num_nonrel_judged_ret(hits: Hits, spec) -> np.ndarray:
    q, _, rel = _rows(hits)
    nonrel = (rel >= 0) & (rel < hits.level)
    return np.bincount(q[nonrel], minlength=hits.n_queries).astype(np.float64)
