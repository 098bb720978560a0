"""The metric-name grammar: ``name``, ``name@k`` (ranx style), ``name.k`` or ``name_k``
(trec_eval style).

Each name resolves to a canonical measure and an optional argument: an integer cutoff
(``ndcg@10``, ``P_5``, ``ndcg_cut.10``) or a real parameter (``iprec_at_recall_0.10``,
``rbp.p=0.8``, ``set_F.0.5``). trec_eval's own names are accepted as aliases so users can
paste what they already use. The key under which a value is reported is always the name
exactly as the caller wrote it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from queryeval.metrics.ranking._irm import ir_name, parse_ir


@dataclass(frozen=True)
class _Measure:
    #: "none": no argument; "cutoff" / "cutoff!": optional / required integer >= 1;
    #: "real" / "real!": optional / required real parameter.
    arg: str
    #: trec_eval's summary over queries: "mean", "sum" (counts) or "gm" (geometric mean).
    aggregate: str = "mean"
    #: needs the ranks of every judged retrieved document, not only the relevant ones.
    judged: bool = False
    #: default of an optional real parameter; allowed open/closed range check in _check_real.
    default: float | None = None


_MEASURES: dict[str, _Measure] = {
    "recall": _Measure("cutoff"),
    "precision": _Measure("cutoff!"),
    "ndcg": _Measure("cutoff"),
    "map": _Measure("cutoff"),
    "mrr": _Measure("cutoff"),
    "hit_rate": _Measure("cutoff!"),
    "num_q": _Measure("none", "sum"),
    "num_ret": _Measure("none", "sum"),
    "num_rel": _Measure("none", "sum"),
    "num_rel_ret": _Measure("none", "sum"),
    "rprec": _Measure("none"),
    "gm_map": _Measure("none", "gm"),
    "bpref": _Measure("none", judged=True),
    "infap": _Measure("none", judged=True),
    "set_p": _Measure("none"),
    "set_recall": _Measure("none"),
    "set_f": _Measure("real", default=1.0),
    "iprec_at_recall": _Measure("real!"),
    "11pt_avg": _Measure("none"),
    "rndcg": _Measure("none"),
    "rbp": _Measure("real", default=0.9),
    "err_qmax": _Measure("cutoff"),
    "unj": _Measure("cutoff!", judged=True),
    "judged_share": _Measure("cutoff!", judged=True),
    # ir_measures' definitions (``Judged@k``, ``ERR@k``), reached through _irm only
    "ir_judged": _Measure("cutoff!", judged=True),
    "iprec_v9": _Measure("real!"),
    "gdeval_err": _Measure("cutoff!"),
    "ndcg_rel": _Measure("none"),
    "g": _Measure("none"),
    "bing": _Measure("none"),
    "rprec_mult": _Measure("real!"),
    "relative_p": _Measure("cutoff!"),
    "set_relative_p": _Measure("none"),
    "set_map": _Measure("none"),
    "gm_bpref": _Measure("none", "gm", judged=True),
    "num_nonrel_judged_ret": _Measure("none", "sum", judged=True),
    "utility": _Measure("none"),
}

#: measures that take trec_eval's gain mapping ``L=G,...`` (``rbp`` also ``p=X`` in it).
_GAIN_MEASURES = frozenset({"ndcg", "rndcg", "rbp", "ndcg_rel", "g"})
#: trec_eval's default ``utility`` coefficients: 1 per relevant retrieved, -1 per non-relevant.
UTILITY_DEFAULT = (1.0, -1.0, 0.0, 0.0)

#: accepted spellings (lower case) -> canonical measure.
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
    "num_q": "num_q",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
    "rprec": "rprec",
    "r_precision": "rprec",
    "gm_map": "gm_map",
    "bpref": "bpref",
    "infap": "infap",
    "set_p": "set_p",
    "set_recall": "set_recall",
    "set_f": "set_f",
    "iprec_at_recall": "iprec_at_recall",
    "11pt_avg": "11pt_avg",
    "rndcg": "rndcg",
    "rbp": "rbp",
    "err_qmax": "err_qmax",
    "unj": "unj",
    "unjudged": "unj",
    "judged_share": "judged_share",
    "ndcg_rel": "ndcg_rel",
    "g": "g",
    "bing": "bing",
    "rprec_mult": "rprec_mult",
    "relative_p": "relative_p",
    "set_relative_p": "set_relative_p",
    "set_map": "set_map",
    "gm_bpref": "gm_bpref",
    "num_nonrel_judged_ret": "num_nonrel_judged_ret",
    "utility": "utility",
}

KNOWN_METRICS: tuple[str, ...] = (
    "recall", "recall@k", "precision@k", "ndcg", "ndcg@k", "map", "map@k", "mrr", "mrr@k",
    "hit_rate@k", "ndcg.L=G,L=G (gains)", "num_q", "num_ret", "num_rel", "num_rel_ret", "Rprec",
    "gm_map", "bpref", "infAP", "set_P", "set_recall", "set_F", "set_F.beta",
    "iprec_at_recall_X (0<=X<=1)", "11pt_avg", "11pt_avg.X,Y,...", "Rndcg",
    "rbp", "rbp.p=X", "err_qmax", "err_qmax@k", "unj@k", "judged_share@k", "recip_rank", "P.k", "P_k",
    "recall.k", "ndcg_cut.k", "ndcg_cut_k", "map_cut.k", "success.k",
    "Rndcg.L=G,L=G", "rbp.p=X,L=G", "ndcg_rel", "ndcg_rel.L=G", "G", "G.L=G", "binG",
    "Rprec_mult_X (X>=0)", "relative_P@k", "set_relative_P", "set_map", "gm_bpref",
    "num_nonrel_judged_ret", "utility", "utility.A,B,C,D",
    "ir_measures' names (AP, P(rel=2)@5, RR@10, nDCG@10, Judged@10, ERR@10, ...; "
    "docs/ranking.md)",
)

#: our former names that ir_measures spells (case aside) for another definition.
_RENAMED = {
    "judged": "ambiguous: ir_measures' Judged@k (spelled so: every qrels entry counts, -1 "
              "included, over min(k, retrieved), ties by docid ascending) or queryeval's "
              "judged_share@k (judgements >= 0 in the top k, over k), formerly judged@k",
    "err": "ambiguous: ir_measures' ERR@k (spelled so: gdeval, maximum grade 4) or queryeval's "
           "err_qmax@k (normalised by the query's top grade), formerly err@k",
}

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)"
_PAIR = rf"(?:p|\d+)={_NUMBER}"
_GRAMMAR = re.compile(
    r"^(?P<name>[A-Za-z0-9_]+?)(?:[@._](?:(?:p=)?(?P<arg>\d+(?:\.\d*)?|\.\d+)"
    rf"|(?P<gains>{_PAIR}(?:,{_PAIR})*)"
    rf"|(?P<coeffs>{_NUMBER}(?:,{_NUMBER})+)))?$"
)


@dataclass(frozen=True)
class MetricSpec:
    """One requested metric: the caller's spelling, the canonical measure, its argument.

    ``k`` is the integer cutoff (None: no cutoff, every retrieved document counts);
    ``param`` the real parameter of ``iprec_at_recall``, ``rbp`` (persistence p) and
    ``set_F`` (trec_eval's beta), else None.
    """

    name: str
    measure: str
    k: int | None
    param: float | None = None
    #: trec_eval's gain mapping (``ndcg.1=3,2=9``, also ``Rndcg``, ``rbp``, ``ndcg_rel``, ``G``):
    #: ((level, gain), ...); None: the default gains (gain = level).
    gains: tuple[tuple[int, float], ...] | None = None
    #: ``utility``'s four coefficients (relevant retrieved, non-relevant retrieved, relevant
    #: not retrieved, non-relevant not retrieved), or ``11pt_avg``'s recall levels
    #: (``11pt_avg.0.2,0.5,0.8``; None: the 11 levels 0.0, 0.1, ..., 1.0); else None.
    coeffs: tuple[float, ...] | None = None
    #: the measure's own relevance level and judged-only flag (ir_measures' ``rel=`` and
    #: ``judged_only=``); None: the call's ``relevance_level`` / ``judged_only``.
    level: int | None = None
    judged_only: bool | None = None
    #: score ties: ``desc`` (docid descending: trec_eval, pytrec_eval, gdeval) or ``asc``
    #: (docid ascending: ir_measures' msmarco and judged providers).
    ties: str = "desc"
    #: an ir_measures string: a judged query the run lacks scores 0 on every measure (its
    #: default), ``NumQ`` and ``NumRel`` included.
    ir: bool = False

    @property
    def aggregate(self) -> str:
        return _MEASURES[self.measure].aggregate

    @property
    def needs_judged(self) -> bool:
        return _MEASURES[self.measure].judged or self.gains is not None


def _unknown(name: str, why: str) -> ValueError:
    """A name that is no measure: the reason and every known name."""
    return ValueError(
        f"unknown metric {name!r} ({why}); known metrics: {', '.join(KNOWN_METRICS)} "
        "(k is a positive integer)"
    )


def _bad(name: str, why: str) -> ValueError:
    """A known measure with a parameter it cannot take: the reason alone."""
    return ValueError(f"bad metric {name!r}: {why}")


def _check_real(name: str, measure: str, value: float) -> None:
    if measure == "iprec_at_recall" and not 0.0 <= value <= 1.0:
        raise _bad(name, "the recall level must be between 0 and 1")
    if measure == "rbp" and not 0.0 < value < 1.0:
        raise _bad(name, "the persistence p must be strictly between 0 and 1")
    if measure == "set_f" and value < 0.0:
        raise _bad(name, "beta must be >= 0")


def _check_values(name: str, measure: str, values: tuple[float, ...]) -> tuple[float, ...]:
    """``utility.a,b,c,d`` (four coefficients) and ``11pt_avg.X,Y,...`` (recall levels)."""
    if measure == "utility":
        if len(values) != 4:
            raise _bad(name, "utility takes four coefficients, e.g. utility.1,-1,0,0")
        return values
    if measure != "11pt_avg":
        raise _bad(name, "only utility (utility.1,-1,0,0) and 11pt_avg (11pt_avg.0.2,0.5,0.8)"
                       " take a list of numbers")
    if not all(0.0 <= v <= 1.0 for v in values):
        raise _bad(name, "the recall levels must be between 0 and 1")
    if any(b < a for a, b in zip(values, values[1:], strict=False)):
        raise _bad(name, "the recall levels must be increasing (trec_eval's loop assumes it)")
    return values


def _with_gains(name: str, text: str, measure: str, spelled: str, pairs_text: str) -> MetricSpec:
    """``ndcg.1=3,2=9``, ``Rndcg.0=1``, ``rbp.p=0.8,2=3``: level=gain pairs (and rbp's p)."""
    if measure not in _GAIN_MEASURES or spelled.lower() in ("ndcg_cut", "map_cut"):
        raise _bad(name, "only ndcg, Rndcg, rbp, ndcg_rel and G take gains, e.g. ndcg.1=3,2=9"
                       " (trec_eval's ndcg_cut has no gains)")
    pairs = [part.split("=") for part in pairs_text.split(",")]
    param = _MEASURES[measure].default
    gains: list[tuple[int, float]] = []
    for key, value in pairs:
        if key == "p":
            if measure != "rbp":
                raise _bad(name, "only rbp takes p=X")
            param = float(value)
            _check_real(name, measure, param)
        else:
            gains.append((int(key), float(value)))
    if len({level for level, _ in gains}) != len(gains) or sum(k == "p" for k, _ in pairs) > 1:
        raise _bad(name, "a relevance level is given two gains")
    return MetricSpec(name=text, measure=measure, k=None, param=param,
                      gains=tuple(gains) if gains else None)


def parse_metric(name: str) -> MetricSpec:
    """Parse one metric name; raise :class:`ValueError` listing the known names if it is bad."""
    if not isinstance(name, str):
        raise _unknown(repr(name), "not a string")
    text = name.strip()
    if ir_name(text) is not None:  # ir_measures' spelling (case-sensitive): its definition
        return MetricSpec(**parse_ir(text))
    match = _GRAMMAR.match(text)
    if match is None:
        raise _unknown(name, "expected NAME, NAME@K, NAME.K or NAME_K")
    measure = _ALIASES.get(match["name"].lower())
    if match["name"].lower() in _RENAMED:
        raise _bad(name, _RENAMED[match["name"].lower()])
    if measure is None:
        raise _unknown(name, f"no measure called {match['name']!r}")
    kind = _MEASURES[measure]
    if match["gains"] is not None:
        return _with_gains(name, text, measure, match["name"], match["gains"])
    if match["coeffs"] is not None or (measure == "11pt_avg" and match["arg"] is not None):
        values = tuple(float(x) for x in (match["coeffs"] or match["arg"]).split(","))
        return MetricSpec(name=text, measure=measure, k=None,
                          coeffs=_check_values(name, measure, values))
    if measure == "utility" and match["arg"] is None:
        return MetricSpec(name=text, measure=measure, k=None, coeffs=UTILITY_DEFAULT)
    arg = match["arg"]
    if arg is None:
        if kind.arg.endswith("!"):
            what = "a cutoff, e.g. @10" if kind.arg == "cutoff!" else "a parameter, e.g. _0.10"
            raise _bad(name, f"{match['name']} needs {what}")
        return MetricSpec(name=text, measure=measure, k=None, param=kind.default)
    if kind.arg == "none":
        raise _bad(name, f"{match['name']} takes no cutoff or parameter")
    if kind.arg.startswith("cutoff"):
        if not arg.isdigit():
            raise _bad(name, "the cutoff must be a positive integer")
        k = int(arg)
        if k < 1:
            raise _bad(name, "the cutoff must be at least 1")
        return MetricSpec(name=text, measure=measure, k=k)
    value = float(arg)
    _check_real(name, measure, value)
    return MetricSpec(name=text, measure=measure, k=None, param=value)


def expand(name: str) -> list[str]:
    """trec_eval's parameter lists: ``P.5,10`` is ``P.5`` and ``P.10``;
    ``iprec_at_recall..10,.20`` is ``iprec_at_recall..10`` and ``iprec_at_recall..20``;
    ``Rprec_mult.0.5,2`` is ``Rprec_mult.0.5`` and ``Rprec_mult.2``. The longest measure name
    before a separator wins (``ndcg_cut.5,10``, not ``ndcg`` + ``cut.5``). Gain mappings
    (``ndcg.1=3,2=9``), ``utility``'s four coefficients and ``11pt_avg``'s levels are one
    name."""
    if not isinstance(name, str) or "," not in name or "=" in name:
        return [name]
    text = name.strip()
    best = None
    for sep in re.finditer(r"[@._]", text):
        if text[: sep.start()].lower() in _ALIASES:
            best = sep
    if best is None or _ALIASES[text[: best.start()].lower()] in ("utility", "11pt_avg"):
        return [name]
    args = text[best.end():].split(",")
    if all(args):
        return [text[: best.end()] + arg for arg in args]
    return [name]


def parse_metrics(names: str | list[str] | tuple[str, ...]) -> list[MetricSpec]:
    """Parse a name or a list of names, dropping exact repeats, keeping the caller's order.
    A trec_eval parameter list (``P.5,10``) stands for one name per parameter."""
    if isinstance(names, str):
        names = [names]
    if len(names) == 0:
        raise ValueError("no metrics requested; known metrics: " + ", ".join(KNOWN_METRICS))
    specs: list[MetricSpec] = []
    seen: set[str] = set()
    for name in (one for given in names for one in expand(given)):
        spec = parse_metric(name)
        if spec.name not in seen:
            seen.add(spec.name)
            specs.append(spec)
    return specs
