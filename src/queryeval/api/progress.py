"""Progress of :func:`queryeval.evaluate` when the caller gives no ``progress`` callback.

In a Jupyter notebook (or Colab, VS Code, Databricks: wherever rich's ``Console.is_jupyter``
holds) one line of text is shown and updated in place through IPython's ``display`` with a
``display_id`` (no ipywidgets needed); in a terminal, rich's progress bar on stderr; anywhere
else (a script's output piped to a file, a test run) nothing, as before.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

Progress = Callable[[int, int], Any]

#: Seconds between two updates of the notebook line (the last one is always shown).
NOTEBOOK_INTERVAL = 0.25


def where() -> str | None:
    """``"notebook"``, ``"terminal"`` (stderr is one) or ``None``."""
    from rich.console import Console

    console = Console(stderr=True)
    if console.is_jupyter:
        return "notebook"
    if console.is_terminal and not console.is_dumb_terminal:
        return "terminal"
    return None


def progress_line(done: int, total: int, unit: str, seconds: float) -> str:
    """``cases 12/60 (20%) 3.2 s``: the notebook's line (plain text)."""
    share = f" ({done / total:.0%})" if total else ""
    return f"{unit} {done}/{total or '?'}{share} {seconds:.1f} s"


class AutoProgress:
    """A ``progress(advance, total)`` callback that draws where :func:`where` says;
    :meth:`close` ends it (the final count stays shown)."""

    def __init__(self, place: str, unit: str = "cases") -> None:
        self.place, self.unit = place, unit
        self.done = self.total = 0
        self.start = time.monotonic()
        self._shown = 0.0
        self._handle: Any = None  # the notebook's display handle
        self._bar: Any = None  # the terminal's rich Progress
        self._task: Any = None

    def __call__(self, advance: int, total: int) -> None:
        if total:
            self.total = total
        self.done += advance
        if self.place == "terminal":
            self._terminal(advance, total)
        elif time.monotonic() - self._shown >= NOTEBOOK_INTERVAL or self.done >= self.total:
            self._notebook()

    def _terminal(self, advance: int, total: int) -> None:
        if self._bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            self._bar = Progress("[progress.description]{task.description}", BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(),
                                 console=Console(stderr=True), transient=False)
            self._task = self._bar.add_task(self.unit, total=None)
            self._bar.start()
        if total:
            self._bar.update(self._task, total=total)
        if advance:
            self._bar.advance(self._task, advance)

    def _notebook(self) -> None:
        from IPython.display import display

        text = progress_line(self.done, self.total, self.unit, time.monotonic() - self.start)
        self._shown = time.monotonic()
        if self._handle is None:
            self._handle = display({"text/plain": text}, raw=True, display_id=True)
        else:
            self._handle.update({"text/plain": text}, raw=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
        elif self.place == "notebook" and self.total:
            self._notebook()


def auto_progress(unit: str = "cases") -> AutoProgress | None:
    """The callback to use when the caller gave none (``None``: show nothing here)."""
    place = where()
    return AutoProgress(place, unit) if place else None


def tell(line: str) -> None:
    """A notice for the person running the evaluation (stderr; a notebook shows it too)."""
    print(line, file=sys.stderr, flush=True)
