"""Ranking metrics with trec_eval's conventions, vectorised (no JIT, no warm-up).

``evaluate(qrels, run, ["ndcg@10", "recall@100"])`` takes the dict shapes pytrec_eval and ranx
take and returns the same numbers as trec_eval 10.0 (pytrec_eval). One metric family per
module (``_recall``, ``_precision``, ``_ndcg``, ``_map``, ``_mrr``, ``_hit_rate``, ``_counts``,
``_judged``, ``_iprec``, ``_rbp``, ``_g``; trec_eval's gain tables in ``_gains``), all reading
one shared sparse structure (ir_measures' measure strings, ``AP``, ``P(rel=2)@5``,
``RR@10``, ``Judged@10``, are read by ``_irm`` into the same measures): the trec_eval rank
of every relevant retrieved document, and of every judged one when a measure needs it (see
``_hits`` and ``_ranks``).

The one recall and the one reciprocal rank of the package live here too, per query from the
1-based ranks of its relevant items (``recall_from_ranks``, ``mrr_from_ranks``,
``reciprocal_rank``, ``NOT_FOUND``): the fields task, the tuner and the retrieval task's
single-relevant fast path read them (the trec_eval kernels are written with them).
Conventions and design: docs/ranking.md.

Names are imported on first use (PEP 562), so a caller of the per-query kernels does not
load the engine's two dozen modules.
"""

import importlib as _importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names, for type checkers and the API reference (mkdocstrings)
    from queryeval.metrics.ranking._arrays import RankingArrays, arrays_from_dicts
    from queryeval.metrics.ranking._columns import (
        Columns,
        DuplicateEntryError,
        arrays_from_columns,
    )
    from queryeval.metrics.ranking._evaluate import RankingResult, evaluate, evaluate_arrays
    from queryeval.metrics.ranking._evaluate import evaluate as score
    from queryeval.metrics.ranking._mrr import mrr_from_ranks, reciprocal_rank
    from queryeval.metrics.ranking._names import (
        KNOWN_METRICS,
        MetricSpec,
        parse_metric,
        parse_metrics,
    )
    from queryeval.metrics.ranking._recall import NOT_FOUND, recall_from_ranks
    from queryeval.metrics.ranking._report import trec_eval_lines

_WHERE = {
    "RankingArrays": "_arrays", "arrays_from_dicts": "_arrays",
    "Columns": "_columns", "DuplicateEntryError": "_columns", "arrays_from_columns": "_columns",
    "RankingResult": "_evaluate", "evaluate": "_evaluate", "evaluate_arrays": "_evaluate",
    "score": "_evaluate",
    "KNOWN_METRICS": "_names", "MetricSpec": "_names", "parse_metric": "_names",
    "parse_metrics": "_names",
    "trec_eval_lines": "_report",
    "NOT_FOUND": "_recall", "recall_from_ranks": "_recall",
    "mrr_from_ranks": "_mrr", "reciprocal_rank": "_mrr",
}
"""Each public name and the module that defines it (``score`` is ``evaluate`` under the
name every family uses: ``score(qrels, run, metrics)``)."""

__all__ = [
    "KNOWN_METRICS",
    "NOT_FOUND",
    "Columns",
    "DuplicateEntryError",
    "MetricSpec",
    "RankingArrays",
    "RankingResult",
    "arrays_from_columns",
    "arrays_from_dicts",
    "evaluate",
    "evaluate_arrays",
    "mrr_from_ranks",
    "parse_metric",
    "parse_metrics",
    "recall_from_ranks",
    "reciprocal_rank",
    "score",
    "trec_eval_lines",
]


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(f"{__name__}.{module}"),
                    "evaluate" if name == "score" else name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
