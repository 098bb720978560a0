"""The rich consoles every command prints through (results on stdout, messages on stderr).

Plain strings (paths, ids, ``run log: ...``, ``validate``'s line) are machine-readable: they
are never wrapped or cropped, whatever the terminal width or ``COLUMNS`` says (scripts and
tests read them back). Renderables (tables, panels) are laid out to the width. When the
output is not a terminal (a pipe, a CI log) rich would assume 80 columns and squeeze wide
tables; there we use 120 columns unless ``COLUMNS`` says otherwise."""

import os
from typing import Any

from rich.console import Console

PIPE_WIDTH = 120


class LineConsole(Console):
    """A console whose ``print`` of plain strings is soft-wrapped: one logical line stays one
    line (the terminal, if any, folds it), instead of rich inserting newlines at the width."""

    def print(self, *objects: Any, soft_wrap: bool | None = None, **kwargs: Any) -> None:
        if soft_wrap is None and objects and all(isinstance(o, str) for o in objects):
            soft_wrap = True
        super().print(*objects, soft_wrap=soft_wrap, **kwargs)


def _console(stderr: bool = False) -> Console:
    c = LineConsole(stderr=stderr)
    if not c.is_terminal and "COLUMNS" not in os.environ:
        c = LineConsole(stderr=stderr, width=PIPE_WIDTH)
    return c


console = _console()
err_console = _console(stderr=True)
