"""Seed 004's built-in system: RETRIEVE(field, question, N, model) with the built-in
retrievers over a data table (:class:`FieldsSystem`, the fields task's default system, and
:func:`queryeval.tasks.fields.task.builtin`, the same as a Python system). The task
that scores it: :mod:`queryeval.tasks.fields.task`; docs/fields.md.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

DEFAULT_MODEL = "minilm"
"""The retriever model of a field the request names no model for."""

_TABLES: dict[tuple, Any] = {}
_TABLES_LOCK = threading.Lock()


def data_table(data: str, descriptions: dict[str, str]):
    """The data table, read once per process, (path, descriptions) and file version."""
    from queryeval.suite.fields import load_data_table

    try:
        st = Path(data).stat()
        version: tuple = (st.st_mtime_ns, st.st_size)
    except OSError:
        version = ()  # load_data_table reports the missing file
    key = (data, tuple(sorted(descriptions.items())), version)
    with _TABLES_LOCK:
        if key not in _TABLES:
            _TABLES[key] = load_data_table(data, descriptions)
        return _TABLES[key]


class FieldsSystem:
    """RETRIEVE with the built-in retrievers: answers ``{"fields": {field: ranked values}}``.

    Each (model, field) is indexed once, on first use; requests name their fields and carry
    the model per field (``request["retriever"]["models"]``, else :data:`DEFAULT_MODEL`).
    """

    def __init__(self, data: str, descriptions: dict[str, str] | None = None, *,
                 device: str | None = None, cache_dir: str | None = None) -> None:
        from queryeval.tune.retrieve import FieldRetrieverPool, default_factory

        self.name = f"builtin:fields:{Path(data).name}"
        table = data_table(data, dict(descriptions or {}))
        self.pool = FieldRetrieverPool(
            table, factory=default_factory(cache=cache_dir or True, device=device))

    def call(self, request: dict, timeout: float | None = None) -> dict:
        cfg = request.get("retriever") or {}
        models = cfg.get("models") or {}
        fields = request.get("fields") or []
        chosen = {f: models.get(f, DEFAULT_MODEL) for f in fields}
        return {"fields": self.pool.retrieve(request["question"], chosen, cfg.get("depth"))}

    def close(self) -> None:
        pass
