"""``queryeval cache info|clear``: the call cache of ``queryeval run --cache``."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import typer

from queryeval.cli.console import console


def command(
    action: Literal["info", "clear"] = typer.Argument(
        ..., help="info: entries and size; clear: delete every entry."),
    cache_dir: Path | None = typer.Option(
        None, "--cache-dir", help="Call cache folder (default $QUERYEVAL_CACHE_DIR or "
        "~/.cache/queryeval/calls)."),
    max_mb: float | None = typer.Option(
        None, "--cache-max-mb", help="With info: also evict down to this size (MB), LRU first."),
) -> None:
    """Show or clear the cache of system outputs used by `queryeval run --cache`."""
    from queryeval.run.cache import CallCache

    cache = CallCache(cache_dir, **({"max_mb": max_mb} if max_mb is not None else {}))
    if action == "clear":
        deleted = cache.clear()
        console.print(f"cleared {deleted} entries from {cache.folder}", markup=False,
                      highlight=False)
        return
    evicted = cache.evict() if max_mb is not None else 0
    info = cache.info()
    line = (f"{info['folder']}: {info['entries']} entries, {info['bytes'] / 1e6:.2f} MB"
            + (f" ({evicted} evicted)" if evicted else ""))
    console.print(line, markup=False, highlight=False)
