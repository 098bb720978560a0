"""precision@k = relevant documents in the top k / k (trec_eval ``P.k``), and its relatives.

The denominator is always k, even when the query retrieved fewer than k documents (trec_eval's
convention). k >= 1 is enforced by the name grammar, so there is no zero division.

* ``relative_P@k`` (trec_eval ``relative_P.k``): relevant in the top k / min(k, num_rel);
  0 when num_rel = 0.
* ``Rprec_mult_X`` (trec_eval ``Rprec_mult.X``): precision@c with c = (long)(X num_rel + 0.9)
  (trec_eval's truncating rounding); 0 when c = 0.
"""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._hits import Hits


def compute(hits: Hits, k: int | None) -> np.ndarray:
    if k is None:
        raise ValueError("precision needs a cutoff")
    return hits.count(hits.within(k)) / float(k)


def relative(hits: Hits, spec) -> np.ndarray:
    k = spec.k
    den = np.minimum(hits.num_rel, k).astype(np.float64)
    out = np.zeros(hits.n_queries)
    np.divide(hits.count(hits.within(k)).astype(np.float64), den, out=out, where=den > 0)
    return out


def rprec_mult(hits: Hits, spec) -> np.ndarray:
    cut = np.floor(float(spec.param) * hits.num_rel + 0.9).astype(np.int64)
    found = hits.count(hits.rank < cut[hits.q]).astype(np.float64)
    out = np.zeros(hits.n_queries)
    np.divide(found, cut, out=out, where=cut > 0, casting="unsafe")
    return out
