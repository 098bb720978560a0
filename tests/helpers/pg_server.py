"""A throw-away PostgreSQL server for the engine tests, started from Debian's ``postgresql``
binaries: ``initdb`` into a temporary folder, ``pg_ctl start`` on a free loopback port (TCP
only, no Unix socket, so the temporary path's length does not matter), stopped and deleted at
the end. One server per pytest process (the ``pg_server`` fixture in conftest.py is
session-scoped; under pytest-xdist every worker starts its own, on its own port and folder).

Roles: ``qe`` is the superuser that created the cluster; ``reader`` logs in and may only
``SELECT`` what a database's setup grants it. :meth:`PgServer.database` creates a database
from setup SQL (run as ``qe``) and returns its URLs.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

SKIP_NO_BINARIES = ("PostgreSQL server binaries (initdb, pg_ctl) not found on PATH or in "
                    "/usr/lib/postgresql/*/bin (apt-get install -y postgresql)")


def find_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: PATH first, then Debian's versioned
    ``/usr/lib/postgresql/<major>/bin`` (newest major first)."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                            key=lambda p: _major(p), reverse=True):
        bindir = Path(candidate).parent
        if (bindir / "pg_ctl").exists():
            return bindir
    return None


def _major(path: str) -> int:
    part = Path(path).parts[-3]
    return int(part) if part.isdigit() else 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    """One running cluster. Use :meth:`start` (returns a started server) and :meth:`stop`."""

    def __init__(self, bindir: Path, root: Path, prefix: list[str]) -> None:
        self.bindir, self.root, self.prefix = bindir, root, prefix
        self.data = root / "data"
        self.port = 0
        self._made: set[str] = set()

    @classmethod
    def start(cls, bindir: Path) -> PgServer:
        """initdb + pg_ctl start; raises RuntimeError (with the server log) on failure.
        Running as root: the server runs as the ``postgres`` user (initdb refuses root);
        ``LookupError`` when there is none."""
        root = Path(tempfile.mkdtemp(prefix="qe-pg-"))
        prefix: list[str] = []
        if os.geteuid() == 0:
            import pwd

            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                shutil.rmtree(root, ignore_errors=True)
                raise LookupError("running as root and there is no postgres user to run "
                                  "the server as") from None
            os.chown(root, pw.pw_uid, pw.pw_gid)
            prefix = ["runuser", "-u", "postgres", "--"]
        server = cls(bindir, root, prefix)
        try:
            server._run("initdb", "-D", str(server.data), "-A", "trust", "-U", "qe", "-N",
                        "-E", "UTF8", "--locale=C")
            last = ""
            for _ in range(5):  # another process may take the port between probe and bind
                server.port = _free_port()
                opts = (f"-p {server.port} -c listen_addresses=127.0.0.1 "
                        "-c unix_socket_directories='' -c fsync=off "
                        "-c synchronous_commit=off -c full_page_writes=off "
                        "-c max_connections=40 -c shared_buffers=16MB")
                done = subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(server.data),
                                       "-w", "-t", "60", "-l", str(root / "log"), "-o", opts,
                                       "start"], capture_output=True, text=True, timeout=90)
                if done.returncode == 0:
                    break
                last = server.log_tail() or done.stderr
            else:
                raise RuntimeError(f"pg_ctl start failed: {last}")
        except BaseException:
            server.stop()
            raise
        return server

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run([*self.prefix, str(self.bindir / tool), *args],
                              capture_output=True, text=True, timeout=90)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stderr.strip()}")

    def log_tail(self) -> str:
        try:
            return (self.root / "log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def url(self, db: str = "postgres", user: str = "qe") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{db}"

    def database(self, name: str, setup_sql: str) -> dict[str, str]:
        """Create database ``name`` (once per server) and run ``setup_sql`` in it as the
        superuser; the role ``reader`` exists on the cluster (no rights until granted).
        Returns ``{"admin": url, "reader": url, "name": name}``."""
        import psycopg

        if name not in self._made:
            with psycopg.connect(self.url(), autocommit=True) as con:
                if not con.execute("SELECT 1 FROM pg_roles WHERE rolname = 'reader'").fetchone():
                    con.execute("CREATE ROLE reader LOGIN")
                con.execute(f'CREATE DATABASE "{name}"')
            with psycopg.connect(self.url(name), autocommit=True) as con:
                con.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
                con.execute(setup_sql)
            self._made.add(name)
        return {"admin": self.url(name), "reader": self.url(name, "reader"), "name": name}

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            subprocess.run([*self.prefix, str(self.bindir / "pg_ctl"), "-D", str(self.data),
                            "-m", "immediate", "-w", "stop"], capture_output=True, timeout=60)
        for _ in range(20):
            shutil.rmtree(self.root, ignore_errors=True)
            if not self.root.exists():
                break
            time.sleep(0.1)
