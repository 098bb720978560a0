"""``queryeval cache info|clear``: the call cache of ``queryeval run --cache``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from queryeval.cli.console import console

CallCacheDir = Annotated[Path | None, typer.Option(
    "--cache-dir", help="Call cache folder (default $QUERYEVAL_CACHE_DIR/calls or "
    "~/.cache/queryeval/calls).")]
"""``--cache-dir`` of ``queryeval run`` and ``queryeval cache``: the one call cache folder."""


def command(
    action: Literal["info", "clear"] = typer.Argument(
        ..., help="info: entries and size; clear: delete every entry."),
    cache_dir: CallCacheDir = None,
    max_mb: float | None = typer.Option(
        None, "--cache-max-mb", help="With info: the size limit to compare with (nothing is "
        "deleted; a run evicts at its end)."),
) -> None:
    """Show or clear the cache of system outputs used by `queryeval run --cache`.

    Only a folder carrying the cache's marker (CACHEDIR.TAG, written when a run creates the
    cache) is read or cleared; only its entries (`ab/<62 hex>.json`) are deleted."""
    from queryeval.run.cache import CallCache

    cache = CallCache(cache_dir, **({"max_mb": max_mb} if max_mb is not None else {}))
    cache.require_marker()  # one line, exit 2, for a folder that is not a call cache
    if action == "clear":
        deleted = cache.clear()
        console.print(f"cleared {deleted} entries from {cache.folder}", markup=False,
                      highlight=False)
        return
    info = cache.info()
    line = f"{info['folder']}: {info['entries']} entries, {info['bytes'] / 1e6:.2f} MB"
    if not cache.folder.exists():
        line += " (no cache there yet)"
    if max_mb is not None:
        over = info["bytes"] > info["max_bytes"]
        line += (f", {'over' if over else 'under'} the {max_mb:g} MB limit"
                 + (" (a run with this --cache-max-mb evicts the oldest at its end)"
                    if over else ""))
    console.print(line, markup=False, highlight=False)
