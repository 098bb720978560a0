"""How ``--help`` renders, for every command: one place instead of per-option tweaks.

* An on/off flag (``--quiet``, ``--xlsx/--no-xlsx``, ``--help``) shows no value type: Typer
  would print ``<bool>`` beside it, as if the flag took a value.
* A docstring's single line breaks are source formatting, not layout: paragraphs are joined
  into one line each (Typer's rich help would keep the break and the indentation), so the
  help reflows to the terminal's width.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from typer.core import TyperCommand, TyperGroup

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


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


class Command(TyperCommand):
    """A command whose help has no ``<bool>`` beside flags and no hard line breaks."""

    def __init__(self, *args: Any, help: str | None = None, **kwargs: Any) -> None:  # noqa: A002
        super().__init__(*args, help=reflow(help), **kwargs)

    def get_params(self, ctx: Any) -> list[Any]:
        return _hide_flag_types(super().get_params(ctx))


class Group(TyperGroup):
    """The ``queryeval`` group, with the same help rules as :class:`Command`."""

    def __init__(self, *args: Any, help: str | None = None, **kwargs: Any) -> None:  # noqa: A002
        super().__init__(*args, help=reflow(help), **kwargs)

    def get_params(self, ctx: Any) -> list[Any]:
        return _hide_flag_types(super().get_params(ctx))
