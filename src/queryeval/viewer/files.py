"""Which files the viewer opens, and how: every path is resolved and checked to be under the
run folder first, including paths named inside run files (a task option such as
``task_options.tuning`` or ``corpus`` outside the folder is withheld from the task, never
opened); reasons shown for an unreadable run name the file and the kind of problem, never
the content of a file."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root)
    except OSError:
        return False


@dataclass
class Entry:
    batch_id: str
    path: Path


class Unreadable(Exception):
    """A run that cannot be shown: its reason is listed in the index and returned as a 422."""


def _files(entry: Entry) -> list[Path]:
    """Every file the viewer opens for a run: batch, results (JSONL and CSV), metrics."""
    d, i = entry.path.parent, entry.batch_id
    return [entry.path, d / f"results_{i}.jsonl", d / f"results_{i}.csv", d / f"metrics_{i}.json"]


def scan(root: Path) -> dict[str, Entry]:
    """Every ``batch_<id>.json`` under ``root`` (symlinked folders are not entered; a batch
    any of whose files (batch, results JSONL/CSV, metrics) resolves outside ``root`` is left
    out)."""
    real = root.resolve()
    out: dict[str, Entry] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            if not (name.startswith("batch_") and name.endswith(".json")):
                continue
            path = Path(folder) / name
            entry = Entry(name[len("batch_"):-len(".json")], path)
            if all(_inside(p, real) for p in _files(entry) if p.exists() or p.is_symlink()):
                out.setdefault(entry.batch_id, entry)
    return out


def read_batch(entry: Entry, root: Path) -> dict:
    """The batch document after checking the run's files: each one present resolves inside
    ``root`` and is a regular file (never a FIFO or device: nothing here can block), and the
    batch's own ``batch_id`` is the one in its file name (the id that names the files
    :meth:`queryeval.run.results.RunResults.open` opens). Raises :class:`Unreadable`."""
    from queryeval.errors import QueryevalError
    from queryeval.io.files import check_input
    from queryeval.run.log import read_batch_file

    real = root.resolve()
    for p in _files(entry):
        if not (p.exists() or p.is_symlink()):
            continue
        if not _inside(p, real):
            raise Unreadable(f"{p.name} resolves outside the folder")
        try:
            check_input(p, "responses")
        except QueryevalError as exc:
            raise Unreadable(_reason(exc).replace(f"{p}:", f"{p.name}:")) from None
    try:
        batch = read_batch_file(entry.path).doc  # the run log's one reader, typed
    except QueryevalError as exc:
        raise Unreadable(_reason(exc).replace(f"{entry.path}:", f"{entry.path.name}:")) from None
    if batch.get("batch_id") != entry.batch_id:
        raise Unreadable(f"{entry.path.name}: its batch_id differs from the file name")
    return batch


def _reason(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]




@dataclass
class Withheld:
    """Task options naming a path outside the folder (not given to the task, so never
    opened), and why the task could not be used (the figures then use the default per-case
    metrics)."""

    options: list[str] = field(default_factory=list)
    task_error: str | None = None


def _path_like(v: str) -> bool:
    """A string option that names (or may name) a file: absolute, with a folder separator,
    starting with ``~``, or naming something that exists (relative to the current folder).
    URLs (``scheme://``) are not paths."""
    if not v or "://" in v or "\x00" in v:
        return False
    try:
        return (v.startswith("~") or os.sep in v or (os.altsep or os.sep) in v
                or Path(v).is_absolute() or Path(v).exists())
    except (OSError, ValueError):
        return True


def _outside(v: Any, root: Path) -> bool:
    """Whether an option value holds a path that does not resolve under ``root``."""
    if isinstance(v, str):
        if not _path_like(v):
            return False
        try:
            return not Path(v).expanduser().resolve().is_relative_to(root)
        except (OSError, ValueError, RuntimeError):
            return True
    if isinstance(v, dict):
        return any(_outside(x, root) for x in v.values())
    if isinstance(v, list):
        return any(_outside(x, root) for x in v)
    return False


def safe_options(options: Any, root: Path) -> tuple[dict, list[str]]:
    """The task options without those naming a path outside ``root`` (resolved, links
    followed), and the names of the options left out."""
    if not isinstance(options, dict):
        return {}, []
    real = root.resolve()
    kept, withheld = {}, []
    for key, value in options.items():
        if _outside(value, real):
            withheld.append(str(key))
        else:
            kept[str(key)] = value
    return kept, withheld


def open_run(entry: Entry, root: Path) -> Any:
    """The run as :meth:`queryeval.run.results.RunResults.open` opens it, except that the task
    is built from :func:`safe_options` (a task may open files named in its options: the
    fields task reads ``tuning`` when built, retrieval reads ``corpus`` for a report) and a
    task that cannot be built leaves ``task`` None with its error's kind only (an error
    about a file may quote the file). ``.withheld`` says what was left out. Call
    :func:`read_batch` first (it checks the run's own files)."""
    from queryeval.errors import QueryevalError
    from queryeval.run.log import RunLog
    from queryeval.run.results import RunResults
    from queryeval.tasks.base import get_task

    log = RunLog.open(entry.path)
    try:
        metrics = log.read_metrics()  # the run log's one reader, typed
    except QueryevalError as exc:
        path = log.paths.metrics
        raise Unreadable(_reason(exc).replace(f"{path}:", f"{path.name}:")) from None
    cfg = log.batch.get("evaluation_config") or {}
    opts, names = safe_options(cfg.get("task_options") if isinstance(cfg, dict) else {}, root)
    withheld = Withheld(names)
    try:
        task = get_task(str(log.batch.get("task") or ""), opts)
    except Exception as exc:  # noqa: BLE001 - any task error: shown by kind, never its text
        task = None
        withheld.task_error = type(exc).__name__
    run = RunResults(log, metrics, task)
    run.withheld = withheld  # type: ignore[attr-defined]
    return run
