"""How ``--help`` renders, for every command: one place instead of per-option tweaks.

* An on/off flag (``--quiet``, ``--xlsx/--no-xlsx``, ``--help``) shows no value type: Typer
  would print ``<bool>`` beside it, as if the flag took a value.
* A docstring's single line breaks are source formatting, not layout: paragraphs are joined
  into one line each (Typer's rich help would keep the break and the indentation), so the
  help reflows to the terminal's width.
* A long word in the help text (a URL, a path, a default) is folded onto the next line,
  never cut to ``https://api.openai.com/…``.
* Option names, their short forms and value types are never cut, however narrow the terminal:
  Typer's options table would crop them to ``--respo…``. Their columns do not wrap and only
  the help text column gives up width; when the names leave the help text less than
  ``MIN_HELP_WIDTH`` columns, each option is shown as a line of its names and type with its
  help text indented below.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.columns import Columns
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from typer.core import TyperCommand, TyperGroup

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
MIN_HELP_WIDTH = 20


def reflow(text: str | None) -> str | None:
    """``text`` with each paragraph on one line (paragraphs stay separated by a blank line)."""
    if not text:
        return text
    paragraphs = _PARAGRAPH_BREAK.split(inspect.cleandoc(text).strip())
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def _hide_flag_types(params: list[Any]) -> list[Any]:
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""  # Typer shows a set metavar instead of the type
    return params


class _HelpTable(Table):
    """Typer's help table whose columns, when Typer leaves them undefined (the options
    panels), keep every column but the last (the help text) whole."""

    def add_row(self, *renderables: Any, **kwargs: Any) -> None:
        if renderables and isinstance(renderables[-1], Columns):
            renderables = (*renderables[:-1], _wrapping(renderables[-1]))
        if not self.columns and renderables:
            for _ in renderables[:-1]:
                self.add_column(no_wrap=True, overflow="fold")
            self.add_column(ratio=1, overflow="fold")
        super().add_row(*renderables, **kwargs)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        columns = self.columns
        if self.show_header or len(columns) < 2:
            yield from super().__rich_console__(console, options)
            return
        cells = [list(c.cells) for c in columns]
        names = sum(max((Measurement.get(console, options, cell).maximum for cell in col),
                        default=0) + 2 for col in cells[:-1])
        if names + MIN_HELP_WIDTH <= options.max_width:
            yield from super().__rich_console__(console, options)
            return
        for r in range(self.row_count):
            parts = [c[r] for c in cells[:-1]]
            head = Text(" ").join(p if isinstance(p, Text) else Text(str(p)) for p in parts
                                  if str(p).strip())
            head.no_wrap, head.overflow = False, "fold"
            yield head
            yield Padding(cells[-1][r], (0, 0, 0, 4))


def _wrapping(cell: Columns) -> Columns | Text:
    """Typer's help cell (the help text, ``[default: …]``, ``[required]`` as
    :class:`~rich.columns.Columns`) as one Text that wraps, folding a word longer than the
    column (a URL, a path): Columns would cut such a word to ``https://api.openai.com/…``."""
    items = list(cell.renderables)
    if not items or not all(isinstance(i, Text) for i in items):
        return cell
    text = Text(" ").join(items)
    text.no_wrap, text.overflow = False, "fold"
    return text


@contextmanager
def _whole_option_names() -> Iterator[None]:
    # imported to render help only: a run never loads rich's Markdown and traceback modules
    from typer import rich_utils

    saved = rich_utils.Table
    rich_utils.Table = _HelpTable  # type: ignore[misc]
    try:
        yield
    finally:
        rich_utils.Table = saved  # type: ignore[misc]


class _HelpRules:
    """Help without ``<bool>`` beside flags, without hard line breaks, and with option names
    whole at any width; mixed into both the commands and the group."""

    def __init__(self, *args: Any, help: str | None = None, **kwargs: Any) -> None:  # noqa: A002
        super().__init__(*args, help=reflow(help), **kwargs)

    def get_params(self, ctx: Any) -> list[Any]:
        return _hide_flag_types(super().get_params(ctx))  # type: ignore[misc]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        with _whole_option_names():
            super().format_help(ctx, formatter)  # type: ignore[misc]


def check_option_values(params: list[Any], args: list[str]) -> None:
    """A value-taking option followed by another option of the command (``--corpus --k 5``)
    is refused naming the option: click would take ``--k`` as the corpus path and report the
    ``5`` as an unexpected extra argument."""
    from queryeval.errors import ConfigError

    names: set[str] = set()
    takes_value: set[str] = set()
    for param in params:
        if getattr(param, "param_type_name", "") != "option":
            continue
        opts = [*param.opts, *getattr(param, "secondary_opts", ())]
        names.update(opts)
        if not param.is_flag and not param.count:
            takes_value.update(param.opts)
    for arg, after in zip(args, args[1:], strict=False):
        if arg == "--":
            return
        if arg in takes_value and (after in names or after.startswith("--") and len(after) > 2):
            what = "is an option" if after in names else "looks like an option"
            raise ConfigError(f"{arg}: needs a value (the next word, {after}, {what}; "
                              f"a value starting with -- is given as {arg}=VALUE)")


class Command(_HelpRules, TyperCommand):
    """A command whose help follows :class:`_HelpRules`, and whose value-taking options
    refuse another option as their value (:func:`check_option_values`)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        check_option_values(self.get_params(ctx), args)
        return super().parse_args(ctx, args)


class Group(_HelpRules, TyperGroup):
    """The ``queryeval`` group, with the same help rules as :class:`Command`."""


_PYDANTIC_PREFIX = re.compile(r"^(?:Value error|Assertion failed), ")


def _param_name(param: Any) -> str:
    longs = [o for o in (*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ()))
             if o.startswith("--")]
    if longs and getattr(param, "param_type_name", "") == "option":
        return longs[0]
    opts = getattr(param, "opts", None) or [getattr(param, "name", "") or "?"]
    return opts[0] if getattr(param, "param_type_name", "") == "option" else str(param.name)


def _clean(message: str) -> str:
    message = _PYDANTIC_PREFIX.sub("", message.strip())
    message = message[:-1] if message.endswith(".") and not message.endswith("..") else message
    return message[:1].lower() + message[1:] if message[:2] != message[:2].upper() else message


def usage_error_line(exc: Any) -> str:
    """One line for a click usage error (a bad option value, an unknown option, a missing
    argument): ``--retriever: 'dnse' is not one of 'bm25', 'dense'``, with click's
    suggestion for a mistyped option on the same line; no usage block."""
    kind = type(exc).__name__
    param = getattr(exc, "param", None)
    command = getattr(getattr(exc, "ctx", None), "command_path", None) or "queryeval"
    hint = f" (see '{command} --help')"
    if kind == "NoSuchOption":
        line = f"no such option {exc.option_name}"
        possibilities = sorted(getattr(exc, "possibilities", None) or [])
        if possibilities:
            return f"{line} (did you mean {' or '.join(possibilities)}?)"
        return line + hint
    if kind == "MissingParameter" and param is not None:
        what = "option" if getattr(param, "param_type_name", "") == "option" else "argument"
        return f"missing {what} {_param_name(param)}{hint}"
    if kind == "BadParameter" and param is not None:
        return f"{_param_name(param)}: {_clean(exc.message)}"
    if kind == "BadOptionUsage" and getattr(exc, "option_name", None):
        message = _clean(exc.message)
        needs = f"Option '{exc.option_name}' requires an argument"
        if exc.message.startswith(needs):
            return f"{exc.option_name}: needs a value"
        return message
    return _clean(exc.format_message()) + (hint if "UsageError" in kind else "")
