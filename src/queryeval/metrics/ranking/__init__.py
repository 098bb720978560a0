"""Ranking metrics with trec_eval's conventions, vectorised (no JIT, no warm-up).

``evaluate(qrels, run, ["ndcg@10", "recall@100"])`` takes the dict shapes pytrec_eval and ranx
take and returns the same numbers as trec_eval 10.0 (pytrec_eval). One metric family per
module (``_recall``, ``_precision``, ``_ndcg``, ``_map``, ``_mrr``, ``_hit_rate``, ``_counts``,
``_judged``, ``_iprec``, ``_rbp``, ``_g``; trec_eval's gain tables in ``_gains``), all reading
one shared sparse structure (ir_measures' measure strings, ``AP``, ``P(rel=2)@5``,
``RR@10``, ``Judged@10``, are read by ``_irm`` into the same measures): the trec_eval rank
of every relevant retrieved document, and of every judged one when a measure needs it (see
``_hits`` and ``_ranks``).
Conventions and design: docs/ranking.md.
"""

from queryeval.metrics.ranking._arrays import RankingArrays, arrays_from_dicts
from queryeval.metrics.ranking._columns import Columns, DuplicateEntryError, arrays_from_columns
from queryeval.metrics.ranking._evaluate import RankingResult, evaluate, evaluate_arrays
from queryeval.metrics.ranking._names import KNOWN_METRICS, MetricSpec, parse_metric, parse_metrics
from queryeval.metrics.ranking._report import trec_eval_lines

__all__ = [
    "KNOWN_METRICS",
    "Columns",
    "DuplicateEntryError",
    "MetricSpec",
    "RankingArrays",
    "RankingResult",
    "arrays_from_columns",
    "arrays_from_dicts",
    "evaluate",
    "evaluate_arrays",
    "parse_metric",
    "parse_metrics",
    "trec_eval_lines",
]

score = evaluate
"""``score(qrels, run, metrics)``: :func:`evaluate` under the name every family uses."""
__all__.append("score")
