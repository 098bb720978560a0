"""Counts and set measures (trec_eval ``num_q``, ``num_ret``, ``num_rel``, ``num_rel_ret``,
``set_P``, ``set_recall``, ``set_F``, ``Rprec``), from ``m_*.c`` of trec_eval 10.0.

* ``num_q`` = 1 per query; ``num_ret`` = documents retrieved; ``num_rel`` = relevant
  judgements; ``num_rel_ret`` = relevant retrieved. Summed over queries in the summary.
* ``set_P`` = num_rel_ret / num_ret; ``set_recall`` = num_rel_ret / num_rel.
* ``set_F`` (parameter x, default 1) = (x + 1) P R / (x P + R) with P = set_P, R = set_recall,
  0 when num_rel_ret = 0. trec_eval uses x where the textbook F-beta has beta squared: we do
  what trec_eval does.
* ``Rprec`` = relevant documents in the top num_rel / num_rel.
* ``set_map`` = num_rel_ret^2 / (num_ret num_rel); ``set_relative_P`` = num_rel_ret /
  min(num_ret, num_rel).
* ``utility`` (coefficients a, b, c, d; default 1, -1, 0, 0) = a num_rel_ret + b (num_ret -
  num_rel_ret) + c (num_rel - num_rel_ret) + d (N + num_rel_ret - num_ret - num_rel), with N
  the collection size, 0 as in trec_eval without ``-N``.

Every zero division scores 0.
"""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._hits import Hits


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(num.shape, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0, casting="unsafe")
    return out


def num_q(hits: Hits, spec) -> np.ndarray:
    return np.ones(hits.n_queries)


def num_ret(hits: Hits, spec) -> np.ndarray:
    return hits.num_ret.astype(np.float64)


def num_rel(hits: Hits, spec) -> np.ndarray:
    return hits.num_rel.astype(np.float64)


def num_rel_ret(hits: Hits, spec) -> np.ndarray:
    return hits.num_rel_ret.astype(np.float64)


def set_p(hits: Hits, spec) -> np.ndarray:
    return _ratio(hits.num_rel_ret.astype(np.float64), hits.num_ret)


def set_recall(hits: Hits, spec) -> np.ndarray:
    return _ratio(hits.num_rel_ret.astype(np.float64), hits.num_rel)


def set_f(hits: Hits, spec) -> np.ndarray:
    x = 1.0 if spec.param is None else spec.param
    p = set_p(hits, spec)
    r = set_recall(hits, spec)
    return _ratio((x + 1.0) * p * r, np.where(hits.num_rel_ret > 0, x * p + r, 0.0))


def rprec(hits: Hits, spec) -> np.ndarray:
    top = hits.rank < hits.num_rel[hits.q]
    return _ratio(hits.count(top).astype(np.float64), hits.num_rel)


def set_map(hits: Hits, spec) -> np.ndarray:
    nrr = hits.num_rel_ret.astype(np.float64)
    return _ratio(nrr * nrr, hits.num_ret.astype(np.float64) * hits.num_rel)


def set_relative_p(hits: Hits, spec) -> np.ndarray:
    return _ratio(hits.num_rel_ret.astype(np.float64), np.minimum(hits.num_ret, hits.num_rel))


#: trec_eval's ``-N`` (documents in the collection) when not given; only ``utility`` reads it.
NUM_DOCS_IN_COLL = 0


def utility(hits: Hits, spec) -> np.ndarray:
    a, b, c, d = spec.coeffs
    rr = hits.num_rel_ret.astype(np.float64)
    ret = hits.num_ret.astype(np.float64)
    rel = hits.num_rel.astype(np.float64)
    return a * rr + b * (ret - rr) + c * (rel - rr) + d * (NUM_DOCS_IN_COLL + rr - ret - rel)
