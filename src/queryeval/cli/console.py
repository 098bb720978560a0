"""The rich consoles every command prints through (results on stdout, messages on stderr)."""

from rich.console import Console

console = Console()
err_console = Console(stderr=True)
