"""ir_measures' measure syntax (``AP``, ``P(rel=2)@5``, ``nDCG(gains={0:0,1:1,2:3})@10``,
``RR@10``, ``Judged@10``, ``ERR@20``...), each resolved to the engine's measure with the
parameters, tie rule and query rule ir_measures 0.4's default provider for that measure uses.

Names are case-sensitive, as in ir_measures (``AP`` is ir_measures', ``map`` trec_eval's; both
give the same number). A string is parsed as data (Python's ``ast``, literals only), never run.
Which provider ir_measures picks, and what it does (read from ir_measures 0.4.3):

* pytrec_eval (trec_eval's C code: ties by docid descending): ``P@k``, ``R@k``, ``AP``,
  ``AP@k``, ``RR`` (no cutoff), ``nDCG``, ``nDCG@k`` (``gains=`` maps each judged relevance
  before scoring), ``Rprec``, ``Bpref``, ``infAP``, ``Success@k``, ``IPrec@x`` (x shown with
  two decimals, as the provider names it; trec_eval 9.x's rounding of the level, which
  pytrec_eval wraps, not 10.0's that ``iprec_at_recall_X`` follows), ``SetP``, ``SetR``,
  ``SetF``, ``SetAP``, ``NumQ``, ``NumRet``, ``NumRel``; ``rel=`` is trec_eval's ``-l``,
  ``judged_only=True`` its ``-J``.
* msmarco (MS MARCO's script): ``RR@k``: ties by docid **ascending**; relevant = rel >= ``rel``.
* judged (OpenNIR's): ``Judged@k``: the share of the top k (ties by docid ascending) that
  appear in the qrels at any relevance (-1 included), over min(k, documents retrieved).
* gdeval (TREC Web track's perl script): ``ERR@k``: R = (2^g - 1) / 2^4 (its maximum grade 4;
  grades above 4 are refused, as gdeval refuses them), ties by docid descending.

ir_measures scores every judged query; one the run lacks gets the measure's default, 0, so
``NumQ`` and ``NumRel`` count 0 for it (trec_eval -c counts it in ``num_q``).
"""

from __future__ import annotations

import ast
import math

#: ir_measures' names (and aliases) computed here -> (ir_measures' measure, its parameters).
_IR_NAMES: dict[str, str] = {
    "AP": "AP", "MAP": "AP", "P": "P", "Precision": "P", "R": "R", "Recall": "R",
    "RR": "RR", "MRR": "RR", "nDCG": "nDCG", "NDCG": "nDCG", "Rprec": "Rprec", "RPrec": "Rprec",
    "Bpref": "Bpref", "BPref": "Bpref", "infAP": "infAP", "Success": "Success",
    "IPrec": "IPrec", "SetP": "SetP", "SetRelP": "SetRelP", "SetR": "SetR", "SetF": "SetF",
    "SetAP": "SetAP", "NumQ": "NumQ", "NumRet": "NumRet", "NumRelRet": "NumRelRet",
    "NumRel": "NumRel", "Judged": "Judged", "ERR": "ERR",
}

#: ir_measures' other measures: refused by name (none is computed here).
_IR_OTHER = frozenset({
    "Accuracy", "BPM", "Compat", "ERR_IA", "nERR_IA", "alpha_DCG", "α_DCG", "alpha_nDCG",
    "α_nDCG", "NRBP", "nNRBP", "AP_IA", "MAP_IA", "P_IA", "StRecall", "INST", "INSQ", "NERR8",
    "NERR9", "NERR10", "NERR11", "RBP", "SDCG",
})

#: per measure: the parameters it takes here (ir_measures' defaults), and what ``@x`` sets.
_PARAMS: dict[str, tuple[dict[str, object], str | None]] = {
    "P": ({"cutoff": None, "rel": 1, "judged_only": False}, "cutoff"),
    "R": ({"cutoff": None, "judged_only": False}, "cutoff"),
    "AP": ({"cutoff": None, "rel": 1, "judged_only": False}, "cutoff"),
    "RR": ({"cutoff": None, "rel": 1, "judged_only": False}, "cutoff"),
    "nDCG": ({"cutoff": None, "dcg": "log2", "gains": None, "judged_only": False}, "cutoff"),
    "Rprec": ({"rel": 1, "judged_only": False}, None),
    "Bpref": ({"rel": 1}, None),
    "infAP": ({"rel": 1}, None),
    "Success": ({"cutoff": None, "rel": 1, "judged_only": False}, "cutoff"),
    "IPrec": ({"recall": None, "judged_only": False}, "recall"),
    "SetP": ({"rel": 1, "relative": False, "judged_only": False}, None),
    "SetRelP": ({"rel": 1, "judged_only": False}, None),
    "SetR": ({"rel": 1}, None),
    "SetF": ({"rel": 1, "beta": 1.0, "judged_only": False}, None),
    "SetAP": ({"rel": 1, "judged_only": False}, None),
    "NumQ": ({}, None),
    "NumRet": ({"rel": None}, None),
    "NumRelRet": ({"rel": 1}, None),
    "NumRel": ({"rel": 1}, None),
    "Judged": ({"cutoff": None}, "cutoff"),
    "ERR": ({"cutoff": None}, "cutoff"),
}

SUPPORTED = (
    "AP, AP@k, P@k, R@k, RR, RR@k, nDCG, nDCG@k, nDCG(gains={L:G,...})@k, Rprec, Bpref, infAP, "
    "Success@k, IPrec@x, SetP, SetP(relative=True), SetRelP, SetR, SetF, SetF(beta=x), SetAP, "
    "NumQ, NumRet, NumRet(rel=x), NumRelRet, NumRel, Judged@k, ERR@k; rel= where ir_measures' "
    "pytrec_eval or msmarco provider takes it, judged_only=True where pytrec_eval takes it"
)


def ir_name(text: str) -> str | None:
    """The ir_measures name ``text`` starts with, when it is one (case-sensitive), else None."""
    head = text.split("(", 1)[0].split("@", 1)[0].strip()
    return head if head in _IR_NAMES or head in _IR_OTHER else None


def _refuse(text: str, why: str) -> ValueError:
    return ValueError(f"bad metric {text!r} (ir_measures syntax): {why}; supported: {SUPPORTED}")


def _literal(node: ast.AST, text: str) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise _refuse(text, "parameter values must be literals") from None


def _split(text: str) -> tuple[str, dict[str, object], object]:
    """(name, keyword parameters, the value after @ or None), reading the string as data."""
    if len(text) > 1000:
        raise _refuse(text[:40] + "...", "too long")
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise _refuse(text, "expected Name, Name@x, Name(param=value, ...) or "
                            "Name(param=value, ...)@x") from None
    at = None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        at = _literal(node.right, text)
        node = node.left
    args: dict[str, object] = {}
    if isinstance(node, ast.Call):
        if node.args or any(k.arg is None for k in node.keywords):
            raise _refuse(text, "parameters must be named (rel=2)")
        for keyword in node.keywords:
            args[keyword.arg] = _literal(keyword.value, text)
        node = node.func
    if not isinstance(node, ast.Name):
        raise _refuse(text, "expected a measure name")
    return node.id, args, at


_MAX_INT = 2**31 - 1  # trec_eval's range for relevance levels and cutoffs


def _int(text: str, key: str, value: object, minimum: int) -> int:
    if (isinstance(value, bool) or not isinstance(value, int) or value < minimum
            or value > _MAX_INT):
        raise _refuse(text, f"{key} must be an integer from {minimum} to {_MAX_INT}, "
                            f"got {value!r}")
    return value


def _spec(**fields: object) -> dict:
    """The fields of a ``MetricSpec`` (built by ``_names``, which imports this module)."""
    return fields


def parse_ir(text: str) -> dict:
    """The fields of the :class:`~queryeval.metrics.ranking._names.MetricSpec` of an
    ir_measures string (``text`` is one, per :func:`ir_name`), or ValueError naming what is
    not supported."""
    name, args, at = _split(text)
    if name in _IR_OTHER or name not in _IR_NAMES:
        raise _refuse(text, f"ir_measures' {name} is not computed here")
    measure = _IR_NAMES[name]
    defaults, at_key = _PARAMS[measure]
    if at is not None:
        if at_key is None:
            raise _refuse(text, f"{name} takes no @ parameter")
        if at_key in args:
            raise _refuse(text, f"{at_key} given twice")
        args[at_key] = at
    unknown = sorted(set(args) - set(defaults))
    if unknown:
        raise _refuse(text, f"{name} takes no parameter {unknown[0]!r} here "
                            f"(it takes: {', '.join(defaults) or 'none'})")
    p = {**defaults, **args}
    rel = _int(text, "rel", p["rel"], 0) if p.get("rel") is not None else None
    judged_only = p.get("judged_only", False)
    if not isinstance(judged_only, bool):
        raise _refuse(text, f"judged_only must be True or False, got {judged_only!r}")
    cutoff = p.get("cutoff")
    k = _int(text, "cutoff", cutoff, 1) if cutoff is not None else None
    # rel= and judged_only= as the string sets them; left out, the call's relevance level and
    # judged-only flag (trec -l / -J; ir_measures' defaults, 1 and False, when not given)
    spec = dict(name=text, k=k, level=rel if "rel" in args else None,
                judged_only=judged_only if "judged_only" in args else None, ir=True)
    if measure in ("P", "R", "Success") and k is None:
        raise _refuse(text, f"{name} needs a cutoff, e.g. {name}@10")
    if measure in ("Judged", "ERR") and k is None:
        raise _refuse(text, f"{name} needs a cutoff here, e.g. {name}@10")
    simple = {"P": "precision", "R": "recall", "AP": "map", "Rprec": "rprec", "Bpref": "bpref",
              "infAP": "infap", "Success": "hit_rate", "SetR": "set_recall", "SetAP": "set_map",
              "SetRelP": "set_relative_p", "NumQ": "num_q", "NumRelRet": "num_rel_ret",
              "NumRel": "num_rel"}
    if measure in simple:
        if measure == "NumRel" and rel not in (None, 1):
            raise _refuse(text, "NumRel takes rel=1 only (ir_measures' pytrec_eval provider)")
        return _spec(measure=simple[measure], **spec)
    if measure == "RR":  # no cutoff: pytrec_eval's recip_rank; a cutoff: MS MARCO's script
        if k is not None and judged_only:
            raise _refuse(text, "RR@k takes no judged_only (ir_measures' msmarco provider)")
        return _spec(measure="mrr", ties="asc" if k is not None else "desc", **spec)
    if measure == "nDCG":
        if p["dcg"] != "log2":
            raise _refuse(text, f"dcg={p['dcg']!r} (gdeval's nDCG) is not computed here")
        gains = p["gains"]
        pairs = None
        if gains is not None:
            if not isinstance(gains, dict) or not all(
                    isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool)
                    and not isinstance(b, bool) and b >= 0 for a, b in gains.items()):
                raise _refuse(text, "gains must map integer levels to integer gains >= 0, "
                                    "e.g. gains={0:0,1:1,2:3}")
            pairs = tuple(sorted((int(a), float(b)) for a, b in gains.items()))
        return _spec(measure="ndcg", gains=pairs, **spec)
    if measure == "IPrec":
        x = p["recall"]
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x <= 1:
            raise _refuse(text, f"the recall level must be a number in [0, 1], got {x!r}")
        # the provider asks pytrec_eval (trec_eval 9.x's rounding of the level into a number
        # of relevant documents) for iprec_at_recall_{x:.2f}
        return _spec(measure="iprec_v9", param=float(f"{x:.2f}"), **spec)
    if measure == "SetP":
        if not isinstance(p["relative"], bool):
            raise _refuse(text, "relative must be True or False")
        return _spec(measure="set_relative_p" if p["relative"] else "set_p", **spec)
    if measure == "SetF":
        beta = p["beta"]
        if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not (
                math.isfinite(beta) and beta >= 0):
            raise _refuse(text, f"beta must be a number >= 0, got {beta!r}")
        return _spec(measure="set_f", param=float(beta), **spec)
    if measure == "NumRet":  # rel given: pytrec_eval's num_rel_ret at that level
        return _spec(measure="num_ret" if rel is None else "num_rel_ret", **spec)
    # Judged@k and ERR@k read the whole ranking: no judged-only filter
    if measure == "Judged":
        return _spec(measure="ir_judged", ties="asc", **{**spec, "judged_only": False})
    return _spec(measure="gdeval_err", **{**spec, "judged_only": False})  # ERR@k
