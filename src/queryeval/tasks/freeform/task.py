"""Free-form answers: a response in sentences against a reference answer.

A case's target is ``reference: {answer, aliases?, abs_tol?, rel_tol?, unit?}``; the system
answers ``{"response": "..."}``. The deterministic ladder
(:mod:`queryeval.metrics.freeform`) decides what it can and names the rule that decided
(``decided_by``); what no rule decides is *inconclusive*: sent to the LLM judge when the
``judge`` option is set (``when``: ``inconclusive``, the default; ``always``; ``never``),
otherwise not passed and labelled ``inconclusive``. A judge that gives no verdict is
recorded on the case as an error (``judge_malformed``, ``judge_call``): never a pass.
SQuAD's exact match and token F1 are reported beside. See docs/freeform.md.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Annotated, Any, ClassVar

from queryeval.engines.judge import JudgeItem, JudgeOptions
from queryeval.errors import ConfigError
from queryeval.metrics.freeform import RULES, decide
from queryeval.metrics.squad import DEFAULT_VERSION, SquadOption
from queryeval.suite.models import Case
from queryeval.tasks import judging
from queryeval.tasks.accum import Tally, Values
from queryeval.tasks.base import Task, TaskOptions, TurnOutcome
from queryeval.tasks.content import Figures, Groups, Note, Overall, ReportItem, Workbook
from queryeval.tasks.responses import parse_response, read_response_line

COUNT_KEYS = ("cases", "passed", "inconclusive", *(f"decided_{rule}" for rule in RULES))


class FreeformOptions(TaskOptions):
    judge: Annotated[JudgeOptions | None, judging.JUDGE_FLAGS] = None
    """The LLM judge for what the ladder leaves inconclusive (docs/judge.md); None: none."""
    dayfirst: bool = False
    """Read an ambiguous numeric date (``01/02/2024``) day first (default: month first)."""
    squad: SquadOption = DEFAULT_VERSION
    """The SQuAD script whose ``exact_match``/``token_f1`` rules are used (``v2.0``, the
    default, or ``v1.1``; :mod:`queryeval.metrics.squad`)."""


class FreeformTask(Task):
    name = "freeform"
    target_key = "reference"
    Options = FreeformOptions
    figures = Figures(settings=("judge_when",), counts=(*COUNT_KEYS, "total_cases", "errors",
                                                         *judging.COUNTS),
                      unbounded=judging.UNBOUNDED)
    ci_sources: ClassVar[dict[str, Any]] = {"pass_rate": "passed"}

    def __init__(self, options: dict | TaskOptions | None = None) -> None:
        super().__init__(options)
        self.case_judge = judging.CaseJudge(self.options.judge)
        self._lock = threading.Lock()

    def select_cases(self, cases: Iterable[Case]) -> Iterable[Case]:
        """The cases, each checked as it passes: one scored turn, a reference unit pint
        knows (a bad unit stops the run before it starts, naming the case)."""
        return _checked(cases) if not isinstance(cases, list) else list(_checked(cases))

    def batch_info(self) -> dict:
        return self.case_judge.info()

    def close(self) -> None:
        self.case_judge.close()

    # --- requests and outputs ---------------------------------------------------------------
    def requests(self, case: Case) -> list[dict]:
        out = super().requests(case)
        for req in out:
            req["question"] = case.conversation[req["turn"]].content
        return out

    def parse_output(self, raw: Any) -> str | None:
        """``{"response": "..."}`` or the text itself; ``null`` is a missing answer."""
        return parse_response(raw)

    def read_recorded_line(self, obj: dict) -> tuple[str, int | None, Any]:
        """``{"id" or "case_id", "response", "turn"?}``."""
        return read_response_line(obj)

    # --- scoring ------------------------------------------------------------------------------
    def score_case(self, case: Case, outcomes: list[TurnOutcome]) -> dict:
        if len(outcomes) != 1:
            raise ConfigError(f"case {case.id!r}: the freeform task scores one user turn per case")
        (o,) = outcomes
        target = case.conversation[o.turn].target
        ref = target.reference if target is not None else None
        if ref is None:
            raise ConfigError(f"case {case.id!r}: no target.reference")
        error = o.error if o.error and o.error["kind"] != "missing" else None
        record = self.base_record(case, [TurnOutcome(turn=o.turn, error=error)])
        record.update({
            "turn": o.turn,
            "question": case.conversation[o.turn].content,
            "response": o.output if o.error is None else None,
            "reference": ref.model_dump(),
            "error": error,
            "attempts": o.attempts,
            "latency_ms": o.latency_ms,
            "judge": None,
        })
        self._fill_scores(record)
        why = _why(self.options.judge, record["rule"])
        if record["error"] is None and why and record["response"]:
            record["judge"] = self.case_judge.ask(_judge_item(record), why)
            self._fill_scores(record)
        return record

    def _fill_scores(self, record: dict) -> dict:
        """The ladder's verdict, then the judge's (when it was asked, :func:`judged`):
        ``passed``, ``decided_by``, and the error a judge that gave no verdict leaves."""
        ref = record["reference"]
        if record.get("error") and record["error"].get("kind", "").startswith("judge_"):
            record["error"] = None  # recomputed from the stored verdict below
        if record.get("error"):
            record.update({"rule": "error", "rule_verdict": None, "detail": "the call failed",
                           "decided_by": "error", "passed": False,
                           "scores": {"passed": 0.0, "exact_match": 0.0, "token_f1": 0.0}})
            record["status"] = "error"
            return record
        d = decide(ref["answer"], record.get("response"), aliases=ref.get("aliases") or (),
                   abs_tol=ref.get("abs_tol"), rel_tol=ref.get("rel_tol"),
                   unit=ref.get("unit"), dayfirst=self.options.dayfirst,
                   question=record.get("question") or "", squad=self.options.squad)
        passed, decided_by, error = _judged(d.verdict, d.rule, record.get("judge"),
                                            self.options.judge)
        record.update({"rule": d.rule, "rule_verdict": d.verdict, "detail": d.detail,
                       "decided_by": decided_by, "passed": passed, "error": error,
                       "status": "error" if error else "ok",
                       "error_kinds": [error["kind"]] if error else [],
                       "scores": {"passed": 1.0 if passed else 0.0,
                                  "exact_match": d.exact_match, "token_f1": d.token_f1}})
        return record

    def rescore_record(self, record: dict) -> dict:
        """The ladder again from the stored response and reference; a stored judge verdict
        is reused (a re-score never calls the judge)."""
        return self._fill_scores(dict(record))

    def case_verdict(self, record: dict) -> str:
        """``error`` (a failed call, or a judge that gave no verdict), ``pass`` or ``fail``."""
        if record.get("status") == "error":
            return "error"
        return "pass" if record.get("passed") else "fail"

    def case_passed(self, record: dict) -> bool:
        """The one pass rule: the ladder's or the judge's verdict, never a failed call nor
        a judge error (``pass_rate``, ``--repeats``' pass@k, the reports' verdicts)."""
        return self.case_verdict(record) == "pass"

    def case_metrics(self, record: dict) -> dict[str, float]:
        scores = record.get("scores") or {}
        return {k: float(scores[k]) for k in ("passed", "exact_match", "token_f1") if k in scores}

    # --- aggregation --------------------------------------------------------------------------
    def aggregate(self, records: Iterable[dict]) -> dict:
        """Means over the counted cases (``pass_rate`` is the mean of ``passed``), counts per
        deciding rule, and per rule its cases and pass rate; read once (a stream works)."""
        tally = Tally(self)
        means = {k: Values() for k in ("passed", "exact_match", "token_f1")}
        counts = dict.fromkeys(COUNT_KEYS, 0)
        by_rule: dict[str, list[int]] = {}
        judge = judging.JudgeTally()
        corrected = judging.CorrectedTally()  # the pass rate's cases, the judge's among them
        for r in tally.counted(judge.watch(records)):
            scores = r["scores"]
            for k, v in means.items():
                v.add(scores[k])
            counts["cases"] += 1
            counts["passed"] += bool(scores["passed"])
            decided = r.get("decided_by") or "inconclusive"
            corrected.add(bool(scores["passed"]), decided == "judge", r.get("cluster"))
            if r.get("rule") == "inconclusive":
                counts["inconclusive"] += 1
            if f"decided_{decided}" in counts:
                counts[f"decided_{decided}"] += 1
            tally_rule = by_rule.setdefault(decided, [0, 0])
            tally_rule[0] += 1
            tally_rule[1] += bool(scores["passed"])
        overall: dict[str, Any] = {
            "pass_rate": means["passed"].mean(),
            **corrected.figures(self.options.judge),
            "exact_match": means["exact_match"].mean(),
            "token_f1": means["token_f1"].mean(), **counts, "total_cases": tally.total,
            "judge_when": self.options.judge.when if self.options.judge else "none",
            "judge_decided": 0, "judge_errors": 0, **judge.overall(self.options.judge),
            **tally.error_summary()}
        groups = {rule: {"cases": n, "passed": k, "pass_rate": k / n}
                  for rule, (n, k) in sorted(by_rule.items())}
        return {"overall_metrics": overall, "group_metrics": {"decided_by": groups}}

    # --- flat outputs -------------------------------------------------------------------------
    csv_columns = ["case_id", "question", "response", "answer", "aliases", "passed",
                   "decided_by", "rule", "rule_verdict", "detail", "judge_verdict",
                   "judge_reason", "exact_match", "token_f1", "error"]

    def csv_rows(self, record: dict) -> Iterable[dict]:
        # a record read back from a run file: a field of another shape is shown, not a crash
        scores = _dict(record.get("scores"))
        ref = _dict(record.get("reference"))
        aliases = ref.get("aliases")
        err = record.get("error")
        yield {
            **judging.judge_cells(record),
            "case_id": record.get("case_id"), "question": record.get("question"),
            "response": record.get("response"), "answer": ref.get("answer"),
            "aliases": "; ".join(map(str, aliases)) if isinstance(aliases, list) else aliases,
            "passed": scores.get("passed"),
            "rule": record.get("rule"), "rule_verdict": record.get("rule_verdict") or "",
            "detail": record.get("detail"),
            "exact_match": scores.get("exact_match"), "token_f1": scores.get("token_f1"),
            "error": (f"{err.get('kind', 'error')}: {err.get('message', '')}"
                      if isinstance(err, dict) else err or ""),
        }

    def report_content(self, records: list[dict], metrics: dict) -> list[ReportItem]:
        if "repeats" not in metrics:
            return [Workbook("freeform", {"columns": self.csv_columns, "rows": self.csv_rows})]

        def rows(record: dict) -> Iterable[dict]:  # which attempt, as the results CSV says
            return ({**row, "repeat": record.get("repeat")} for row in self.csv_rows(record))

        columns = [self.csv_columns[0], "repeat", *self.csv_columns[1:]]
        return [Workbook("freeform", {"columns": columns, "rows": rows})]

    def summary(self, metrics: dict) -> list[Any]:
        overall = metrics["overall_metrics"]
        out: list[Any] = [
            Overall(["pass_rate", "exact_match", "token_f1", "cases", "passed", "inconclusive",
                     "judge_decided", "judge_errors", "errors"]),
            Groups(metrics["group_metrics"]["decided_by"], "deciding rule",
                   ["cases", "passed", "pass_rate"]),
        ]
        if overall.get("inconclusive") and overall.get("judge_when") in ("none", "never"):
            n = overall["inconclusive"]  # a mean per attempt with --repeats
            out.append(Note(f"{n:g} case(s) inconclusive: no rule decided them and no judge "
                            "was asked; they count as not passed", "warning"))
        return out + judging.corrected_note(overall) + judging.note_for(self.options.judge,
                                                                         overall)


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _why(options: JudgeOptions | None, rule: str) -> str | None:
    """Why a case the ladder left at ``rule`` goes to the judge (None: it does not):
    ``inconclusive`` (the default ``when``) or ``always``."""
    if options is None or options.when == "never":
        return None
    if options.when == "always":
        return "always"
    return "inconclusive" if rule == "inconclusive" else None


def _judge_item(record: dict) -> JudgeItem:
    ref = record["reference"]
    reference = ref["answer"]
    if ref.get("aliases"):
        reference += " (also accepted: " + "; ".join(ref["aliases"]) + ")"
    if ref.get("unit"):
        reference += f" [unit: {ref['unit']}]"
    return JudgeItem(case_id=str(record["case_id"]), question=record.get("question") or "",
                     reference=reference, response=record.get("response") or "")


def _judged(verdict: str | None, rule: str, judge: dict | None,
            options: JudgeOptions | None) -> tuple[bool, str, dict | None]:
    """``(passed, decided_by, error)`` of a case from the ladder's verdict and rule and the
    stored judge verdict (None: not asked). The judge decides an inconclusive case, or every
    case under ``when=always``; a judge error fails the case as an error (``decided_by``
    ``error``); a stored verdict is ignored when the options no longer ask for it."""
    if judge is None or _why(options, rule) is None:
        return verdict == "pass", rule, None
    error = judging.judge_error(judge)
    if error:
        return False, "error", error
    return judge["verdict"] == "pass", "judge", None


def _checked(cases: Iterable[Case]) -> Iterator[Case]:
    from queryeval.metrics.freeform.units import parse_unit

    for case in cases:
        for turn in case.conversation:
            ref = turn.target.reference if turn.target is not None else None
            if ref is not None and ref.unit and parse_unit(ref.unit) is None:
                raise ConfigError(f"case {case.id!r}: target.reference.unit {ref.unit!r} is "
                                  "not a unit pint knows")
        yield case
