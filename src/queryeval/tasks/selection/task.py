"""Seed 000: term selection (SDMX indicators and other dimensions).

Each user turn with a target is scored with :func:`queryeval.metrics.sets.score_selection`;
a case's figures are the mean over its scored turns; ``overall_metrics`` holds the means over
cases (``macro_precision``, ``macro_recall``) plus pooled micro figures. See
docs/term-selection.md for every convention.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter

from queryeval.metrics.mean import mean_of
from queryeval.metrics.sets import MicroCounts, score_selection
from queryeval.suite.models import Case, DatasetSelection
from queryeval.tasks.accum import Tally, Values
from queryeval.tasks.base import Task, TaskOptions, TurnOutcome
from queryeval.tasks.content import Figures, Groups, Overall, ReportItem, Workbook

_SELECTION = TypeAdapter(list[DatasetSelection])


class SelectionOptions(TaskOptions):
    include_extra_dimensions: bool = True
    """Whether dimensions selected but not in the target enter macro precision."""


class _RecordedLine(BaseModel):
    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)

    case_id: str
    turn: int | None = None
    indicator_selection: list[DatasetSelection] | None = None


def _dump(selection: list[DatasetSelection]) -> list[dict]:
    return [s.model_dump() for s in selection]


class _TagGroup:
    """A tag's cases: their count and macro figures."""

    __slots__ = ("cases", "precisions", "recalls")

    def __init__(self) -> None:
        self.cases = 0
        self.precisions, self.recalls = Values(), Values()

    def add(self, precision: float, recall: float) -> None:
        self.cases += 1
        self.precisions.add(precision)
        self.recalls.add(recall)

    def result(self) -> dict:
        return {"cases": self.cases, "macro_precision": self.precisions.mean(),
                "macro_recall": self.recalls.mean()}


class _DimGroup:
    """The dimension scores sharing a dimension name (or a dataset): counts, pooled
    TP/FP/FN, and the precisions and recalls their means are taken over."""

    __slots__ = ("include_extra", "in_target", "not_in_target", "micro", "precisions",
                 "recalls")

    def __init__(self, include_extra: bool) -> None:
        self.include_extra = include_extra
        self.in_target = self.not_in_target = 0
        self.micro = MicroCounts(include_extra=include_extra)
        self.precisions, self.recalls = Values(), Values()

    def add(self, d: dict) -> None:
        """One dimension score, as stored in a record (``DimensionScore.to_dict``)."""
        if d["in_target"]:
            self.in_target += 1
            self.recalls.add(d["recall"])
        else:
            self.not_in_target += 1
        if d["in_target"] or self.include_extra:
            self.precisions.add(d["precision"])
        self.micro.add(d["in_target"], len(d["tp"]), len(d["fp"]), len(d["fn"]))

    def result(self) -> dict:
        micro = self.micro.result()
        return {
            "in_target": self.in_target,
            "not_in_target": self.not_in_target,
            "tp": micro["tp"], "fp": micro["fp"], "fn": micro["fn"],
            "mean_precision": self.precisions.mean(),
            "mean_recall": self.recalls.mean(),
            "micro_precision": micro["micro_precision"],
            "micro_recall": micro["micro_recall"] if self.in_target else None,
        }


class SelectionTask(Task):
    name = "indicator_selection"
    Options = SelectionOptions
    figures = Figures(counts=(
        "tp", "fp", "fn", "total_cases", "scored_cases", "scored_turns", "cases",
        "cases_with_dimensions_not_in_target", "in_target", "not_in_target", "errors"))

    # --- outputs of the system ------------------------------------------------------------
    def parse_output(self, raw: Any) -> list[dict]:
        """Accept ``{"indicator_selection": [...]}`` or the bare list; ``null`` is empty."""
        if isinstance(raw, dict):
            if "indicator_selection" not in raw:
                raise ValueError("output has no 'indicator_selection' key")
            raw = raw["indicator_selection"]
        if raw is None:
            return []
        return _dump(_SELECTION.validate_python(raw))

    def read_recorded_line(self, obj: dict) -> tuple[str, int | None, Any]:
        line = _RecordedLine.model_validate(obj)
        if "indicator_selection" not in obj:
            raise ValueError("indicator_selection: field required")
        return line.case_id, line.turn, _dump(line.indicator_selection or [])

    # --- scoring ----------------------------------------------------------------------------
    def _score_turn(self, target: list[dict], output: list[dict] | None,
                    error: dict | None = None) -> dict:
        """A turn's scores; a failed call (``error``) scores 0 on both macro figures, even
        where the target is empty (an empty output would match it and score 1)."""
        scores = score_selection(
            target, output or [], include_extra=self.options.include_extra_dimensions,
        ).to_dict()
        if error:
            scores["macro_precision"] = 0.0
            scores["macro_recall"] = 0.0
        return scores

    def score_case(self, case: Case, outcomes: list[TurnOutcome]) -> dict:
        record = self.base_record(case, outcomes)
        turns = []
        for o in outcomes:
            tgt = case.conversation[o.turn].target
            target = _dump(tgt.indicator_selection or []) if tgt is not None else []
            turns.append({
                "turn": o.turn,
                "question": case.conversation[o.turn].content,
                "target": target,
                "output": o.output,
                "error": o.error,
                "attempts": o.attempts,
                "latency_ms": o.latency_ms,
                "scores": self._score_turn(target, o.output, o.error),
            })
        record["turns"] = turns
        record["scores"] = self._case_scores(turns)
        return record

    @staticmethod
    def _case_scores(turns: list[dict]) -> dict:
        return {
            "macro_precision": mean_of([t["scores"]["macro_precision"] for t in turns]),
            "macro_recall": mean_of([t["scores"]["macro_recall"] for t in turns]),
        }

    def rescore_record(self, record: dict) -> dict:
        out = dict(record)
        out["turns"] = [
            {**t, "scores": self._score_turn(t["target"], t["output"], t.get("error"))}
            for t in record["turns"]
        ]
        out["scores"] = self._case_scores(out["turns"])
        return out

    # --- aggregation --------------------------------------------------------------------------
    def aggregate(self, records: Iterable[dict]) -> dict:
        """Overall and group figures, reading ``records`` once (a stream works).

        Kept per case: its two macro figures (overall and per tag) and, per dimension score,
        its precision and recall (per dimension name and per dataset), as floats in
        :class:`~queryeval.tasks.accum.Values` so the means equal ``np.mean`` over lists to
        the last bit; the rest is counters per group.
        """
        include_extra = self.options.include_extra_dimensions
        tally = Tally(self)
        precisions, recalls = Values(), Values()
        micro = MicroCounts(include_extra=include_extra)
        scored_turns = 0
        with_extra = 0
        by_tag: dict[str, _TagGroup] = {}
        by_dimension: dict[str, _DimGroup] = {}
        by_dataset: dict[str, _DimGroup] = {}
        for r in tally.counted(records):
            p, rc = r["scores"]["macro_precision"], r["scores"]["macro_recall"]
            precisions.add(p)
            recalls.add(rc)
            for tag in r["tags"] or ["(no tag)"]:
                group = by_tag.get(tag)
                if group is None:
                    group = by_tag[tag] = _TagGroup()
                group.add(p, rc)
            scored_turns += len(r["turns"])
            extra = False
            for t in r["turns"]:
                for d in t["scores"]["dimensions"]:
                    if not d["in_target"]:
                        extra = True
                    micro.add(d["in_target"], len(d["tp"]), len(d["fp"]), len(d["fn"]))
                    for groups, key in ((by_dimension, d["dimension"]),
                                        (by_dataset, d["dataset_id"])):
                        dim_group = groups.get(key)
                        if dim_group is None:
                            dim_group = groups[key] = _DimGroup(include_extra)
                        dim_group.add(d)
            with_extra += extra
        pooled = micro.result()
        overall = {
            "macro_precision": precisions.mean(),
            "macro_recall": recalls.mean(),
            "micro_precision": pooled["micro_precision"],
            "micro_recall": pooled["micro_recall"],
            "tp": pooled["tp"], "fp": pooled["fp"], "fn": pooled["fn"],
            "total_cases": tally.total,
            "scored_cases": tally.counted_n,
            "scored_turns": scored_turns,
            "cases_with_dimensions_not_in_target": with_extra,
            **tally.error_summary(),
        }
        return {
            "overall_metrics": overall,
            "group_metrics": {
                "tag": {tag: by_tag[tag].result() for tag in sorted(by_tag)},
                "dimension": {k: by_dimension[k].result() for k in sorted(by_dimension)},
                "dataset": {k: by_dataset[k].result() for k in sorted(by_dataset)},
            },
        }

    # --- flat outputs ---------------------------------------------------------------------------
    csv_columns = [
        "case_id", "name", "tags", "turn", "dataset_id", "dimension", "in_target",
        "tp", "fp", "fn", "precision", "recall", "true_positives", "false_positives",
        "false_negatives", "turn_macro_precision", "turn_macro_recall",
        "case_macro_precision", "case_macro_recall", "error",
    ]

    def csv_rows(self, record: dict) -> Iterable[dict]:
        base = {
            "case_id": record["case_id"], "name": record["name"], "tags": ";".join(record["tags"]),
            "case_macro_precision": record["scores"]["macro_precision"],
            "case_macro_recall": record["scores"]["macro_recall"],
        }
        for t in record["turns"]:
            turn = {
                **base, "turn": t["turn"],
                "turn_macro_precision": t["scores"]["macro_precision"],
                "turn_macro_recall": t["scores"]["macro_recall"],
                "error": f"{t['error']['kind']}: {t['error']['message']}" if t["error"] else "",
            }
            if not t["scores"]["dimensions"]:
                yield turn
            for d in t["scores"]["dimensions"]:
                yield {
                    **turn, "dataset_id": d["dataset_id"], "dimension": d["dimension"],
                    "in_target": d["in_target"], "tp": len(d["tp"]), "fp": len(d["fp"]),
                    "fn": len(d["fn"]), "precision": d["precision"], "recall": d["recall"],
                    "true_positives": "; ".join(f"{i}: {n}" for i, n in d["tp"]),
                    "false_positives": "; ".join(f"{i}: {n}" for i, n in d["fp"]),
                    "false_negatives": "; ".join(f"{i}: {n}" for i, n in d["fn"]),
                }

    @staticmethod
    def case_verdict(record: dict) -> str:
        """A case's verdict in the reports (HTML status, xlsx pass/fail): ``error`` when a
        call failed; ``pass`` when its macro recall and macro precision are both 1 (every
        expected term found, nothing extra; a figure that is undefined, as for a turn that
        expects and selects nothing, does not count against it); ``fail`` otherwise."""
        if record.get("status") == "error":
            return "error"
        scores = record.get("scores") or {}
        figures = [scores.get("macro_recall"), scores.get("macro_precision")]
        return "pass" if all(v is None or v == 1.0 for v in figures) else "fail"

    def report_content(self, records: list[dict], metrics: dict) -> list[ReportItem]:
        return [Workbook("selection", {"verdict": self.case_verdict})]

    def summary(self, metrics: dict) -> list[Any]:
        return [
            Overall(["macro_precision", "macro_recall", "micro_precision", "micro_recall",
                     "total_cases", "scored_turns", "errors"]),
            Groups(metrics["group_metrics"]["dimension"], "dimension",
                   ["in_target", "not_in_target", "mean_precision", "mean_recall"]),
        ]
