"""Seed 000: term selection (SDMX indicators and other dimensions).

Each user turn with a target is scored with :func:`queryeval.metrics.sets.score_selection`;
a case's figures are the mean over its scored turns; ``overall_metrics`` holds the means over
cases (``macro_precision``, ``macro_recall``) plus pooled micro figures. See
docs/term-selection.md for every convention.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, TypeAdapter

from queryeval.metrics.sets import DimensionScore, micro_scores, score_selection
from queryeval.suite.models import Case, DatasetSelection
from queryeval.tasks.base import Task, TaskOptions, TurnOutcome

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


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


class SelectionTask(Task):
    name = "indicator_selection"
    Options = SelectionOptions

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
    def _score_turn(self, target: list[dict], output: list[dict] | None) -> dict:
        return score_selection(
            output or [], target, include_extra=self.options.include_extra_dimensions,
        ).to_dict()

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
                "scores": self._score_turn(target, o.output),
            })
        record["turns"] = turns
        record["scores"] = self._case_scores(turns)
        return record

    @staticmethod
    def _case_scores(turns: list[dict]) -> dict:
        return {
            "macro_precision": float(np.mean([t["scores"]["macro_precision"] for t in turns])),
            "macro_recall": float(np.mean([t["scores"]["macro_recall"] for t in turns])),
        }

    def rescore_record(self, record: dict) -> dict:
        out = dict(record)
        out["turns"] = [
            {**t, "scores": self._score_turn(t["target"], t["output"])} for t in record["turns"]
        ]
        out["scores"] = self._case_scores(out["turns"])
        return out

    # --- aggregation --------------------------------------------------------------------------
    def aggregate(self, records: list[dict]) -> dict:
        counted = self.counted(records)
        dims = [DimensionScore.from_dict(d) for r in counted for t in r["turns"]
                for d in t["scores"]["dimensions"]]
        include_extra = self.options.include_extra_dimensions
        micro = micro_scores(dims, include_extra=include_extra)
        overall = {
            "macro_precision": _mean([r["scores"]["macro_precision"] for r in counted]),
            "macro_recall": _mean([r["scores"]["macro_recall"] for r in counted]),
            "micro_precision": micro["micro_precision"],
            "micro_recall": micro["micro_recall"],
            "tp": micro["tp"], "fp": micro["fp"], "fn": micro["fn"],
            "total_cases": len(records),
            "scored_cases": len(counted),
            "scored_turns": sum(len(r["turns"]) for r in counted),
            "cases_with_dimensions_not_in_target": sum(
                1 for r in counted
                if any(not d["in_target"] for t in r["turns"] for d in t["scores"]["dimensions"])
            ),
            **self.error_summary(records),
        }
        return {
            "overall_metrics": overall,
            "group_metrics": {
                "tag": self._by_tag(counted),
                "dimension": self._by_key(dims, lambda d: d.dimension, include_extra),
                "dataset": self._by_key(dims, lambda d: d.dataset_id, include_extra),
            },
        }

    @staticmethod
    def _by_tag(records: list[dict]) -> dict:
        groups: dict[str, list[dict]] = defaultdict(list)
        for r in records:
            for tag in r["tags"] or ["(no tag)"]:
                groups[tag].append(r)
        return {
            tag: {
                "cases": len(rs),
                "macro_precision": _mean([r["scores"]["macro_precision"] for r in rs]),
                "macro_recall": _mean([r["scores"]["macro_recall"] for r in rs]),
            }
            for tag, rs in sorted(groups.items())
        }

    @staticmethod
    def _by_key(dims: list[DimensionScore], key, include_extra: bool) -> dict:
        groups: dict[str, list[DimensionScore]] = defaultdict(list)
        for d in dims:
            groups[key(d)].append(d)
        out = {}
        for name, ds in sorted(groups.items()):
            in_target = [d for d in ds if d.in_target]
            micro = micro_scores(ds, include_extra=include_extra)
            out[name] = {
                "in_target": len(in_target),
                "not_in_target": len(ds) - len(in_target),
                "tp": micro["tp"], "fp": micro["fp"], "fn": micro["fn"],
                "mean_precision": _mean([d.precision for d in ds if d.in_target or include_extra]),
                "mean_recall": _mean([d.recall for d in in_target]),
                "micro_precision": micro["micro_precision"],
                "micro_recall": micro["micro_recall"] if in_target else None,
            }
        return out

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

    def write_reports(self, paths: Any, records: list[dict], metrics: dict) -> list:
        from queryeval.report.selection_xlsx import write_selection_xlsx

        write_selection_xlsx(paths.report_xlsx, records, metrics)
        return [paths.report_xlsx]

    def summary(self, metrics: dict) -> Any:
        from queryeval.report.console import group_table, overall_table

        return [
            overall_table(metrics, keys=["macro_precision", "macro_recall", "micro_precision",
                                         "micro_recall", "total_cases", "scored_turns", "errors"]),
            group_table(metrics["group_metrics"]["dimension"], "dimension",
                        ["in_target", "not_in_target", "mean_precision", "mean_recall"]),
        ]
