"""The viewer's index: one row per batch, read from its batch and metrics files only (cheap),
derived per-k batches grouped under their run, and the headline figures' kinds."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from queryeval.viewer.files import Entry, Unreadable, read_batch


def _text(v: Any) -> str | None:
    """A batch field shown as text (None stays None; a number or object becomes its JSON)."""
    if v is None or isinstance(v, str):
        return v
    try:
        return json.dumps(_finite(v), ensure_ascii=False)[:200]
    except (TypeError, ValueError):
        return str(v)[:200]


def _finite(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {str(k): _finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


def summary(entry: Entry, root: Path) -> dict:
    """One index row, read from the batch and metrics files only (cheap); a run that
    cannot be read is a row with ``status: "unreadable"`` and its ``error``."""
    rel = entry.path.relative_to(root).as_posix()
    try:
        batch = read_batch(entry, root)
    except Unreadable as exc:
        return {"id": entry.batch_id, "path": rel, "status": "unreadable",
                "error": str(exc), "metrics": {}}
    cfg = batch.get("evaluation_config") or {}
    opts = cfg.get("task_options") if isinstance(cfg.get("task_options"), dict) else {}
    metrics_path = entry.path.with_name(f"metrics_{entry.batch_id}.json")
    overall: dict = {}
    if metrics_path.is_file():
        from queryeval.errors import QueryevalError
        from queryeval.run.log import read_metrics_file

        try:  # the run log's one reader, typed
            overall = read_metrics_file(metrics_path).overall_metrics
        except QueryevalError:  # a bad metrics file: no figures (the run's page names it)
            overall = {}
    k = _top_k(opts)
    headline, kinds = headline_figures(overall, k, batch.get("task"))
    suite_info = batch.get("suite_info") or {}
    total = cfg.get("num_samples") or suite_info.get("cases")
    total = total if isinstance(total, int) and not isinstance(total, bool) else None
    done = total if batch.get("status") == "complete" and total else _count_lines(
        entry.path.with_name(f"results_{entry.batch_id}.jsonl"))
    suite = cfg.get("suite") or suite_info.get("path") or ""
    system = _system(batch, cfg, opts, entry.batch_id)
    if batch.get("derived_from") is not None and k is not None:
        system += f" (derived, k={k})"
    return {
        "id": entry.batch_id, "path": rel,
        "task": _text(batch.get("task")), "suite": Path(str(suite)).name,
        "system": system, "label": _label(batch, cfg), "date": _text(batch.get("timestamp")),
        "status": _text(batch.get("status")), "cases": total, "done": done,
        "metrics": headline, "metric_kinds": kinds,
        "derived_from": _text(batch.get("derived_from")),
    }




def headline_figures(overall: dict, k: int | None,
                     task: str | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """The index's headline figures and their kinds. The figures are the Overall figures of
    the HTML report (:func:`queryeval.report.html.overall_figures`: settings such as ``k`` and
    same-value aliases left out; a remaining ``recall_at_k`` is named ``recall@K``). The kind
    is decided here, from the metrics file's JSON types and the metric's name, never from the
    value: ``count`` (an int in the JSON, or a figure the task declares a count: with
    repeats a count is the mean over the attempts, a float), ``score`` (a figure the task
    declares unbounded: a retriever's similarity score), ``time`` (a float better lower by
    name: latencies, ``*_ms``, ``*time*``), else ``figure`` (a float: a rate or mean, 1.0
    included).
    Figures first, then counts, then scores, then times."""
    from queryeval.report.html import figure_kinds, overall_figures, overall_timings
    from queryeval.run.results import lower_is_better
    from queryeval.tasks.content import Figures

    declared = figure_kinds(task) if isinstance(task, str) else Figures()  # settings, names
    figures, _ = overall_figures(overall, declared)
    figures.update(overall_timings(overall, declared))
    if "recall_at_k" in figures and k is not None:  # say which k
        figures.setdefault(f"recall@{k}", figures.pop("recall_at_k"))
    kinds: dict[str, str] = {}
    for name, value in figures.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if isinstance(value, int) or declared.kind(name) == "count":
            kinds[name] = "count"
        elif declared.kind(name) == "unbounded":
            kinds[name] = "score"
        elif lower_is_better(None, name.rsplit(".", 1)[-1]) or "time" in name:
            kinds[name] = "time"
        else:
            kinds[name] = "figure"
    order = {"figure": 0, "count": 1, "score": 2, "time": 3}
    names = sorted(kinds, key=lambda n: order[kinds[n]])
    return {n: figures[n] for n in names}, {n: kinds[n] for n in names}


def _top_k(opts: dict) -> int | None:
    """The k a retrieval run is scored at (its largest ``k`` option), else None."""
    k = opts.get("k")
    ks = k if isinstance(k, list) else [k]
    ks = [x for x in ks if isinstance(x, int) and not isinstance(x, bool)]
    return max(ks) if ks else None


def _system(batch: dict, cfg: dict, opts: dict, batch_id: str) -> str:
    """The system as the HTML report names it: ``--system``, the responses file, else the
    task's built-in system (``built-in: bm25``)."""
    from queryeval.report.compare import run_label

    if cfg.get("system") or cfg.get("responses"):
        return run_label({"system": cfg.get("system"), "responses": cfg.get("responses"),
                          "batch_id": batch_id})
    label = None
    try:
        from queryeval.tasks.base import get_task

        hook = getattr(get_task(str(batch.get("task") or ""), opts), "system_label", None)
        label = hook() if callable(hook) else None
    except Exception:  # noqa: BLE001 - a task not installed or bad options: no label
        label = None
    return f"built-in: {label}" if label else "built-in"


def _label(batch: dict, cfg: dict) -> str:
    """The run's label as stored in its batch (``--name`` or the default of
    :func:`queryeval.run.results.default_label`, read the same way by every surface)."""
    from queryeval.run.results import default_label

    stored = batch.get("label")
    return stored if isinstance(stored, str) and stored else default_label(cfg)


def _count_lines(path: Path) -> int:
    from queryeval.errors import QueryevalError
    from queryeval.io.files import open_input

    try:
        with open_input(path, "responses") as fh:
            return sum(1 for line in fh if line.strip())
    except (OSError, QueryevalError):
        return 0


def _grouped(rows: list[dict]) -> list[dict]:
    """Index rows newest first, each derived batch (retrieval's per-k batches) right after
    the run it was derived from, smallest k last, with ``parent`` set; a derived batch whose
    run is not in the folder stays where its date puts it."""
    rows = sorted(rows, key=lambda r: str(r.get("date") or ""), reverse=True)
    ids = {r["id"] for r in rows}
    children: dict[str, list[dict]] = {}
    top = []
    for r in rows:
        parent = r.get("derived_from")
        if parent in ids and parent != r["id"]:
            children.setdefault(parent, []).append({**r, "parent": parent})
        else:
            top.append(r)
    out = []
    for r in top:
        out.append(r)
        out += sorted(children.get(r["id"], []), key=lambda c: c["system"], reverse=True)
    return out
