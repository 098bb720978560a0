"""Seed 001: closed-form answers (``@name[value]``) scored with PSAQ, ABQ and UASQ.

The system answers each question in free text; every ``@name[value]`` is extracted and
compared with the labels (:mod:`queryeval.metrics.answers`). An optional *reformat* step asks
an OpenAI-compatible model to rewrite a free-text answer into the ``@name[value]`` format
first (cached on disk). A response with no ``@name[value]`` at all is inconclusive: with a
judge configured (option ``judge``, docs/judge.md) an LLM judge decides it, and the record
says which decided (``decided_by``). See docs/answers.md.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from queryeval.engines.judge import JudgeOptions
from queryeval.errors import ConfigError
from queryeval.io.caches import cache_dir
from queryeval.metrics.answers import (
    ClosedFormAccumulator,
    QuestionScore,
    SubScore,
    closed_form_metrics,
    extract_answers,
    score_question,
)
from queryeval.suite.dabench import string_integer_id
from queryeval.suite.models import Case
from queryeval.tasks import judging
from queryeval.tasks.accum import Tally
from queryeval.tasks.base import Flag, FlagGroup, Task, TaskOptions, TurnOutcome
from queryeval.tasks.content import Export, Figures, Groups, Overall, ReportItem, Workbook
from queryeval.tasks.responses import parse_response, read_response_line


class ReformatOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    base_url: str = "https://api.openai.com/v1"
    model: str
    api_key_env: str | None = "OPENAI_API_KEY"
    temperature: float = 0.0
    cache_dir: str | None = None
    """The reply cache; default ``reformat`` under the root of every queryeval cache."""


class AnswersOptions(TaskOptions):
    match: Annotated[Literal["numeric", "strict"], Flag(
        "Answers: numeric (equal within 1e-6, the default) or strict (equal text).")] = "numeric"
    """numeric: equal strings, or both numbers differing by < 1e-6; strict: string equality."""
    missing: Annotated[Literal["wrong", "skip"], Flag(
        "Answers: a missing response scores wrong (the default) or is skipped.")] = "wrong"
    """wrong: a missing/empty response scores 0 and is counted; skip: the reference's rule."""
    tables: Annotated[str | None, Flag("Answers: folder of the questions' table files.",
                                       path=True)] = None
    """Folder the questions' table files are resolved under (sent to the system)."""
    export: Annotated[list[Literal["dabench"]], Flag(
        "Answers: extra output (repeatable): dabench writes the DABench analysis JSON.",
        multiple=True, metavar="<dabench>")] = Field(default_factory=list)
    reformat: Annotated[ReformatOptions | None, FlagGroup("--reformat-", {
        "model": Flag("Chat model for --reformat."),
        "base_url": Flag("OpenAI-compatible base URL."),
        "api_key_env": Flag("Environment variable holding the API key ('' for none).",
                            name="--reformat-key-env", parse=judging._key_env),
        "temperature": Flag("Sampling temperature for --reformat."),
    }, switch=Flag("Answers: reformat free text with an LLM first.", name="--reformat"),
        needs=("model",), needs_message="--reformat needs --reformat-model")] = None
    judge: Annotated[JudgeOptions | None, judging.JUDGE_FLAGS] = None
    """The LLM judge for responses with no ``@name[value]`` (``when=always``: every answered
    case); see docs/judge.md."""
    compat: Annotated[Literal["none", "infiagent"], Flag(
        "Answers: infiagent reproduces InfiAgent's evaluator (first non-empty response per "
        "id, missing answers skipped, unknown ids ignored, string ids missing).")] = "none"
    """infiagent: reproduce InfiAgent's ``eval_closed_form.py``: missing answers are skipped
    (``missing=skip``), responses for unknown ids are ignored, of several responses with
    one id the first non-empty one is used (default: a duplicate id is refused), and a JSON
    string id holding an integer (``"5"``) is not the integer id ``5`` (InfiAgent compares
    ``resp["id"] == label_id`` with the labels' integer ids): such a line counts as missing
    and the run warns how many there were."""

    @model_validator(mode="after")
    def _compat_implies(self) -> AnswersOptions:
        if self.compat == "infiagent":
            if "missing" in self.model_fields_set and self.missing == "wrong":
                raise ValueError("compat=infiagent skips missing answers, as InfiAgent does; "
                                 "missing=wrong contradicts it: give one of the two")
            self.missing = "skip"
        return self


class _Concepts:
    """What :func:`closed_form_metrics` needs of a question."""

    __slots__ = ("concepts", "level")

    def __init__(self, concepts: list[str], level: str | None) -> None:
        self.concepts = concepts
        self.level = level


def _question_score(record: dict) -> QuestionScore:
    subs = tuple(SubScore(s["name"], s["expected"], s["extracted"], s["matched"])
                 for s in record["subquestions"])
    return QuestionScore(subs=subs, answered=record["answered"], skipped=record["skipped"],
                         extracted=record.get("extracted", {}))


class AnswersTask(Task):
    name = "answers"
    figures = Figures(settings=("match", "missing_mode"), counts=(
        "questions", "answered", "missing", "subquestions", "correct_questions",
        "correct_subquestions", "total_cases", "skipped_missing", "errors", *judging.COUNTS),
        unbounded=judging.UNBOUNDED)
    Options = AnswersOptions

    #: The report's bootstrap CIs of the overall figures: PSAQ and ABQ are the means of the
    #: per-question proportion and all-correct flag; UASQ is pooled (right sub-answers over
    #: sub-answers), resampled as a ratio of per-question sums.
    ci_sources: ClassVar[dict[str, Any]] = {
        "psaq": "proportion_correct", "abq": "all_correct",
        "uasq": ("correct_subquestions", "subquestions"),
    }

    def __init__(self, options: dict | TaskOptions | None = None) -> None:
        super().__init__(options)
        self._reformatter = None
        self._lock = threading.Lock()
        self._string_ids: set[tuple[str, int | None]] = set()
        self.case_judge = judging.CaseJudge(self.options.judge)
        if self.options.judge is not None:
            self.csv_columns = [*type(self).csv_columns, *judging.CSV_COLUMNS]

    def batch_info(self) -> dict:
        """The judge (model, endpoint, prompt version and text) and the agreement a
        ``judge-check`` measured for it, when the run has a judge."""
        return self.case_judge.info()

    def input_files(self) -> list[str]:
        """Nothing beyond the options; but ``tables`` must be a folder: queryeval never opens
        it (the system is sent paths under it), so a mistyped folder is refused here, when the
        run starts or resumes, not found out from the system's answers. A run log read
        later (report, viewer) does not need the folder."""
        tables = self.options.tables
        if tables and not Path(tables).is_dir():
            why = "a file" if Path(tables).exists() else "nothing is there"
            raise ConfigError(f"--tables {tables}: not a folder ({why})")
        return []

    # --- requests and outputs -------------------------------------------------------------
    def requests(self, case: Case) -> list[dict]:
        out = super().requests(case)
        meta = case.metadata
        file_name = meta.get("file_name")
        table_path = None
        if file_name and self.options.tables:
            table_path = str((Path(self.options.tables) / str(file_name)).resolve())
        for req in out:
            req.update({
                "question": case.conversation[req["turn"]].content,
                "constraints": meta.get("constraints"),
                "format": meta.get("format"),
                "file_name": file_name,
                "table_path": table_path,
            })
        return out

    @property
    def recorded_duplicates(self) -> str:
        """How a recorded-responses file's repeated ids are read (see systems/recorded.py)."""
        return "first-non-empty" if self.options.compat == "infiagent" else "refuse"

    def parse_output(self, raw: Any) -> str | None:
        """Accept ``{"response": "..."}`` or the text itself; ``null`` is a missing answer."""
        return parse_response(raw)

    def read_recorded_line(self, obj: dict) -> tuple[str, int | None, Any]:
        """DABench's ``{"id", "response"}`` (or ``case_id`` for id). Under ``compat=infiagent``
        a line whose id is a string holding an integer is read as a missing answer: InfiAgent
        never matches it to the integer id (see :attr:`AnswersOptions.compat`)."""
        case_id, turn, response = read_response_line(obj)
        if self.options.compat == "infiagent" and string_integer_id(obj):
            with self._lock:
                self._string_ids.add((case_id, turn))
            return case_id, turn, None
        return case_id, turn, response

    def recorded_warnings(self) -> list[str]:
        n = len(self._string_ids)
        if not n:
            return []
        return [f"compat=infiagent: {n} response(s) have a string id holding an integer "
                "(e.g. \"5\"); InfiAgent compares ids as integers, so they count as missing"]

    # --- reformat ------------------------------------------------------------------------------
    def _reformat(self, case: Case, response: str) -> tuple[str | None, dict | None]:
        from queryeval.systems.reformat import ReformatConfig, ReformatItem, Reformatter

        opts = self.options.reformat
        with self._lock:
            if self._reformatter is None:
                self._reformatter = Reformatter(ReformatConfig(
                    base_url=opts.base_url, model=opts.model, api_key_env=opts.api_key_env,
                    temperature=opts.temperature,
                    cache_dir=Path(opts.cache_dir) if opts.cache_dir else cache_dir("reformat"),
                ))
        result = self._reformatter.reformat(ReformatItem(
            id=case.id, question=case.conversation[-1].content if case.conversation else "",
            format=str(case.metadata.get("format", "")), response=response,
        ))
        if result.error:
            return None, {"kind": "reformat", "message": result.error.get("message", "")}
        return result.text, None

    # --- the judge ------------------------------------------------------------------------------
    def _judge_reason(self, text: str | None) -> str | None:
        """Why the judge is asked about a response (None: it is not): ``inconclusive`` when it
        holds no ``@name[value]`` at all, ``always`` under ``when=always``."""
        opts = self.options.judge
        if opts is None or opts.when == "never" or not text or not text.strip():
            return None
        if opts.when == "always":
            return "always"
        return "inconclusive" if not extract_answers(text) else None

    def _ask_judge(self, case: Case, turn: int, response: str, why: str,
                   expected: list[tuple[str, str]]) -> dict:
        from queryeval.engines.judge import JudgeItem

        fmt = case.metadata.get("format")
        return self.case_judge.ask(JudgeItem(
            case_id=case.id, question=case.conversation[turn].content,
            reference="\n".join(f"{name}: {value}" for name, value in expected),
            response=response, context=f"Format asked for:\n{fmt}" if fmt else ""), why)

    # --- scoring -----------------------------------------------------------------------------
    def _score(self, expected: list[tuple[str, str]], text: str | None) -> QuestionScore:
        return score_question(expected, text, match=self.options.match, missing=self.options.missing)

    def score_case(self, case: Case, outcomes: list[TurnOutcome]) -> dict:
        if len(outcomes) != 1:
            raise ConfigError(f"case {case.id!r}: the answers task scores one user turn per case")
        (o,) = outcomes
        target = case.conversation[o.turn].target
        expected = [(a.name, a.value) for a in (target.answers or [])] if target else []
        if not expected:
            raise ConfigError(f"case {case.id!r}: target.answers is empty")
        error = o.error if o.error and o.error["kind"] != "missing" else None
        response = o.output if o.error is None else None
        reformatted = None
        if response and self.options.reformat is not None:
            reformatted, reformat_error = self._reformat(case, response)
            error = error or reformat_error
        judged = None
        why = self._judge_reason(reformatted if reformatted is not None else response)
        if error is None and why is not None:
            judged = self._ask_judge(case, o.turn, response, why, expected)
            error = judging.judge_error(judged)
        record = self.base_record(case, [TurnOutcome(turn=o.turn, error=error)])
        if self.options.judge is not None:
            record["judge"] = judged
        record.update({
            "turn": o.turn,
            "question": case.conversation[o.turn].content,
            "concepts": list(case.metadata.get("concepts") or []),
            "level": case.metadata.get("level"),
            "response": response,
            "reformatted": reformatted,
            "error": error,
            "attempts": o.attempts,
            "latency_ms": o.latency_ms,
            "expected": [list(p) for p in expected],
        })
        return self._fill_scores(record)

    def _fill_scores(self, record: dict) -> dict:
        """Score the (reformatted) response. A failed call (``record["error"]``: the system's
        or the reformatter's) scores as a wrong answer on every subquestion, whatever the
        ``missing`` mode: it is never skipped as "missing" nor scored on a partial text."""
        text = record["reformatted"] if record.get("reformatted") is not None else record["response"]
        if record.get("error"):
            if "judge" in record:  # a failed call, or a judge that gave no verdict
                record["decided_by"] = "error"
            qs = score_question([tuple(p) for p in record["expected"]], None,
                                match=self.options.match, missing="wrong")
            record["answered"] = False
            record["skipped"] = False
            record["extracted"] = {}
            record["subquestions"] = [
                {"name": s.name, "expected": s.expected, "extracted": None, "matched": False}
                for s in qs.subs
            ]
            record["scores"] = {"proportion_correct": 0.0, "all_correct": 0.0,
                                "correct_subquestions": 0, "subquestions": qs.total}
            return record
        qs = self._score([tuple(p) for p in record["expected"]], text)
        record["answered"] = qs.answered
        record["skipped"] = qs.skipped
        record["extracted"] = dict(qs.extracted)
        judged = record.get("judge")
        verdict = judged.get("verdict") if judged else None
        if "judge" in record:  # a run with a judge says what decided each case
            record["decided_by"] = "judge" if verdict is not None else (
                "inconclusive" if qs.answered and not qs.extracted else "rules")
            if verdict is not None:  # the judge's verdict holds for every sub-answer
                record["rules_verdict"] = "pass" if qs.all_correct else "fail"
                qs = replace(qs, subs=tuple(replace(s, matched=verdict == "pass")
                                            for s in qs.subs))
        record["subquestions"] = [
            {"name": s.name, "expected": s.expected, "extracted": s.extracted, "matched": s.matched}
            for s in qs.subs
        ]
        record["scores"] = None if qs.skipped else {
            "proportion_correct": qs.proportion,
            "all_correct": 1.0 if qs.all_correct else 0.0,
            "correct_subquestions": qs.correct,
            "subquestions": qs.total,
        }
        return record

    def rescore_record(self, record: dict) -> dict:
        return self._fill_scores(dict(record))

    def case_passed(self, record: dict) -> bool:
        """An attempt passes (``--repeats``) when every sub-answer is right (``all_correct``);
        a failed call or a skipped (missing) answer does not pass."""
        scores = record.get("scores") or {}
        return record.get("status") != "error" and scores.get("all_correct") == 1.0

    # --- aggregation ---------------------------------------------------------------------------
    def aggregate(self, records: Iterable[dict]) -> dict:
        """Overall and group figures, reading ``records`` once (a stream works); memory is
        O(number of groups) (:class:`~queryeval.metrics.answers.ClosedFormAccumulator`)."""
        tally = Tally(self)
        acc = ClosedFormAccumulator()
        skipped = 0
        judge = judging.JudgeTally()
        corrected = judging.CorrectedTally()  # abq's questions, the judge's among them
        for r in tally.counted(judge.watch(records)):
            subs = r["subquestions"]
            correct = sum(s["matched"] for s in subs)
            acc.add_counts(correct, len(subs), answered=r["answered"],
                           skipped=r["skipped"], concepts=r["concepts"], level=r["level"])
            skipped += bool(r["skipped"])
            if not r["skipped"]:
                corrected.add(correct == len(subs), r.get("decided_by") == "judge",
                              r.get("cluster"))
        m = acc.result()
        overall = {"psaq": m["psaq"], "abq": m["abq"],
                   **corrected.figures(self.options.judge, "abq"),  # beside the raw abq
                   **{k: m[k] for k in ("uasq", "questions", "answered", "missing", "subquestions",
                                        "correct_questions", "correct_subquestions")}}
        overall.update({
            "total_cases": tally.total,
            "skipped_missing": skipped,
            "match": self.options.match,
            "missing_mode": self.options.missing,
            **tally.error_summary(),
            **judge.overall(self.options.judge),  # over every case (a repeat: all attempts)
        })
        groups = {"concept": m["by_concept"], "concept_count": m["by_concept_count"],
                  "concept_group": m["by_concept_group"]}
        if "by_level" in m:
            groups["level"] = m["by_level"]
        return {"overall_metrics": overall, "group_metrics": groups}

    # --- flat outputs ----------------------------------------------------------------------------
    csv_columns = ["case_id", "question", "concepts", "level", "answered", "skipped", "name",
                   "expected", "extracted", "matched", "proportion_correct", "all_correct",
                   "error"]

    def csv_rows(self, record: dict) -> Iterable[dict]:
        scores = record["scores"] or {}
        base = {
            "case_id": record["case_id"], "question": record["question"],
            "concepts": "; ".join(record["concepts"]), "level": record["level"],
            "answered": record["answered"], "skipped": record["skipped"],
            "proportion_correct": scores.get("proportion_correct"),
            "all_correct": scores.get("all_correct"),
            "error": f"{record['error']['kind']}: {record['error']['message']}" if record["error"] else "",
        }
        if self.options.judge is not None:
            base.update(judging.judge_cells(record))
        for s in record["subquestions"]:
            yield {**base, **s}

    def report_content(self, records: list[dict], metrics: dict) -> list[ReportItem]:
        items: list[ReportItem] = [Workbook("answers")]
        if "dabench" in self.options.export:
            counted = self.counted(records)
            m = closed_form_metrics([_question_score(r) for r in counted],
                                    [_Concepts(r["concepts"], r["level"]) for r in counted])
            items.append(Export("dabench", "dabench_{batch_id}.json", m))
        return items

    def close(self) -> None:
        if self._reformatter is not None:
            self._reformatter.close()
            self._reformatter = None
        self.case_judge.close()

    def summary(self, metrics: dict) -> list[Any]:
        out: list[Any] = [
            Overall(["psaq", "abq", "uasq", "questions", "answered", "missing", "subquestions",
                     "errors"]),
            Groups(metrics["group_metrics"]["concept_group"], "number of concepts",
                   ["questions", "abq", "psaq", "uasq"]),
        ]
        return out + judging.corrected_note(metrics["overall_metrics"], "abq") \
            + judging.note_for(self.options.judge, metrics["overall_metrics"])
