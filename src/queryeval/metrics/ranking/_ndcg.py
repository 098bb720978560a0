"""ndcg@k = DCG@k / IDCG@k with trec_eval's gains and discounts (``ndcg_cut.k``; ``ndcg``).

DCG@k = sum over retrieved documents at 1-based rank r <= k of gain / log2(r + 1), with
gain = the judged relevance level when it is > 0, else 0 (negative and zero judgements
and unjudged documents add nothing). IDCG@k is the DCG@k of the judged relevant documents
sorted by gain descending (all judgements, whether retrieved or not). Without a cutoff both
run over every position. Zero division: IDCG = 0 (no relevant judgement) scores 0.
"""

from __future__ import annotations

import numpy as np

from queryeval.metrics.ranking._hits import Hits


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
