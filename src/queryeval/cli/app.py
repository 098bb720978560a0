"""The ``queryeval`` Typer application and its entry point.

Errors raised on purpose (:class:`~queryeval.errors.QueryevalError`) become one line on
stderr and the error's exit code (2 for bad input); a traceback only with ``--debug``, which
may appear anywhere on the command line.
"""

from __future__ import annotations

import sys
import traceback

import typer
from pydantic import ValidationError

from queryeval.cli import audit as audit_cmd
from queryeval.cli import cache as cache_cmd
from queryeval.cli import compare as compare_cmd
from queryeval.cli import judge as judge_cmd
from queryeval.cli import plan as plan_cmd
from queryeval.cli import report as report_cmd
from queryeval.cli import rescore as rescore_cmd
from queryeval.cli import run as run_cmd
from queryeval.cli import schema as schema_cmd
from queryeval.cli import tokens as tokens_cmd
from queryeval.cli import trec as trec_cmd
from queryeval.cli import tune as tune_cmd
from queryeval.cli import validate as validate_cmd
from queryeval.cli import view as view_cmd
from queryeval.cli.console import console, err_console
from queryeval.cli.help import Command, Group, usage_error_line
from queryeval.errors import QueryevalError
from queryeval.io.safetext import console_plain

# Typer vendors its own click: take the exception classes from Typer's public ones.
_CLICK_EXCEPTION = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
_EXIT = typer.Exit
_ABORT = typer.Abort

app = typer.Typer(
    name="queryeval",
    cls=Group,
    help="Evaluate how well AI data assistants find the right data.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _name, _module in (("run", run_cmd), ("report", report_cmd), ("compare", compare_cmd),
                       ("rescore", rescore_cmd), ("validate", validate_cmd),
                       ("schema", schema_cmd), ("tune", tune_cmd), ("tokens", tokens_cmd),
                       ("trec", trec_cmd), ("view", view_cmd), ("cache", cache_cmd),
                       ("audit", audit_cmd), ("judge-check", judge_cmd), ("plan", plan_cmd)):
    app.command(_name, cls=getattr(_module, "COMMAND_CLASS", Command))(_module.command)


def _version(value: bool) -> None:
    if value:
        from queryeval import __version__

        console.print(f"queryeval {__version__}", markup=False, highlight=False)
        raise typer.Exit(0)


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """queryeval: suite -> system -> outputs -> scores -> run log -> reports."""


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    args = [a for a in args if a != "--debug"]
    try:
        result = app(args=args, prog_name="queryeval", standalone_mode=False)
        return int(result or 0) if isinstance(result, int) else 0
    except QueryevalError as err:
        if debug:
            traceback.print_exc()
        # the message may quote a suite or an output: controls are shown, never sent
        err_console.print(f"error: {console_plain(err)}", markup=False, highlight=False,
                          soft_wrap=True)
        return err.exit_code
    except _EXIT as exc:
        return exc.exit_code
    except _ABORT:
        err_console.print("aborted", markup=False)
        return 130
    except _CLICK_EXCEPTION as exc:  # a usage error: one line, no usage block
        err_console.print(f"error: {console_plain(usage_error_line(exc))}", markup=False,
                          highlight=False, soft_wrap=True)
        return exc.exit_code
    except KeyboardInterrupt:
        err_console.print("interrupted", markup=False)
        return 130
    except ValidationError as exc:  # a last resort: options are checked up front, one line each
        if debug:
            traceback.print_exc()
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(x) for x in err["loc"]) or exc.title
        err_console.print(f"error: {where}: {err['msg']}", markup=False, highlight=False,
                          soft_wrap=True)
        return 2
