"""The rich consoles every command prints through (results on stdout, messages on stderr).

When the output is not a terminal (a pipe, a CI log) rich would assume 80 columns and squeeze
wide tables; there we use 120 columns unless ``COLUMNS`` says otherwise."""

import os

from rich.console import Console

PIPE_WIDTH = 120


def _console(stderr: bool = False) -> Console:
    c = Console(stderr=stderr)
    if not c.is_terminal and "COLUMNS" not in os.environ:
        c = Console(stderr=stderr, width=PIPE_WIDTH)
    return c


console = _console()
err_console = _console(stderr=True)
