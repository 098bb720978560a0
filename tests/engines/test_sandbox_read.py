"""The OS sandbox confines reading (docs/reliability.md, "Sandbox"): with the query checks
off (``base.QUERY_CHECKS = False``: the sandbox alone holds) a hostile query cannot copy a
local file -- ``/etc``, the user's home, the parent's ``/proc`` files, a file beside the
database, the run folder -- into its result, in any worker: the SQL engines' (sqlite, DuckDB),
the neighbour runners' (one worker, many files; a changed allowlist restarts it), the SPARQL
worker, and the PostgreSQL workers (they read no file at all; the server's own reads are
the server's, see the docs). What the engines legitimately read -- the database, lazily
imported modules and libraries, time zones -- still works.

On the old code (Landlock handled writes only) every "cannot read" assertion here fails.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.sandbox import needs_sandbox  # noqa: E402
from queryeval.engines.query import QueryExecutionError, base
from queryeval.engines.query import sandbox as sandbox_module
from queryeval.engines.query.neighbours.runner import NeighbourRunner
from queryeval.engines.query.sql import DuckDBEngine, SqliteEngine

pytestmark = needs_sandbox

SECRET = "queryeval-secret-7f3a"
"""The text of every file a worker must not read (never part of a legitimate row)."""


@pytest.fixture()
def checks_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "QUERY_CHECKS", False)


@pytest.fixture()
def layout(tmp_path: Path) -> dict[str, Path]:
    """A database folder (the database and a secret file and database beside it) and a
    run folder with a secret file, as a run lays them out."""
    db_dir, run_dir = tmp_path / "db", tmp_path / "runs"
    db_dir.mkdir()
    run_dir.mkdir()
    (db_dir / "beside.txt").write_text(f"a\n{SECRET}\n")
    (run_dir / "results.jsonl").write_text(f"a\n{SECRET}\n")
    with sqlite3.connect(db_dir / "t.sqlite") as con:
        con.execute("CREATE TABLE t (a)")
        con.execute("INSERT INTO t VALUES (1)")
    with sqlite3.connect(db_dir / "beside.sqlite") as con:
        con.execute("CREATE TABLE secret (s)")
        con.execute("INSERT INTO secret VALUES (?)", (SECRET,))
    return {"db_dir": db_dir, "run_dir": run_dir, "beside": db_dir / "beside.txt",
            "beside_db": db_dir / "beside.sqlite", "run_file": run_dir / "results.jsonl",
            "sqlite": db_dir / "t.sqlite"}


@pytest.fixture()
def duck(layout: dict[str, Path]) -> Path:
    duckdb = pytest.importorskip("duckdb")
    path = layout["db_dir"] / "t.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t AS SELECT 1 AS a")
    con.close()
    return path


def _outside_files(layout: dict[str, Path]) -> list[str]:
    """Files no worker may read: /etc, the parent's and the worker's own environment, the
    user's home (a file there when one exists), beside the database, the run folder."""
    files = ["/etc/passwd", "/etc/hostname", f"/proc/{os.getpid()}/environ",
             "/proc/self/environ", str(layout["beside"]), str(layout["run_file"])]
    home = Path.home()
    for name in (".bashrc", ".profile", ".gitconfig"):
        if (home / name).is_file():
            files.append(str(home / name))
            break
    return [f for f in files if os.path.exists(f)]


def _leaks(run, query: str) -> str | None:
    """The query's rows as text when it ran, None when the worker refused or failed it."""
    try:
        result = run(query)
    except QueryExecutionError:
        return None
    return json.dumps([list(map(str, r)) for r in result.rows])


# ------------------------------------------------------------------ DuckDB, the sandbox alone

_DUCK_READS = ("SELECT * FROM read_text('{f}')", "SELECT * FROM read_blob('{f}')",
               "SELECT * FROM read_csv('{f}', header=false, columns={{'c': 'VARCHAR'}}, "
               "delim='\x01', quote='', escape='')")


def test_duckdb_engine_reads_nothing_but_its_database(duck, layout, checks_off) -> None:
    with DuckDBEngine(duck) as engine:
        assert engine.execute("SELECT a FROM t").rows == [(1,)]
        assert "reads only" in engine.sandbox["filesystem"]
        run = lambda q: engine.execute(q, timeout_s=20)  # noqa: E731
        for f in _outside_files(layout):
            for q in _DUCK_READS:
                assert _leaks(run, q.format(f=f)) is None, (q, f)
        for folder in ("/etc", str(Path.home()), str(layout["db_dir"]), str(layout["run_dir"])):
            got = _leaks(run, f"SELECT * FROM glob('{folder}/*')")
            assert got in (None, "[]"), (folder, got)
        assert _leaks(run, f"ATTACH '{layout['beside_db']}' AS x (TYPE sqlite, READ_ONLY)") \
            is None
        # what it legitimately does still works: its rows, time zones (ICU), spilling
        assert engine.execute("SELECT a FROM t").rows == [(1,)]
        got = engine.execute("SELECT (TIMESTAMPTZ '2024-07-01 12:00:00+00' "
                             "AT TIME ZONE 'Europe/Paris')::VARCHAR").rows
        assert got == [("2024-07-01 14:00:00",)]
        assert engine.execute("SELECT count(*) FROM (SELECT * FROM range(300000) "
                              "ORDER BY random())").rows == [(300000,)]


def test_sqlite_engine_cannot_attach_a_file_beside_its_database(layout, checks_off) -> None:
    with SqliteEngine(layout["sqlite"]) as engine:
        run = lambda q: engine.execute(q, timeout_s=10)  # noqa: E731
        assert _leaks(run, f"ATTACH '{layout['beside_db']}' AS x") is None
        for f in _outside_files(layout):  # sqlite would read it as a (bad) database
            assert _leaks(run, f"ATTACH '{f}' AS y") is None, f
        assert engine.execute("SELECT a FROM t").rows == [(1,)]


# ------------------------------------------------------------- the neighbour runner (many files)

def test_neighbour_runner_reads_only_the_roots_it_was_started_with(tmp_path, layout,
                                                                    checks_off) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, value in ((first, 1), (second, 2)):
        folder.mkdir()
        with sqlite3.connect(folder / "n.sqlite") as con:
            con.execute("CREATE TABLE t (a)")
            con.execute("INSERT INTO t VALUES (?)", (value,))
    with NeighbourRunner("sqlite", [first]) as runner:
        assert runner.run(first / "n.sqlite", "SELECT a FROM t", 10, 10)[1] == [(1,)]
        attach_second = f"ATTACH '{second / 'n.sqlite'}' AS o"
        with pytest.raises(QueryExecutionError):
            runner.run(first / "n.sqlite", attach_second, 10, 10)
        with pytest.raises(QueryExecutionError):
            runner.run(first / "n.sqlite", f"ATTACH '{layout['beside_db']}' AS o", 10, 10)
        starts = runner.worker.starts
        runner.allow([second])  # a new allowlist: the worker restarts with it
        assert runner.run(second / "n.sqlite", "SELECT a FROM t", 10, 10)[1] == [(2,)]
        assert runner.worker.starts == starts + 1
        with pytest.raises(QueryExecutionError):  # the old root is closed now
            runner.run(second / "n.sqlite", f"ATTACH '{first / 'n.sqlite'}' AS o", 10, 10)


def test_duckdb_neighbour_runner_cannot_read_beside_or_the_run_folder(duck, layout,
                                                                       checks_off) -> None:
    with NeighbourRunner("duckdb", [duck]) as runner:
        for f in _outside_files(layout):
            for q in _DUCK_READS:
                with pytest.raises(QueryExecutionError):
                    runner.run(duck, q.format(f=f), 20, 10)
        assert runner.run(duck, "SELECT a FROM t", 20, 10)[1] == [(1,)]


# ------------------------------------------------------------------------------- SPARQL

def test_sparql_worker_reads_only_its_store(tmp_path, layout, checks_off) -> None:
    from queryeval.engines.query.sparql_local import LocalSparqlEngine

    nt = tmp_path / "g.nt"
    nt.write_text('<http://x/a> <http://x/p> "v" .\n')
    with LocalSparqlEngine(nt) as engine:
        assert engine.execute("SELECT ?o WHERE { ?s ?p ?o }").rows == [({"type": "literal", "value": "v"},)]
        assert "reads only" in engine.sandbox["filesystem"]
        run = lambda q: engine.execute(q, timeout_s=10)  # noqa: E731
        for f in _outside_files(layout):
            for q in (f"LOAD <file://{f}>",
                      f"SELECT * WHERE {{ SERVICE <file://{f}> {{ ?s ?p ?o }} }}",
                      f"SELECT * FROM <file://{f}> WHERE {{ ?s ?p ?o }}"):
                got = _leaks(run, q)
                assert got is None or SECRET not in got and "root:" not in got, (q, got)
        assert engine.execute("SELECT ?o WHERE { ?s ?p ?o }").rows == [({"type": "literal", "value": "v"},)]


# ----------------------------------------------------------- the layer, probed in a process

_PROBE = """
import json, os, sys
from queryeval.engines.query import sandbox
out = {"report": sandbox.apply(sys.argv[1], 1024 * 1024**2, readable=[sys.argv[2]])}
for name in sys.argv[3:]:
    try:
        with open(name, "rb") as f:
            f.read(1)
        out[name] = "read"
    except OSError as exc:
        out[name] = exc.errno
try:
    os.listdir("/etc")
    out["list /etc"] = "listed"
except OSError as exc:
    out["list /etc"] = exc.errno
import sqlite3, zoneinfo, decimal  # lazy imports after the sandbox
out["tz"] = str(zoneinfo.ZoneInfo("Europe/Paris"))
out["sqlite"] = sqlite3.connect(":memory:").execute("SELECT 1").fetchone()[0]
for mod in ("duckdb", "pyoxigraph", "numpy", "psycopg"):
    try:
        __import__(mod)
        out[mod] = "imported"
    except ImportError as exc:
        out[mod] = "missing" if exc.name == mod else f"{type(exc).__name__}: {exc}"
    except Exception as exc:
        out[mod] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


def test_a_sandboxed_process_reads_only_what_it_was_given(tmp_path, layout) -> None:
    writable = tmp_path / "w"
    writable.mkdir()
    own = layout["sqlite"]
    targets = [str(own), *_outside_files(layout), str(layout["beside_db"])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(base.__file__).parents[3]), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", _PROBE, str(writable), str(own), *targets],
                         capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.splitlines()[-1])
    assert sandbox_module.unavailable_layers(got["report"]) == []
    assert got[str(own)] == "read"
    for f in targets[1:]:
        assert got[f] == 13, (f, got[f])  # EACCES from Landlock
    assert got["list /etc"] == 13
    assert got["tz"] == "Europe/Paris" and got["sqlite"] == 1
    for mod in ("duckdb", "pyoxigraph", "numpy", "psycopg"):
        assert got[mod] in ("imported", "missing"), (mod, got[mod])


def test_readable_roots_hold_python_and_the_given_files_only(tmp_path) -> None:
    own = tmp_path / "db.sqlite"
    own.write_bytes(b"")
    roots = sandbox_module.readable_roots([str(own)])
    assert str(own.resolve()) in roots
    assert os.path.realpath(sys.prefix) in roots
    home = os.path.realpath(Path.home())
    for forbidden in ("/", "/etc", "/proc", "/home", home, str(tmp_path.resolve())):
        assert forbidden not in roots, forbidden


# ----------------------------------------------------------------------------- PostgreSQL

def test_postgres_workers_close_reading_after_connecting(pg_server) -> None:
    """The engine's worker and the neighbour worker read no data file: after the connection
    is made the sandbox closes reading (the server's own reads are the server's)."""
    from queryeval.engines.query.neighbours.pg import ORIGINAL, PgRunner
    from queryeval.engines.query.postgres import PostgresEngine

    db = pg_server.database("sandbox_read", "CREATE TABLE t AS SELECT 1 AS a; "
                            "GRANT SELECT ON t TO reader;")
    with PostgresEngine(db["reader"]) as engine:
        assert engine.execute("SELECT a FROM t").rows == [(1,)]
        assert "reads only" in engine.sandbox["filesystem"]
    with PgRunner(db["reader"]) as runner:
        assert runner.run(ORIGINAL, "SELECT a FROM t", 10, 10)[1] == [(1,)]
        assert "reads only" in runner.sandbox["filesystem"]


def test_the_folder_the_user_ran_from_stays_closed(tmp_path, monkeypatch) -> None:
    """``python -m`` puts the current folder first on ``sys.path`` (and a PYTHONPATH may hold
    a folder above it): neither opens the user's folder, its run folders or its data to a
    worker; queryeval's own package folder stays readable for late imports."""
    project = tmp_path / "project"
    (project / "runs").mkdir(parents=True)
    monkeypatch.chdir(project)
    monkeypatch.setattr(sys, "path", ["", str(project), str(tmp_path), *sys.path])
    roots = sandbox_module.readable_roots()
    for closed in (str(project.resolve()), str(tmp_path.resolve())):
        assert closed not in roots, closed
    assert not any(str(project.resolve()).startswith(r.rstrip(os.sep) + os.sep) for r in roots
                   if r != "/"), roots
    package = os.path.dirname(os.path.abspath(sandbox_module.__file__))
    assert any(package.startswith(r.rstrip(os.sep) + os.sep) for r in roots), roots
