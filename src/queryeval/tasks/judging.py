"""How a task uses the LLM judge: one path for the ``freeform``, ``answers`` and ``query``
tasks (docs/judge.md). Each task decides *when* to ask and *what* to show the judge; this
module asks, records and counts, the same way for all three:

* the case's record: ``judge: {verdict, reason, error, why, model, prompt_version, cached}``
  (None: not asked) and ``decided_by``: ``judge`` when the judge's verdict decided the case,
  ``error`` when it was asked and gave none (``judge_malformed``, ``judge_call``: never a
  pass), otherwise the task's own rule;
* the run's overall figures: ``judge_decided``, ``judge_errors`` and, when ``queryeval
  judge-check`` recorded an agreement for this model and prompt version, ``judge_check_<key>``
  (:data:`AGREEMENT_KEYS`);
* the batch file's ``evaluation_config.judge`` (model, endpoint, prompt and its version, and
  the recorded agreement) and the console's summary line (:func:`judge_note`).

The client (:func:`queryeval.engines.judge.make_judge`) is built when the first case needs it,
under a lock (the runner scores cases on several threads), so a run that never asks never
builds it.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from queryeval.engines.judge import JudgeItem, JudgeOptions, JudgeVerdict
from queryeval.tasks.base import Flag, FlagGroup
from queryeval.tasks.content import Note

AGREEMENT_KEYS = ("kappa", "tpr", "tnr", "accuracy", "n")
"""Figures of a recorded judge-check copied into a run's overall metrics as
``judge_check_<key>``."""

COUNTS = ("judge_decided", "judge_errors", "judge_check_n",
          "pass_rate_judge_corrected_clusters", "abq_judge_corrected_clusters")
"""The judge's overall figures that are counts (a task's :class:`Figures` ``counts``; the
clusters a corrected rate's interval resampled, :func:`corrected_pass_rate`)."""

UNBOUNDED = ("judge_check_kappa",)
"""The judge's overall figures not on [0, 1] (kappa may be negative)."""

CSV_COLUMNS = ("decided_by", "judge_verdict", "judge_reason")
"""The columns a judged run adds to a task's CSV and xlsx rows (:func:`judge_cells`)."""


def _key_env(value: str | None) -> str | None:
    return value or None  # '' on the command line: no key


JUDGE_FLAGS = FlagGroup("--judge-", {
    "model": Flag("LLM judge: chat model; with --judge-base-url turns the judge on "
                  "(docs/judge.md)."),
    "base_url": Flag("LLM judge: OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1."),
    "api_key_env": Flag("LLM judge: environment variable holding the API key (default: none, "
                        "for local servers).", parse=_key_env),
    "when": Flag("LLM judge: inconclusive (only cases no rule decides, the default), always, "
                 "or never."),
}, needs=("model", "base_url"),
    needs_message="the LLM judge needs --judge-model and --judge-base-url (docs/judge.md)")
"""The ``--judge-*`` flags of every task with a ``judge`` option."""


class CaseJudge:
    """The judge of one run: built on first use (thread-safe), closed with the task."""

    def __init__(self, options: JudgeOptions | None) -> None:
        self.options = options
        self._judge: Any = None
        self._lock = threading.Lock()

    def info(self) -> dict:
        """What the batch file records (``evaluation_config.judge``): the judge (model,
        endpoint, ``when``, prompt and its version) and the agreement its judge-check
        measured (None when none); nothing for a run without a judge."""
        if self.options is None:
            return {}
        from queryeval.engines import judge as judge_mod

        info = dict(judge_mod.judge_info(self.options))
        info["agreement"] = judge_mod.recorded_agreement(self.options)
        return {"judge": info}

    def ask(self, item: JudgeItem, why: str) -> dict:
        """The judge's verdict on one case as its record stores it (:func:`verdict_record`);
        a call that raises is a ``judge_call`` error and a reply without a verdict a
        ``judge_malformed`` one."""
        from queryeval.engines import judge as judge_mod

        with self._lock:
            if self._judge is None:
                self._judge = judge_mod.make_judge(self.options)
        try:
            verdict = self._judge.judge(item)
        except Exception as exc:  # noqa: BLE001 - a judge failure is recorded on its case
            verdict = JudgeVerdict(None, error={"kind": "judge_call",
                                                "message": f"{type(exc).__name__}: {exc}"})
        return verdict_record(verdict, why)

    def close(self) -> None:
        with self._lock:
            judge, self._judge = self._judge, None
        if judge is not None:
            judge.close()


def verdict_record(v: JudgeVerdict, why: str) -> dict:
    """A verdict as the case's record stores it (``record["judge"]``); ``why``: why the task
    asked (``inconclusive``, ``always``, or the query task's reason)."""
    error = v.error
    if error is None and v.verdict not in ("pass", "fail"):
        error = {"kind": "judge_malformed", "message": "no verdict"}
    return {"verdict": v.verdict if error is None else None, "reason": v.reason,
            "error": error, "why": why, "model": v.model,
            "prompt_version": v.prompt_version, "cached": v.cached}


def judge_error(stored: dict | None) -> dict | None:
    """The error a stored verdict leaves on its case (None: not asked, or a verdict)."""
    if stored is None:
        return None
    if stored.get("error") or stored.get("verdict") not in ("pass", "fail"):
        return dict(stored.get("error") or {"kind": "judge_malformed", "message": "no verdict"})
    return None


def judge_cells(record: dict) -> dict:
    """The :data:`CSV_COLUMNS` of a case, read from its record (never re-derived)."""
    judge = record.get("judge")
    judge = judge if isinstance(judge, dict) else {}  # a run file's field of another shape
    return {"decided_by": record.get("decided_by") or "",
            "judge_verdict": judge.get("verdict") or "", "judge_reason": judge.get("reason") or ""}


class JudgeTally:
    """Counts, over every record (an error included, whatever ``on_error``), the cases the
    judge decided and those it left without a verdict: ``for r in tally.watch(records)``
    then :meth:`overall`. A record's judge is its ``judge`` (decided when ``decided_by`` is
    ``judge``) or, for the retrieval task's generated answer, its ``answer_judge`` (asked only
    when it decides: decided unless it failed)."""

    def __init__(self) -> None:
        self.decided = 0
        self.errors = 0

    def watch(self, records: Iterable[dict]) -> Iterator[dict]:
        see = self.see
        for r in records:
            see(r)
            yield r

    def see(self, r: dict) -> None:
        """:meth:`watch` one record at a time (an aggregate fed record by record)."""
        self.decided += r.get("decided_by") == "judge"
        judge = r.get("judge")
        self.errors += isinstance(judge, dict) and bool(judge.get("error"))
        answer = r.get("answer_judge")
        if isinstance(answer, dict):
            failed = bool(answer.get("error"))
            self.decided += not failed
            self.errors += failed

    def overall(self, options: JudgeOptions | None) -> dict:
        """``judge_decided``, ``judge_errors`` and the recorded agreement
        (:func:`agreement_figures`); nothing for a run without a judge."""
        if options is None:
            return {}
        return {"judge_decided": self.decided, "judge_errors": self.errors,
                **agreement_figures(options)}


def _figure(value: Any) -> float | None:
    if isinstance(value, dict):
        value = next((value[k] for k in ("value", "estimate", "point") if k in value), None)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def agreement_figures(options: JudgeOptions | None) -> dict[str, float]:
    """The recorded judge-check's figures for this judge, as ``judge_check_<key>`` (none
    when there is no judge or no check)."""
    if options is None:
        return {}
    from queryeval.engines import judge as judge_mod

    agreement = judge_mod.recorded_agreement(options)
    if not isinstance(agreement, dict):
        return {}
    out = {}
    for key in AGREEMENT_KEYS:
        value = _figure(agreement.get(key))
        if value is not None:
            out[f"judge_check_{key}"] = int(value) if key == "n" else value
    return out


def _ci(f: Any) -> str:
    """A recorded figure (``{value, ci_low, ci_high}`` or a bare number) as text."""
    value = _figure(f)
    if value is None:
        return "n/a"
    lo, hi = (_figure(f.get("ci_low")), _figure(f.get("ci_high"))) if isinstance(f, dict) \
        else (None, None)
    return f"{value:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None
                             else "")


def judge_note(options: JudgeOptions, decided: Any, errors: Any = 0) -> Note:
    """The summary line of a judged run: how many cases the judge decided (and left without
    a verdict) and, when a ``judge-check`` was recorded for this model and prompt version,
    its agreement; a warning when none was."""
    from queryeval.engines.judge import recorded_agreement
    from queryeval.engines.judge.prompt import PROMPT_VERSION

    def count(n: Any) -> str:
        return "no" if not n else (f"{n:g}" if isinstance(n, float) else str(n))

    head = (f"judge {options.model} (prompt {PROMPT_VERSION}, when={options.when}): "
            f"{count(decided)} case(s) decided by the judge"
            + (f", {count(errors)} left without a verdict (errors)." if errors else "."))
    check = recorded_agreement(options)
    if check is None:
        return Note(head + " No judge-check is recorded for this model and prompt version: "
                    "its agreement with human labels is unmeasured (queryeval judge-check).",
                    "warning")
    return Note(head + f" Measured agreement on {check.get('n')} labelled case(s): "
                f"kappa {_ci(check.get('kappa'))}, TPR {_ci(check.get('tpr'))}, "
                f"TNR {_ci(check.get('tnr'))}, accuracy {_ci(check.get('accuracy'))}.")


def note_for(options: JudgeOptions | None, overall: dict) -> list[Note]:
    """The judge's summary line for a run's overall figures (none without a judge)."""
    if options is None:
        return []
    return [judge_note(options, overall.get("judge_decided"), overall.get("judge_errors"))]


# --- the pass rate corrected for the judge's known errors (docs/judge.md) ----------------------
def corrected_key(figure: str) -> str:
    """The name of a rate's judge-corrected figure (``pass_rate`` ->
    ``pass_rate_judge_corrected``); its interval is ``<name>_ci_low`` / ``_ci_high``."""
    return f"{figure}_judge_corrected"


CORRECTED = corrected_key("pass_rate")
"""The free-form (and query) task's corrected pass rate; the answers task corrects ``abq``."""


def rogan_gladen(rate: float, tpr: float, tnr: float) -> float | None:
    """The true pass share behind an observed judge pass share ``rate`` for a judge with
    sensitivity ``tpr`` and specificity ``tnr``: ``(rate + tnr − 1) / (tpr + tnr − 1)``,
    clipped to [0, 1]; None when ``tpr + tnr <= 1`` (the judge is no better than chance,
    so its verdicts say nothing about the truth)."""
    denom = tpr + tnr - 1.0
    if denom <= 0:
        return None
    return min(1.0, max(0.0, (rate + tnr - 1.0) / denom))


def corrected_note(overall: dict, figure: str = "pass_rate") -> list[Note]:
    """The console's line for a rate's corrected figure, beside the raw one; a warning that
    it is undefined when the judge decided cases but its judge-check's TPR + TNR <= 1; none
    otherwise."""
    key = corrected_key(figure)
    value = overall.get(key)
    what = "pass rate" if figure == "pass_rate" else figure
    if not isinstance(value, (int, float)):
        tpr, tnr = overall.get("judge_check_tpr"), overall.get("judge_check_tnr")
        if overall.get("judge_decided") and isinstance(tpr, (int, float)) \
                and isinstance(tnr, (int, float)) and tpr + tnr <= 1:
            return [Note(f"no {what} corrected for the judge's known errors: its judge-check's "
                         f"TPR + TNR = {tpr + tnr:.3f} <= 1, so the judge is no better than "
                         "chance and its verdicts say nothing about the truth (docs/judge.md)",
                         "warning")]
        return []
    low, high = overall.get(f"{key}_ci_low"), overall.get(f"{key}_ci_high")
    interval = (f" [{low:.4f}, {high:.4f}]" if isinstance(low, (int, float))
                and isinstance(high, (int, float)) else "")
    clusters = overall.get(f"{key}_clusters")
    if interval and isinstance(clusters, int):
        interval += f" over {clusters} clusters"
    raw = overall.get(figure)
    return [Note(f"{what} corrected for the judge's known errors (Rogan-Gladen, from its "
                 f"judge-check): {value:.4f}{interval}"
                 + (f" (raw {raw:.4f})" if isinstance(raw, (int, float)) else ""), "info")]


class CorrectedTally:
    """The counts a corrected rate needs, one case at a time: ``add(passed, judged,
    cluster)`` for each case in the rate's denominator (``judged``: the judge's verdict
    decided it; ``cluster``: the case's ``cluster``, None for a case of its own), then
    :meth:`figures`. Memory: four counts per named cluster."""

    __slots__ = ("cases", "passes", "judged", "judged_passes", "clusters")

    def __init__(self) -> None:
        self.cases = self.passes = self.judged = self.judged_passes = 0
        self.clusters: dict[str, list[int]] = {}
        """Per named cluster: its cases that a rule passed, a rule failed, the judge passed,
        the judge failed (:func:`corrected_pass_rate`'s ``clusters``)."""

    def add(self, passed: bool, judged: bool, cluster: Any = None) -> None:
        self.cases += 1
        self.passes += passed
        if judged:
            self.judged += 1
            self.judged_passes += passed
        if cluster is not None and cluster != "":
            counts = self.clusters.setdefault(str(cluster), [0, 0, 0, 0])
            counts[2 * bool(judged) + (not passed)] += 1

    def figures(self, options: JudgeOptions | None, figure: str = "pass_rate") -> dict:
        """:func:`corrected_figures` for these counts, named after ``figure``."""
        return corrected_figures(options, self.cases, self.passes, self.judged,
                                 self.judged_passes, figure=figure,
                                 clusters=list(self.clusters.values()))


def corrected_figures(options: JudgeOptions | None, cases: int, passes: int, judged: int,
                      judged_passes: int, *, figure: str = "pass_rate",
                      clusters: Sequence[Sequence[int]] | None = None) -> dict[str, float]:
    """:func:`corrected_pass_rate` with the confusion matrix ``queryeval judge-check``
    recorded for this judge's model and prompt version (nothing without a judge or a check),
    named after ``figure`` (:func:`corrected_key`)."""
    if options is None or not judged:
        return {}
    from queryeval.engines import judge as judge_mod

    agreement = judge_mod.recorded_agreement(options)
    if not isinstance(agreement, dict) or "confusion" not in agreement:
        return {}
    return corrected_pass_rate(cases, passes, judged, judged_passes, agreement["confusion"],
                               key=corrected_key(figure), clusters=clusters)


def corrected_pass_rate(cases: int, passes: int, judged: int, judged_passes: int,
                        confusion: Any, *, confidence: float = 0.95, resamples: int = 10_000,
                        seed: int = 0, key: str = CORRECTED,
                        clusters: Sequence[Sequence[int]] | None = None) -> dict[str, float]:
    """The run's pass rate with the judge-decided cases' pass share corrected by
    :func:`rogan_gladen` (the cases a rule decided stay as they are), and a percentile
    interval that carries both uncertainties: each resample draws the run's cases
    (multinomial over rule pass / rule fail / judge pass / judge fail) and the judge-check's
    TPR and TNR (binomial over its human-pass and human-fail cases, ``confusion`` =
    ``[[TN, FP], [FN, TP]]``). Empty (no figure) when the judge decided no case, the check
    has no human-pass or no human-fail case, or ``TPR + TNR <= 1``.

    ``clusters``: per cluster of cases that share a source, its four counts (rule pass, rule
    fail, judge pass, judge fail); a case in none is a cluster of its own. When a cluster
    holds two or more cases the resamples draw whole clusters instead (each resample's rate
    over its own number of cases, as :func:`queryeval.metrics.stats.cluster_ratio_ci`), the
    interval is never narrower than the independent-cases one (the same convention) and
    ``<key>_clusters`` gives the number of clusters; otherwise the figures are exactly the
    independent-cases ones."""
    import numpy as np

    try:
        (tn, fp), (fn, tp) = ((int(a), int(b)) for a, b in confusion)
    except (TypeError, ValueError):
        return {}
    pos, neg = fn + tp, tn + fp
    if cases <= 0 or judged <= 0 or pos <= 0 or neg <= 0 or min(tn, fp, fn, tp) < 0:
        return {}
    tpr, tnr = tp / pos, tn / neg
    fixed = rogan_gladen(judged_passes / judged, tpr, tnr)
    if fixed is None:
        return {}
    value = ((passes - judged_passes) + judged * fixed) / cases
    totals = np.array([passes - judged_passes, cases - passes - (judged - judged_passes),
                       judged_passes, judged - judged_passes], dtype=float)
    groups = _cluster_rows(totals, clusters)
    rng = np.random.default_rng(seed)
    if groups is None:
        draws = rng.multinomial(cases, totals / cases, size=resamples).astype(float)
    else:
        from queryeval.metrics.stats import _blocks

        draws = np.vstack([groups[rng.integers(0, len(groups), size=(rows, len(groups)))]
                           .sum(axis=1) for rows in _blocks(resamples, 4 * len(groups))])
    tpr_s = rng.binomial(pos, tpr, size=resamples) / pos
    tnr_s = rng.binomial(neg, tnr, size=resamples) / neg
    j = draws[:, 2] + draws[:, 3]
    q = np.divide(draws[:, 2], j, out=np.zeros(resamples), where=j > 0)
    denom = tpr_s + tnr_s - 1.0
    ok = denom > 0
    fixed_s = np.clip((q[ok] + tnr_s[ok] - 1.0) / denom[ok], 0.0, 1.0)
    rates = (draws[ok, 0] + j[ok] * fixed_s) / draws[ok].sum(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(rates, [tail, 1.0 - tail]) if rates.size else (None, None)
    out = {key: value, f"{key}_ci_low": None if low is None else float(low),
           f"{key}_ci_high": None if high is None else float(high)}
    if groups is not None:
        iid = corrected_pass_rate(cases, passes, judged, judged_passes, confusion,
                                  confidence=confidence, resamples=resamples, seed=seed,
                                  key=key)
        for end, pick in (("_ci_low", min), ("_ci_high", max)):
            bounds = [b for b in (out[key + end], iid[key + end]) if b is not None]
            out[key + end] = pick(bounds) if bounds else None
        out[f"{key}_clusters"] = len(groups)
    return out


def _cluster_rows(totals: Any, clusters: Sequence[Sequence[int]] | None) -> Any:
    """One row of four counts per cluster (the named ones, then each remaining case as a
    cluster of its own), or None when no cluster holds two or more cases. ValueError when
    the clusters hold more cases of a kind than ``totals``."""
    import numpy as np

    named = [[int(c) for c in g] for g in clusters or () if sum(g) > 0]
    if not any(sum(g) > 1 for g in named):
        return None
    rows = np.array(named, dtype=float).reshape(-1, 4)
    single = totals - rows.sum(axis=0)
    if np.any(single < 0):
        raise ValueError(f"the clusters' counts {rows.sum(axis=0).tolist()} exceed the "
                         f"cases' {totals.tolist()}")
    return np.vstack([rows, np.repeat(np.eye(4), single.astype(int), axis=0)])
