"""Command-line interface: one thin module per command, registered in :mod:`queryeval.cli.app`.

Convention for a command module ``queryeval/cli/<name>.py``: it defines ``command(...)`` with
Typer-annotated parameters, imports heavy dependencies *inside* the function (start-up stays
fast), raises :class:`queryeval.errors.InputError` / ``ConfigError`` for bad input, and prints
with :data:`queryeval.cli.console.console`.
"""
