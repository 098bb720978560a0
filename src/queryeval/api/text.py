"""Plain text of rich renderables, for ``str(run)`` and ``str(comparison)``."""

from __future__ import annotations

import io
from typing import Any

CONSOLE_WIDTH = 120
"""``str(run)`` renders its tables at this width, whatever the terminal."""


def render_text(renderables: Any) -> str:
    """Rich renderables as plain text at :data:`CONSOLE_WIDTH` columns (no colour codes)."""
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=CONSOLE_WIDTH, color_system=None, force_terminal=False,
                      legacy_windows=False, soft_wrap=False)
    for r in renderables if isinstance(renderables, list) else [renderables]:
        console.print(r)
    return buf.getvalue().rstrip("\n")
