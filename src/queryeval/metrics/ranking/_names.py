"""The metric-name grammar: ``name``, ``name@k`` (ranx style) or ``name.k`` (trec_eval style).

Each name resolves to a canonical measure and an optional cutoff. trec_eval's own names are
accepted as aliases so users can paste what they already use (``ndcg_cut.10``, ``P.5``,
``recip_rank``, ``success.10``). The key under which a value is reported is always the name
exactly as the caller wrote it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: canonical measure -> whether a cutoff is required.
_MEASURES: dict[str, bool] = {
    "recall": False,
    "precision": True,
    "ndcg": False,
    "map": False,
    "mrr": False,
    "hit_rate": True,
}

#: accepted spellings -> canonical measure.
_ALIASES: dict[str, str] = {
    "recall": "recall",
    "precision": "precision",
    "p": "precision",
    "ndcg": "ndcg",
    "ndcg_cut": "ndcg",
    "map": "map",
    "map_cut": "map",
    "mrr": "mrr",
    "recip_rank": "mrr",
    "hit_rate": "hit_rate",
    "success": "hit_rate",
}

KNOWN_METRICS: tuple[str, ...] = (
    "recall", "recall@k", "precision@k", "ndcg", "ndcg@k", "map", "map@k", "mrr", "mrr@k",
    "hit_rate@k", "recip_rank", "P.k", "recall.k", "ndcg_cut.k", "map_cut.k", "success.k",
)

_GRAMMAR = re.compile(r"^(?P<name>[A-Za-z_]+)(?:[@.](?P<k>\d+))?$")


@dataclass(frozen=True)
class MetricSpec:
    """One requested metric: the caller's spelling, the canonical measure, the cutoff.

    ``k is None`` means "no cutoff": every retrieved document counts.
    """

    name: str
    measure: str
    k: int | None


def _unknown(name: str, why: str) -> ValueError:
    return ValueError(
        f"unknown metric {name!r} ({why}); known metrics: {', '.join(KNOWN_METRICS)} "
        "(k is a positive integer)"
    )


def parse_metric(name: str) -> MetricSpec:
    """Parse one metric name; raise :class:`ValueError` listing the known names if it is bad."""
    if not isinstance(name, str):
        raise _unknown(repr(name), "not a string")
    text = name.strip()
    match = _GRAMMAR.match(text)
    if match is None:
        raise _unknown(name, "expected NAME, NAME@K or NAME.K")
    measure = _ALIASES.get(match["name"].lower())
    if measure is None:
        raise _unknown(name, f"no measure called {match['name']!r}")
    k = int(match["k"]) if match["k"] is not None else None
    if k is not None and k < 1:
        raise _unknown(name, "the cutoff must be at least 1")
    if k is None and _MEASURES[measure]:
        raise _unknown(name, f"{measure} needs a cutoff, e.g. {match['name']}@10")
    return MetricSpec(name=text, measure=measure, k=k)


def parse_metrics(names: str | list[str] | tuple[str, ...]) -> list[MetricSpec]:
    """Parse a name or a list of names, dropping exact repeats, keeping the caller's order."""
    if isinstance(names, str):
        names = [names]
    if len(names) == 0:
        raise ValueError("no metrics requested; known metrics: " + ", ".join(KNOWN_METRICS))
    specs: list[MetricSpec] = []
    seen: set[str] = set()
    for name in names:
        spec = parse_metric(name)
        if spec.name not in seen:
            seen.add(spec.name)
            specs.append(spec)
    return specs
