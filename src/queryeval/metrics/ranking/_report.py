"""trec_eval's text output (``trec_eval -q``): ``measure<TAB>query<TAB>value`` lines."""

from __future__ import annotations

from collections.abc import Sequence

from queryeval.metrics.ranking._evaluate import RankingResult
from queryeval.metrics.ranking._names import parse_metrics


def _value(aggregate: str, value: float) -> str:
    if aggregate == "sum":  # trec_eval prints its counts with %ld
        return str(int(round(value)))
    return f"{value:6.4f}"


def trec_eval_lines(
    result: RankingResult, metrics: str | Sequence[str], *, per_query: bool = False
) -> str:
    """The lines trec_eval prints: with ``per_query``, every query's measures (queries in
    ``result.qids`` order; ``gm_map`` has no per-query line, as in trec_eval), then the
    summary under the query id ``all``. Each line is ``%-22s\\t%s\\t%6.4f`` (counts: an
    integer), the measure named as the caller spelled it.
    """
    specs = parse_metrics(list(metrics) if not isinstance(metrics, str) else metrics)
    out: list[str] = []
    if per_query:
        if not result.per_query:
            raise ValueError("per-query values were not requested (per_query=False)")
        for i, qid in enumerate(result.qids):
            for spec in specs:
                if spec.aggregate == "gm":
                    continue
                value = _value(spec.aggregate, float(result.per_query[spec.name][i]))
                out.append(f"{spec.name:<22}\t{qid}\t{value}\n")
    for spec in specs:
        out.append(f"{spec.name:<22}\tall\t{_value(spec.aggregate, result.means[spec.name])}\n")
    return "".join(out)
