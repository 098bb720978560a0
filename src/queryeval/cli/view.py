"""``queryeval view [RUNS_FOLDER]``: a local, read-only web viewer for a folder of runs."""

from __future__ import annotations

from pathlib import Path

import typer

from queryeval.cli.console import console, err_console


def command(
    folder: Path = typer.Argument(Path("runs"), help="Folder holding the runs (searched recursively)."),
    port: int = typer.Option(8765, "--port", min=0, max=65535, help="Port (0: any free port)."),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to bind. Anything but loopback serves every run "
        "to the network without authentication (a warning is printed)."),
    resamples: int = typer.Option(
        10_000, "--resamples", min=1, help="Bootstrap / Monte Carlo resamples of the pages' "
        "statistics (the default of queryeval report and compare, so the figures are theirs)."),
) -> None:
    """Browse runs, their cases and comparisons in a browser (read-only; loopback by default)."""
    import socket

    from queryeval.errors import ConfigError

    try:
        import uvicorn

        from queryeval.viewer.files import scan
        from queryeval.viewer.server import bind_warning, create_app
    except ImportError as exc:
        raise ConfigError(f"queryeval view needs the viewer extra (pip install "
                          f"'queryeval[viewer]'): {exc}") from None

    app = create_app(folder, resamples=resamples, host=host)
    warning = bind_warning(host)
    if warning:
        err_console.print(warning, markup=False, highlight=False, soft_wrap=True)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(128)  # connections wait from now on, not refused before uvicorn starts
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host} port {port}: "
                          f"{exc.strerror or exc}") from None
    bound = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    if not scan(folder):
        err_console.print(f"no runs under {folder} yet; serving anyway (new runs appear on "
                          "reload)", markup=False, highlight=False, soft_wrap=True)
    try:
        console.print(f"queryeval view: http://{shown}:{bound}/ (Ctrl-C to stop)",
                      markup=False, highlight=False, soft_wrap=True)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off",
                                               timeout_graceful_shutdown=5))
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn shuts down, then re-raises the Ctrl-C it caught
        stopped = True
    else:
        # uvicorn re-raises the signal it caught, but asyncio's runner may take it as a
        # request to cancel a task that is already finishing, and then nothing is raised:
        # the signal uvicorn recorded is what says the server was stopped
        stopped = bool(getattr(server, "_captured_signals", None)) or server.should_exit
    if stopped:
        err_console.print("queryeval view: stopped (Ctrl-C)", markup=False, highlight=False)
        raise typer.Exit(130)
