"""Recorded judge checks: what ``queryeval judge-check`` measured, one JSON file per
(model, prompt version), so a run with that judge can say how far it is trusted
(:func:`queryeval.engines.judge.recorded_agreement`).

Folder: the ``checks_dir`` given, else ``judge-checks`` under the root of every queryeval
cache (:func:`queryeval.io.caches.cache_root`). The file name is readable (the model with unsafe
characters replaced) plus a hash of the exact (model, version) pair, so two models whose
names differ only in such characters never share a file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from queryeval.engines.chat import digest
from queryeval.io.atomic import write_text_atomic
from queryeval.io.caches import cache_dir


def checks_root(checks_dir: str | Path | None) -> Path:
    return Path(checks_dir).expanduser() if checks_dir else cache_dir("judge-checks")


def check_path(root: Path, model: str, prompt_version: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model)[:80]
    return root / f"{slug}__{prompt_version}__{digest([model, prompt_version])[:12]}.json"


def save_check(record: dict, checks_dir: str | Path | None) -> Path:
    """Write ``record`` (it holds ``model`` and ``prompt_version``) atomically; returns the path."""
    root = checks_root(checks_dir)
    root.mkdir(parents=True, exist_ok=True)
    path = check_path(root, record["model"], record["prompt_version"])
    write_text_atomic(path, json.dumps(record, ensure_ascii=False, indent=1))
    return path


def load_check(model: str, prompt_version: str, checks_dir: str | Path | None) -> dict | None:
    """The recorded check, or None (absent or unreadable: no check is claimed)."""
    path = check_path(checks_root(checks_dir), model, prompt_version)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("model") != model \
            or data.get("prompt_version") != prompt_version:
        return None
    return data
