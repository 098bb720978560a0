"""The shared pieces of the column-mapping search (:mod:`queryeval.metrics.tables.search`,
whose docstring explains the search): its limits (:class:`Budget`) and result, the tuning
constants, the entity F1 of summed precisions and recalls, and the grouping step every
refinement of the row groups ends in (:func:`_split_by_keys`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from queryeval.metrics.tables.encode import factorize

EPS = 1e-12
_DENSE_MIN = 1 << 15  # dense counting is cheaper than hashing below this range
_PROBE_NODES = 64  # search nodes tried before computing the seeded incumbent
_BATCH_MAX = 1 << 22  # largest histogram of a batched child evaluation
_MAX_SUBSETS = 64  # p > g: largest number of predicted-column subsets searched one by one
_VOTE_ROUNDS = 12  # iterative vote: column pairs fixed one at a time, then one assignment
_VOTE_WORK = 200_000_000  # cell visits allowed for the up-front votes of all subsets
_MUL = np.uint64(0x9E3779B97F4A7C15)  # odd multiplier combining a group id with a row hash


@dataclass(frozen=True)
class Budget:
    """Limits on the mapping search. ``None`` disables a limit. A node is one refinement of
    the row groups (one pass over the still-matchable rows). The defaults finish every real
    case we have seen exactly; a time limit makes results depend on machine speed, so set
    ``max_seconds=None`` where reproducibility matters more than latency."""

    max_nodes: int | None = 200_000
    max_seconds: float | None = 30.0
    stall_nodes: int | None = 5_000
    """Give up early (``exact=False``) once the incumbent has not improved for this many
    nodes *and* the search's progress estimate projects more than 1.25 x ``max_nodes`` nodes
    or ``max_seconds`` seconds for the whole search: such a search would run out anyway, so
    waiting for the limit gains nothing. No effect when both limits are ``None``; ``None``
    turns it off."""


@dataclass(frozen=True)
class SearchResult:
    """The best mapping found (predicted column index per gold column), its row tp, whether
    the search finished (``exact``) and how many nodes it explored."""

    mapping: tuple[int, ...]
    tp: int
    exact: bool
    nodes: int
    tp_bound: int = -1
    """A proven upper bound on the row tp of every mapping: ``tp`` when exact, otherwise the
    largest bound among the parts of the search left open (``-1``: not computed)."""


class _OutOfBudget(Exception):
    pass


# Early stop: the projected work must exceed a limit this many times. On 70 random planted
# searches that finish, the projection overestimated their size by at most 1.21x while they
# were stalled, mostly under 1.07x (bench/tables.py --stall-sweep 30 / 40 --seed 2).
_PROJECTION_MARGIN = 1.25


class _ProbeOver(Exception):
    pass


def f1_from_sums(psum: float, rsum: float, g: int) -> float:
    """Entity F1 from summed per-column precisions / recalls over ``g`` columns."""
    p, r = psum / g, rsum / g
    return 2 * p * r / (p + r) if p + r > 0 else 0.0



def _split_by_keys(gi: np.ndarray, key_g: np.ndarray, pi: np.ndarray, key_p: np.ndarray
                   ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Group gold and predicted rows by their keys: the tp of that grouping (per key, the
    smaller count) and the rows that still have a counterpart, with their new group ids."""
    codes, k = factorize(np.concatenate([key_g, key_p]))
    cg, cp = codes[:len(gi)], codes[len(gi):]
    cnt_g = np.bincount(cg, minlength=k)
    cnt_p = np.bincount(cp, minlength=k)
    tp = int(np.minimum(cnt_g, cnt_p).sum())
    keep_g = cnt_p[cg] > 0
    keep_p = cnt_g[cp] > 0
    return tp, gi[keep_g], cg[keep_g], pi[keep_p], cp[keep_p]
