"""The rich consoles every command prints through (results on stdout, messages on stderr).

Plain strings (paths, ids, ``run log: ...``, ``validate``'s line) are machine-readable: they
are never wrapped or cropped, whatever the terminal width or ``COLUMNS`` says (scripts and
tests read them back). Renderables (tables, panels) are laid out to the width. When the
output is not a terminal (a pipe, a CI log) rich would assume 80 columns and squeeze wide
tables; there we use 120 columns unless ``COLUMNS`` says otherwise.

A table never cuts a cell: rich would shrink a table wider than the terminal by cropping cells
to ``0.8…``. A table that does not fit at its natural width is printed instead as a vertical
list (the first column's value, then one ``header: value`` line per other column), so every
name and number is shown in full at any width."""

import os
from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

PIPE_WIDTH = 120


class LineConsole(Console):
    """A console whose ``print`` of plain strings and rich texts is soft-wrapped: one logical
    line stays one line (the terminal, if any, folds it), instead of rich inserting newlines
    at the width (where a name's ``::error::`` could start a line of a CI log)."""

    def print(self, *objects: Any, soft_wrap: bool | None = None, **kwargs: Any) -> None:
        if any(isinstance(o, Table) and not fits(self, o) for o in objects):
            for o in objects:
                if isinstance(o, Table) and not fits(self, o):
                    for line in vertical(o):
                        super().print(line, soft_wrap=True, highlight=False)
                else:
                    self.print(o, soft_wrap=soft_wrap, **kwargs)
            return
        if soft_wrap is None and objects and all(isinstance(o, (str, Text)) for o in objects):
            soft_wrap = True
        super().print(*objects, soft_wrap=soft_wrap, **kwargs)


def fits(console: Console, table: Table) -> bool:
    """Whether ``table`` fits ``console``'s width with no cell cropped or wrapped."""
    wide = console.options.update(width=10**6, max_width=10**6)  # rich clamps to max_width
    need = Measurement.get(console, wide, table).maximum
    return need <= console.width


def _text(value: Any) -> Text:
    return value if isinstance(value, Text) else Text(str(value))


def vertical(table: Table) -> list[Text]:
    """``table`` as lines: the title, then per row its first cell and an indented
    ``header: value`` line for each other column; then the caption."""
    lines: list[Text] = []
    if table.title:
        lines.append(_text(table.title))
    columns = table.columns
    cells = [list(c.cells) for c in columns]
    for r in range(table.row_count):
        if columns:
            lines.append(Text.assemble("• ", _text(columns[0].header), ": ", _text(cells[0][r])))
        for col, col_cells in zip(columns[1:], cells[1:], strict=True):
            lines.append(Text.assemble("    ", _text(col.header), ": ", _text(col_cells[r])))
    if table.caption:
        lines.append(_text(table.caption))
    return lines


def _console(stderr: bool = False) -> Console:
    c = LineConsole(stderr=stderr)
    if not c.is_terminal and "COLUMNS" not in os.environ:
        c = LineConsole(stderr=stderr, width=PIPE_WIDTH)
    return c


console = _console()
err_console = _console(stderr=True)
