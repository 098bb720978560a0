"""The findings of ``queryeval audit`` (and ``qe.audit``): one :class:`Finding` per defect,
warning or note the audit proved about a case, and the suite health summary built from them.

A finding says which case (``case_id``), what was found (``kind``, one of :data:`KINDS`), the
evidence it rests on (``evidence``: the gold number, the rows, the other case, ...) and a
suggested ``fix``. ``severity`` is the kind's: a *defect* (the gold or target is wrong or
cannot be scored), a *warning* (a hazard: it may score a right prediction wrong) or a *note*
(``not_discriminating``: every run got it right; not a fault of the case). The summary counts
**cases** (not findings): the share of cases with a defect or warning, by kind; notes are
counted apart and never take a case out of the platinum subset.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Severity = Literal["defect", "warning", "note"]

KINDS: dict[str, tuple[Severity, str]] = {
    "gold_fails": ("defect", "the gold does not run (or its reference cannot be read)"),
    "gold_timeout": ("defect", "the gold runs past the deadline"),
    "gold_not_perfect": ("defect", "the gold scored as a prediction against itself is not perfect"),
    "gold_drift": ("defect", "the gold's result differs from the fingerprint pinned for it"),
    "empty_gold": ("defect", "the gold result is empty, or the target names chunks the corpus "
                             "lacks"),
    "row_limit": ("defect", "the gold reaches the row limit: the comparison sees part of it"),
    "tie_order": ("defect", "ORDER BY ... LIMIT cuts between rows that tie on the sort key"),
    "conflicting_duplicates": ("defect", "the same question with different golds"),
    "duplicates": ("warning", "the same question and gold as another case"),
    "ambiguous_relevance": ("warning", "a relevant chunk equals or nearly equals a chunk not "
                                       "marked relevant"),
    "consensus_failure": ("warning", "every run gets it wrong the same way: the gold is the "
                                     "likely error"),
    "unordered_limit": ("warning", "LIMIT/OFFSET without ORDER BY: the engine picks the rows"),
    "near_deadline": ("warning", "the gold takes over half of the deadline"),
    "under_constrained": ("warning", "no database tells the gold apart from a near-miss mutant"),
    "not_discriminating": ("note", "every run gets it right"),
}
"""Every kind of finding: its severity and what it means."""


class Finding(BaseModel):
    """One thing the audit proved about a case."""

    model_config = ConfigDict(extra="forbid")

    case_id: str
    kind: str = Field(description="One of queryeval.tasks.audit_model.KINDS.")
    severity: Severity = "defect"
    evidence: dict[str, Any] = Field(default_factory=dict)
    fix: str = ""

    @classmethod
    def of(cls, case_id: str, kind: str, evidence: dict[str, Any], fix: str,
           severity: Severity | None = None) -> Finding:
        """A finding with its kind's severity (or ``severity``, where the case shows the
        kind is milder here)."""
        return cls(case_id=case_id, kind=kind, severity=severity or KINDS[kind][0],
                   evidence=evidence, fix=fix)


class AuditReport(BaseModel):
    """What ``queryeval audit --json FILE`` writes and ``qe.audit`` returns: the findings,
    the suite health summary, and (query suites) the per-gold table of executions."""

    model_config = ConfigDict(extra="forbid")

    findings: list[Finding] = Field(default_factory=list)
    summary: dict[str, Any] = Field(default_factory=dict)
    golds: list[dict[str, Any]] = Field(default_factory=list)

    def by_kind(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    def flagged(self) -> set[str]:
        """The ids of cases with a defect or a warning (notes do not count)."""
        return {f.case_id for f in self.findings if f.severity != "note"}

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def summarise(case_ids: list[str], findings: list[Finding], **extra: Any) -> dict[str, Any]:
    """The suite health summary: ``cases``, ``cases_with_finding`` and its ``share``,
    ``cases_with_defect``, and ``by_kind`` {kind: {"cases", "share", "severity"}} (a case
    counts once per kind), ``notes`` {kind: cases}; ``extra`` is added as it is."""
    n = len(case_ids)
    known = set(case_ids)
    per_kind: dict[str, set[str]] = {}
    worst: dict[str, str] = {}  # a kind's severity here: the most severe of its findings
    rank = {"defect": 0, "warning": 1, "note": 2}
    for f in findings:
        per_kind.setdefault(f.kind, set()).add(f.case_id)
        if f.kind not in worst or rank[f.severity] < rank[worst[f.kind]]:
            worst[f.kind] = f.severity
    flagged = {f.case_id for f in findings if f.severity != "note"} & known
    defects = {f.case_id for f in findings if f.severity == "defect"} & known
    order = list(KINDS)
    by_kind = {k: {"cases": len(ids), "share": len(ids) / n if n else 0.0,
                   "severity": worst[k]}
               for k, ids in sorted(per_kind.items(),
                                    key=lambda kv: order.index(kv[0]) if kv[0] in order else 99)}
    counts = Counter(f.kind for f in findings)
    return {"cases": n, "cases_with_finding": len(flagged),
            "share": len(flagged) / n if n else 0.0, "cases_with_defect": len(defects),
            "findings": sum(counts.values()),
            "by_kind": {k: v for k, v in by_kind.items() if v["severity"] != "note"},
            "notes": {k: v["cases"] for k, v in by_kind.items() if v["severity"] == "note"},
            **extra}
