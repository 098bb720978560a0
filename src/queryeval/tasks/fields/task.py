"""Seed 004: field-value retrieval. Does RETRIEVE(field, question, N, model) find the values a
question needs?

A case's user turn carries ``target.fields``: per field the values that must be found. The
system returns, per field, a ranked list of values; each (question, field) is scored with
recall@N, MRR (over the whole returned list) and passed (every item within the first N); a
question passes when every field passes (the seed's ``[Passed] = [Avg Recall] = 1``).

The system under test is by default the built-in retriever over a data table (task options
``data``, ``model``, ``descriptions``, ``depth``): see :class:`FieldsSystem` and
:func:`builtin`. See docs/fields.md for the request/response shapes and every convention.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from queryeval.errors import ConfigError, InputError
from queryeval.metrics.fields import (
    AggregateAccumulator,
    FieldScore,
    depth_from_ranks,
    distinct,
    ground_truth_ranks,
    join_ground_truth,
    question_score,
)
from queryeval.metrics.ranking import mrr_from_ranks, recall_from_ranks
from queryeval.suite.models import Case
from queryeval.tasks.accum import Tally
from queryeval.tasks.base import Flag, Task, TaskOptions, TurnOutcome
from queryeval.tasks.content import Figures, Groups, Overall, ReportItem, Workbook
from queryeval.tasks.fields.system import DEFAULT_MODEL, FieldsSystem, data_table
from queryeval.tune.tuning_file import load_tuning as _load_tuning

NonNegInt = Annotated[int, Field(ge=0)]


def per_field_int(items: list[str]) -> int | dict[str, int]:
    """``--n``: ``["5"]`` -> 5; ``["item=5", "type=2"]`` -> ``{"item": 5, "type": 2}``."""
    if len(items) == 1 and "=" not in items[0]:
        try:
            return int(items[0])
        except ValueError:
            raise ConfigError(f"expected a number, got {items[0]!r}") from None
    out = {}
    for item in items:
        key, sep, value = item.rpartition("=")
        if not sep or not key:
            raise ConfigError(f"expected FIELD=VALUE, got {item!r}")
        try:
            out[key] = int(value)
        except ValueError:
            raise ConfigError(f"expected a number in {item!r}") from None
    return out


class FieldsOptions(TaskOptions):
    data: Annotated[str | None, Flag("Fields: the data table whose values are retrieved.",
                                     path=True)] = None
    """Data table (CSV/Parquet/xlsx) the built-in retriever ranks values from."""
    model: Annotated[str | dict[str, str] | None, Flag(
        "Fields: the built-in retriever's model (minilm, bm25 or a local "
        "sentence-transformers path).", type=str)] = None
    """Built-in retriever model, one for all fields or per field: ``minilm`` (default),
    ``bm25`` or a local sentence-transformers directory."""
    n: Annotated[NonNegInt | dict[str, NonNegInt] | None, Flag(
        "Fields: values retrieved per field: N, or FIELD=N (repeatable).", type=str,
        multiple=True, parse=per_field_int)] = None
    """Cut-off N, one for all fields or per field; unset: the question's number of distinct
    ground-truth items (the seed's RECALL default)."""
    tuning: Annotated[str | None, Flag(
        "Fields: N and model per field from a `queryeval tune` JSON.", path=True)] = None
    """A ``queryeval tune --json`` file: N and model per field (``n``/``model`` given here
    take precedence)."""
    descriptions: dict[str, str] = Field(default_factory=dict)
    """field -> description column of the data table (besides ``<field>__description``)."""
    depth: NonNegInt | None = None
    """Built-in retriever: values returned per field (unset: all, so MRR covers the full
    ranking as in ``tune``)."""
    send_values: bool = False
    """Send each field's candidate values (from ``data``) in the request."""
    device: str | None = None
    cache_dir: str | None = None
    """Embedding cache folder (default: the retrievers' default cache)."""

    @field_validator("data", "tuning", "cache_dir")
    @classmethod
    def _absolute(cls, v: str | None) -> str | None:
        # stored in the batch file: a resumed run may start from another directory
        return str(Path(v).expanduser().resolve()) if v else v


class _RecordedLine(BaseModel):
    model_config = ConfigDict(extra="allow", coerce_numbers_to_str=True)

    case_id: str
    turn: int | None = None


def _value_text(v: Any, where: str) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{where}: expected a string, got {type(v).__name__}")
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def parse_fields_output(raw: Any) -> dict[str, list[str]]:
    """``{"fields": {field: [values]}}`` or the bare mapping; ``null`` is "nothing retrieved".
    Numbers are read as text (``3.0`` -> ``"3"``, as the table readers do)."""
    if raw is None:
        return {}
    if isinstance(raw, dict) and isinstance(raw.get("fields"), dict):
        raw = raw["fields"]
    elif isinstance(raw, dict) and "fields" in raw and raw["fields"] is None:
        return {}
    if not isinstance(raw, dict):
        raise ValueError(f"expected an object of field -> ranked values, got {type(raw).__name__}")
    out: dict[str, list[str]] = {}
    for name, values in raw.items():
        if values is None:
            out[str(name)] = []
            continue
        if not isinstance(values, list):
            raise ValueError(f"fields.{name}: expected a list of values")
        out[str(name)] = [_value_text(v, f"fields.{name}[{i}]") for i, v in enumerate(values)]
    return out


def score_field(ranked: list[str], truth: list[str], n: int | None) -> dict:
    """One (question, field): recall@N, MRR over the returned list, passed, found, missing.

    ``n`` None: N = number of distinct ground-truth items. Empty ground truth: recall 1,
    MRR 1, passed (nothing to find).
    """
    items = distinct(truth)
    cut = len(items) if n is None else n
    ranks = ground_truth_ranks(items, ranked)
    depth = depth_from_ranks(ranks)
    return {
        "n": cut,
        "recall": recall_from_ranks(ranks, cut),
        "mrr": mrr_from_ranks(ranks),
        "passed": depth is not None and depth <= cut,
        "depth": depth,
        "found": [i for i, r in zip(items, ranks.tolist(), strict=True) if r <= cut],
        "missing": [i for i, r in zip(items, ranks.tolist(), strict=True) if r > cut],
    }


class _FieldGroup:
    """A field's question scores: the aggregate and the distinct cut-offs N seen."""

    __slots__ = ("acc", "ns")

    def __init__(self) -> None:
        self.acc = AggregateAccumulator()
        self.ns: set[int] = set()

    def add(self, s: dict) -> None:
        """One (question, field) score as stored in a record (:func:`score_field`)."""
        self.acc.add(s["recall"], s["mrr"], s["passed"])
        self.ns.add(s["n"])


def _n_figures(ns: set[int]) -> dict:
    """The cut-offs N a field was scored at, each key with one JSON type: ``n`` is that N (a
    number), or null when it varied per question (no N given: each question's ground-truth
    size); ``n_min`` and ``n_max`` are numbers either way; ``n_range`` is the text the reports
    show (``"3"``, or ``"1–3"`` when it varied). A field with no scored question has none."""
    if not ns:
        return {"n": None, "n_min": None, "n_max": None, "n_range": None}
    lo, hi = min(ns), max(ns)
    return {"n": lo if lo == hi else None, "n_min": lo, "n_max": hi,
            "n_range": str(lo) if lo == hi else f"{lo}–{hi}"}


class FieldsTask(Task):
    name = "fields"
    Options = FieldsOptions
    figures = Figures(counts=("passed", "questions", "total_cases", "scored_cases", "errors"))

    def __init__(self, options: dict | TaskOptions | None = None) -> None:
        super().__init__(options)
        self._tuning = _load_tuning(self.options.tuning) if self.options.tuning else {}

    # --- per-field settings -------------------------------------------------------------------
    def n_for(self, field: str) -> int | None:
        n = self.options.n
        if isinstance(n, dict):
            if field in n:
                return n[field]
        elif n is not None:
            return n
        return self._tuning.get(field, {}).get("n")

    def _untuned(self, field: str) -> bool:
        """A field the tuning file has no row for whose setting it would have supplied: its N
        is not given, or (with a data table, where the built-in retriever runs) its model."""
        if field in self._tuning:
            return False
        n, m = self.options.n, self.options.model
        n_given = field in n if isinstance(n, dict) else n is not None
        m_given = field in m if isinstance(m, dict) else m is not None
        return not n_given or (bool(self.options.data) and not m_given)

    def model_for(self, field: str) -> str:
        m = self.options.model
        if isinstance(m, dict):
            if field in m:
                return m[field]
        elif m is not None:
            return m
        return self._tuning.get(field, {}).get("model", DEFAULT_MODEL)

    #: The report's CI of ``avg_recall``: the mean of the per-case recall (shown only where
    #: the two agree, i.e. one scored turn per case).
    ci_sources: ClassVar[dict[str, Any]] = {"avg_recall": "recall"}

    @staticmethod
    def case_verdict(record: dict) -> str:
        """The reports' status of a case: ``error`` when a call failed, ``pass`` when every
        scored question passed (the seed's rule, the one ``pass_rate`` counts; a case with no
        scored question has nothing against it), else ``fail``."""
        if record.get("status") == "error":
            return "error"
        flags = [(t.get("scores") or {}).get("passed") for t in record.get("turns") or []]
        flags = [f for f in flags if f is not None]
        return "pass" if all(flags) else "fail"

    def system_label(self) -> str:
        """The built-in retriever a run without --system/--responses used (for the reports):
        one model, per-field models, or the tuning file that chose them."""
        m = self.options.model
        if isinstance(m, str):
            return f"retriever: {m}"
        if isinstance(m, dict) and m:
            return "retriever per field: " + ", ".join(f"{f}={v}" for f, v in sorted(m.items()))
        if self.options.tuning:
            return f"retriever per field from {Path(self.options.tuning).name}"
        return f"retriever: {DEFAULT_MODEL}"

    # --- requests and outputs -------------------------------------------------------------------
    def _turn_fields(self, case: Case, turn: int) -> list[str]:
        target = case.conversation[turn].target
        return list(target.fields or {}) if target is not None else []

    def retriever_config(self, fields: list[str]) -> dict:
        """What the built-in retriever needs for these fields (sent when ``data`` is set)."""
        o = self.options
        return {"data": o.data, "models": {f: self.model_for(f) for f in fields},
                "descriptions": dict(o.descriptions), "depth": o.depth, "device": o.device,
                "cache_dir": o.cache_dir}

    def requests(self, case: Case) -> list[dict]:
        out = super().requests(case)
        for req in out:
            fields = self._turn_fields(case, req["turn"])
            req["question"] = case.conversation[req["turn"]].content
            req["fields"] = fields
            req["n"] = {f: self.n_for(f) for f in fields}
            if self.options.data:
                req["retriever"] = self.retriever_config(fields)
                if self.options.send_values:
                    table = data_table(self.options.data, self.options.descriptions)
                    req["values"] = {f: list(table.fields[f].values) if f in table.fields else []
                                     for f in fields}
        return out

    def parse_output(self, raw: Any) -> dict[str, list[str]]:
        return parse_fields_output(raw)

    def read_recorded_line(self, obj: dict) -> tuple[str, int | None, Any]:
        line = _RecordedLine.model_validate(obj)
        if "fields" not in obj:
            raise ValueError("fields: field required")
        return line.case_id, line.turn, parse_fields_output({"fields": obj["fields"]})

    def select_cases(self, cases: Iterable[Case]) -> Iterable[Case]:
        """All cases, checking that every evaluated field is in the data table (when there is
        one) and in the tuning file (when there is one, unless its N and model are given), so
        a typo or a tuning file for other fields fails the run before it starts (the run's
        first pass over the cases) instead of failing every case or scoring a field at an N
        nobody chose."""
        if not self.options.data and not self.options.tuning:
            return cases
        known = data_table(self.options.data, self.options.descriptions).fields \
            if self.options.data else None
        return self._checked(cases, known)

    def _checked(self, cases: Iterable[Case], fields: list[str] | None) -> Iterator[Case]:
        untuned: dict[str, None] = {}  # in first-seen order
        for case in cases:
            for turn in self.scored_turns(case):
                for f in self._turn_fields(case, turn):
                    if fields is not None and f not in fields:
                        raise ConfigError(
                            f"case {case.id!r}: field {f!r} is not in the data table "
                            f"{self.options.data} ({', '.join(fields)})")
                    if self.options.tuning and self._untuned(f):
                        untuned[f] = None
            yield case
        if untuned:
            tuned = ", ".join(self._tuning) or "none"
            raise InputError(
                f"no tuning for field(s) {', '.join(untuned)} (the file tunes {tuned}); run "
                "'queryeval tune' on these fields, or give their N and model (--n/--model)",
                path=self.options.tuning)

    def default_system(self) -> FieldsSystem:
        """The built-in retriever over ``data`` (the system when none is given)."""
        if not self.options.data:
            raise ConfigError("the fields task needs a data table for its built-in retriever "
                              "(--option data=PATH), or a system (--system/--responses)")
        return FieldsSystem(self.options.data, self.options.descriptions,
                            device=self.options.device, cache_dir=self.options.cache_dir)

    # --- scoring ------------------------------------------------------------------------------
    def _score_turn(self, target: dict[str, list[str]], output: dict[str, list[str]] | None,
                    error: dict | None = None) -> dict:
        """A turn's scores; a failed call (``error``) scores 0 on every field, even one whose
        ground truth is empty (an empty output would pass it)."""
        output = output or {}
        fields = {f: score_field(output.get(f, []), truth, self.n_for(f))
                  for f, truth in target.items()}
        if error:
            for s in fields.values():
                s.update(recall=0.0, mrr=0.0, passed=False)
        if not fields:
            return {"fields": {}, "recall": None, "mrr": None, "passed": None}
        q = question_score([FieldScore(f, s["recall"], s["mrr"], s["passed"])
                            for f, s in fields.items()])
        return {"fields": fields, "recall": q.recall, "mrr": q.mrr, "passed": q.passed}

    def score_case(self, case: Case, outcomes: list[TurnOutcome]) -> dict:
        record = self.base_record(case, outcomes)
        turns = []
        for o in outcomes:
            target = case.conversation[o.turn].target
            truth = {f: list(v) for f, v in ((target.fields or {}) if target else {}).items()}
            turns.append({
                "turn": o.turn, "question": case.conversation[o.turn].content, "target": truth,
                "output": o.output, "error": o.error, "attempts": o.attempts,
                "latency_ms": o.latency_ms, "scores": self._score_turn(truth, o.output, o.error),
            })
        record["turns"] = turns
        record["scores"] = self._case_scores(turns)
        return record

    @staticmethod
    def _case_scores(turns: list[dict]) -> dict:
        scored = [t["scores"] for t in turns if t["scores"]["passed"] is not None]
        if not scored:
            return {"recall": None, "mrr": None, "passed": None}
        return {"recall": math.fsum(s["recall"] for s in scored) / len(scored),
                "mrr": math.fsum(s["mrr"] for s in scored) / len(scored),
                "passed": all(s["passed"] for s in scored)}

    def rescore_record(self, record: dict) -> dict:
        out = dict(record)
        out["turns"] = [{**t, "scores": self._score_turn(t["target"], t["output"], t.get("error"))}
                        for t in record["turns"]]
        out["scores"] = self._case_scores(out["turns"])
        return out

    # --- aggregation ------------------------------------------------------------------------------
    def aggregate(self, records: Iterable[dict]) -> dict:
        """Overall, per-field and per-tag figures, reading ``records`` once (a stream works).

        Kept per scored question: its recall and MRR as doubles, overall, per field and per
        tag (:class:`~queryeval.metrics.fields.AggregateAccumulator`); no record is kept.
        """
        tally = Tally(self)
        overall_acc = AggregateAccumulator()
        by_field: dict[str, _FieldGroup] = {}
        by_tag: dict[str, AggregateAccumulator] = {}
        for r in tally.counted(records):
            tags = r["tags"] or ["(no tag)"]
            for t in r["turns"]:
                q = t["scores"]
                if q["passed"] is None:
                    continue
                overall_acc.add(q["recall"], q["mrr"], q["passed"])
                for f, s in q["fields"].items():
                    group = by_field.get(f)
                    if group is None:
                        group = by_field[f] = _FieldGroup()
                    group.add(s)
                for tag in tags:
                    acc = by_tag.get(tag)
                    if acc is None:
                        acc = by_tag[tag] = AggregateAccumulator()
                    acc.add(q["recall"], q["mrr"], q["passed"])
        agg = overall_acc.result()
        overall = {
            "passed": agg.passed, "questions": agg.questions, "pass_rate": agg.pass_rate,
            "avg_recall": agg.avg_recall, "mrr": agg.mrr,
            "total_cases": tally.total, "scored_cases": tally.counted_n,
            **tally.error_summary(),
        }
        fields = {}
        for f, group in by_field.items():
            a = group.acc.result()
            fields[f] = {"questions": a.questions, "passed": a.passed, "pass_rate": a.pass_rate,
                         "avg_recall": a.avg_recall, "mrr": a.mrr,
                         **_n_figures(group.ns),
                         "model": self.model_for(f) if self.options.data else None}
        tags_out = {}
        for tag in sorted(by_tag):
            a = by_tag[tag].result()
            tags_out[tag] = {"questions": a.questions, "passed": a.passed,
                             "pass_rate": a.pass_rate, "avg_recall": a.avg_recall, "mrr": a.mrr}
        return {"overall_metrics": overall, "group_metrics": {"field": fields, "tag": tags_out}}

    # --- flat outputs -------------------------------------------------------------------------------
    csv_columns = ["case_id", "name", "tags", "turn", "question", "field", "n", "recall", "mrr",
                   "passed", "depth", "ground_truth", "found", "missing", "retrieved",
                   "question_recall", "question_mrr", "question_passed", "error"]

    def csv_rows(self, record: dict) -> Iterable[dict]:
        for t in record["turns"]:
            base = {
                "case_id": record["case_id"], "name": record["name"],
                "tags": ";".join(record["tags"]), "turn": t["turn"], "question": t["question"],
                "question_recall": t["scores"]["recall"], "question_mrr": t["scores"]["mrr"],
                "question_passed": t["scores"]["passed"],
                "error": f"{t['error']['kind']}: {t['error']['message']}" if t["error"] else "",
            }
            for f, s in t["scores"]["fields"].items():
                ranked = (t["output"] or {}).get(f, [])
                yield {**base, "field": f, "n": s["n"], "recall": s["recall"], "mrr": s["mrr"],
                       "passed": s["passed"], "depth": s["depth"],
                       "ground_truth": join_ground_truth(t["target"][f]),
                       "found": join_ground_truth(s["found"]),
                       "missing": join_ground_truth(s["missing"]),
                       "retrieved": join_ground_truth(ranked[: s["n"]])}

    def report_content(self, records: list[dict], metrics: dict) -> list[ReportItem]:
        return [Workbook("fields")]

    def summary(self, metrics: dict) -> list[Any]:
        return [
            Overall(["passed", "questions", "pass_rate", "avg_recall", "mrr", "errors"]),
            Groups(metrics["group_metrics"]["field"], "field",
                   ["n_range", "model", "questions", "passed", "avg_recall", "mrr"]),
        ]


# ------------------------------------------------------------------ the built-in system
# (FieldsSystem and the data tables: tasks/fields/system.py; builtin stays here, the name
# ``python:queryeval.tasks.fields.task:builtin`` users give)

_SYSTEMS: dict[str, FieldsSystem] = {}
_SYSTEMS_LOCK = threading.Lock()


def builtin(request: dict) -> dict:
    """``--system python:queryeval.tasks.fields.task:builtin``: the built-in retriever as a Python
    system, configured by the request's ``retriever`` settings (the task sends them when the
    ``data`` option is set). One :class:`FieldsSystem` per configuration per process."""
    cfg = request.get("retriever")
    if not cfg or not cfg.get("data"):
        raise ConfigError("the built-in fields retriever needs the task option data=PATH")
    key = json.dumps({k: cfg.get(k) for k in ("data", "descriptions", "device", "cache_dir")},
                     sort_keys=True)
    with _SYSTEMS_LOCK:
        if key not in _SYSTEMS:
            _SYSTEMS[key] = FieldsSystem(cfg["data"], cfg.get("descriptions") or {},
                                         device=cfg.get("device"), cache_dir=cfg.get("cache_dir"))
        system = _SYSTEMS[key]
    return system.call(request)
