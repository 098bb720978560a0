"""Adversarial review of the issue-24 sandbox (what a worker running hostile native code --
an engine bug, an extension -- could still do), each found hole failing first on the old code.

Every probe runs in a real sandboxed process (:func:`.sandbox.apply`) and only touches
``tmp_path``; listeners are loopback only; every loop is bounded.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.sandbox import Listener, needs_sandbox  # noqa: E402, F401
from queryeval.engines.query import QueryRefused, RemoteSparqlEngine, base  # noqa: E402
from queryeval.engines.query import sandbox as sandbox_module
from queryeval.engines.query.base import term_text  # noqa: E402

_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(base.__file__).parents[3]), os.environ.get("PYTHONPATH", "")])}


def _sandboxed(tmp_path: Path, body: str, *args: str) -> dict:
    """Run ``body`` (Python; ``out`` is the dict it fills, ``argv`` its arguments) in a fresh
    process after :func:`.sandbox.apply` with ``tmp_path / "w"`` as the writable folder."""
    writable = tmp_path / "w"
    writable.mkdir(exist_ok=True)
    script = ("import json, os, sys\nfrom queryeval.engines.query import sandbox\n"
              "out = {'report': sandbox.apply(sys.argv[1], 512 * 1024**2)}\n"
              "argv = sys.argv[2:]\n" + body + "\nprint(json.dumps(out))\n")
    run = subprocess.run([sys.executable, "-c", script, str(writable), *args],
                         capture_output=True, text=True, timeout=60, env=_ENV)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.splitlines()[-1])
    assert sandbox_module.unavailable_layers(out["report"]) == []
    return out


_METADATA = """
target = argv[0]
for name, call in (("chmod", lambda: os.chmod(target, 0o777)),
                   ("fchmod", lambda: os.fchmod(os.open(target, os.O_RDONLY), 0o777)),
                   ("utime", lambda: os.utime(target, (0, 0))),
                   ("chown", lambda: os.chown(target, os.getuid(), os.getgid())),
                   ("setxattr", lambda: os.setxattr(target, "user.queryeval", b"1"))):
    try:
        call()
        out[name] = "changed"
    except OSError as exc:
        out[name] = exc.errno
"""


@needs_sandbox
def test_a_sandboxed_process_cannot_change_file_metadata_outside(tmp_path: Path) -> None:
    """Landlock governs writing, creating, renaming, removing and truncating, not a file's
    mode, owner, times or extended attributes: before the fix a sandboxed worker could
    ``chmod 777`` (or back-date, or tag) any file of the user's it could name."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    victim.chmod(0o600)
    os.utime(victim, (1_000_000_000, 1_000_000_000))
    before = victim.stat()
    got = _sandboxed(tmp_path, _METADATA, str(victim))
    after = victim.stat()
    assert {k: got[k] for k in ("chmod", "fchmod", "utime", "chown")} == {
        "chmod": 13, "fchmod": 13, "utime": 13, "chown": 13}
    assert got["setxattr"] in (13, 95)  # EACCES, or EOPNOTSUPP where the fs has no xattrs
    assert stat.S_IMODE(after.st_mode) == 0o600
    assert (after.st_mtime, after.st_atime) == (before.st_mtime, before.st_atime)
    assert after.st_ctime == before.st_ctime  # nothing about the inode changed


_PROCESSES = """
import threading
try:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    out["fork"] = "forked"
except OSError as exc:
    out["fork"] = exc.errno
seen = []
t = threading.Thread(target=lambda: seen.append(1))
t.start()
t.join(10)
out["thread"] = seen == [1]
"""


@needs_sandbox
def test_a_sandboxed_process_cannot_start_a_process_but_can_start_threads(tmp_path) -> None:
    """A child process (``fork``; then ``setsid``) outlives the SIGKILL that holds the
    worker's deadline, keeps its CPU and memory, and keeps running whatever it was given:
    before the fix a sandboxed worker could fork. Threads (clone with CLONE_THREAD) stay
    allowed: DuckDB, RocksDB and the watchdogs need them."""
    got = _sandboxed(tmp_path, _PROCESSES)
    assert got["fork"] == 13
    assert got["thread"] is True


_HOSTILE_WORKER = '''
import os, pickle, struct, sys

class Evil:
    def __reduce__(self):
        return (exec, ("open(%r, 'w').write('code ran in the parent')",))

def frame(payload):
    os.write(1, struct.pack("!Q", len(payload)) + payload)

frame(pickle.dumps(("ready", {"sandbox": {}})))
sys.stdin.buffer.read(8)  # the request's header is enough
frame(pickle.dumps(("ok", {"rows": [Evil()]})))
sys.stdin.buffer.read()
'''


def test_a_worker_cannot_run_code_in_the_parent_through_its_replies(tmp_path, monkeypatch):
    """The parent unpickled whatever its worker sent: a worker running hostile native code (the
    case the sandbox exists for) could put a ``__reduce__`` in a reply and run any code in
    the unsandboxed evaluating process. Replies are now read with an allowlist of the value
    types engines return; anything else fails the query and runs nothing."""
    from queryeval.engines.query.base import QueryFailed
    from queryeval.engines.worker import WorkerProcess

    marker = tmp_path / "pwned.txt"
    (tmp_path / "hostile_worker_mod.py").write_text(_HOSTILE_WORKER % str(marker))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    worker = WorkerProcess("hostile_worker_mod", [])
    try:
        worker.start()
        with pytest.raises(QueryFailed):
            worker.request({"query": "x"}, 30)
    finally:
        worker.kill()
    assert not marker.exists()


def test_replies_keep_every_value_type_the_engines_return() -> None:
    """The allowlist reads back what sqlite, DuckDB, PostgreSQL and SPARQL rows hold
    (cross-checked against plain pickle on the same values)."""
    import datetime as dt
    import decimal
    import io
    import ipaddress
    import pickle
    import uuid
    import zoneinfo

    from queryeval.engines.worker import read_frame, write_frame

    values = (1, 2**100, 1.5, float("inf"), "t", b"\x00\x01", bytearray(b"x"), None, True,
              decimal.Decimal("1.50"), dt.date(2020, 1, 2), dt.time(1, 2, 3),
              dt.datetime(2020, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=2))),
              dt.datetime(2020, 1, 2, 3, tzinfo=zoneinfo.ZoneInfo("UTC")),
              dt.timedelta(days=3), uuid.UUID(int=7), [1, [2]], {"a": {"b": 1}}, {1, 2},
              frozenset({3}), ipaddress.ip_address("127.0.0.1"),
              ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_interface("::1/128"),
              {"type": "literal", "value": "x", "datatype": "http://x"})
    buf = io.BytesIO()
    write_frame(buf, ("ok", {"rows": [values]}))
    buf.seek(0)
    got = read_frame(buf)
    assert got == ("ok", {"rows": [values]})
    assert got == pickle.loads(pickle.dumps(("ok", {"rows": [values]})))


_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}


def test_duckdb_spills_at_most_the_memory_cap_to_disk(tmp_path: Path) -> None:
    """DuckDB spills to its temp_directory (the worker's own folder, the one place the
    sandbox lets it write) up to ``max_temp_directory_size``, by default 90% of the free
    disk: one GROUP BY over generated rows could fill the disk for as long as its deadline
    ran (RLIMIT_FSIZE caps each file, not their number). The spill is now capped at the
    worker's memory cap."""
    import duckdb

    from queryeval.engines.query import DuckDBEngine

    db = tmp_path / "t.duckdb"
    duckdb.connect(str(db)).execute("CREATE TABLE t (a INTEGER)").close()
    cap = 256 * 1024**2
    with DuckDBEngine(db, memory_limit_bytes=cap) as engine:
        got = engine.execute("SELECT current_setting('max_temp_directory_size') AS s").rows
    spelled = re.fullmatch(r"([0-9.]+) ([KMGT]?i?B)", got[0][0])
    assert spelled is not None, got  # was "90% of available disk space"
    assert 0 < float(spelled[1]) * _UNITS[spelled[2]] <= cap


_EARLY_THREAD = """
import threading
go, done = threading.Event(), threading.Event()
def early():
    go.wait(30)
    try:
        with open(argv[0], "w") as f:
            f.write("written by a thread started before the sandbox")
        out["early_thread"] = "written"
    except OSError as exc:
        out["early_thread"] = exc.errno
    done.set()
threading.Thread(target=early, daemon=True).start()
"""

_EARLY_THREAD_AFTER = """
go.set()
done.wait(30)
"""


@needs_sandbox
def test_a_thread_started_before_the_sandbox_is_not_reported_as_confined(tmp_path) -> None:
    """Landlock confines the calling thread and the threads it starts later, never one that
    was already running. Before the fix :func:`.sandbox.apply` reported the file layer as
    held while such a thread could still write anywhere; now it counts the process's
    threads and reports the layer unavailable (the engines' workers apply it while they
    have one thread: checked for sqlite, DuckDB, SPARQL and PostgreSQL after connecting)."""
    writable, escape = tmp_path / "w", tmp_path / "escape.txt"
    writable.mkdir()
    script = ("import json, os, sys\nargv = sys.argv[2:]\nout = {}\n" + _EARLY_THREAD
              + "from queryeval.engines.query import sandbox\n"
              "out['report'] = sandbox.apply(sys.argv[1], 512 * 1024**2)\n"
              + _EARLY_THREAD_AFTER + "print(json.dumps(out))\n")
    run = subprocess.run([sys.executable, "-c", script, str(writable), str(escape)],
                         capture_output=True, text=True, timeout=60, env=_ENV, check=True)
    got = json.loads(run.stdout)
    if got["early_thread"] == "written":  # the layer cannot hold for that thread ...
        assert "filesystem" in sandbox_module.unavailable_layers(got["report"])  # ... say so
        assert "thread" in got["report"]["filesystem"]
    else:  # a kernel that confines every thread (Landlock TSYNC)
        assert got["early_thread"] == 13


@needs_sandbox
def test_every_sql_worker_is_sandboxed_while_single_threaded(tmp_path, pg_server) -> None:
    """The workers apply Landlock before any thread starts (else the check above would name
    the layer unavailable): sqlite, DuckDB, and PostgreSQL after its connection."""
    import sqlite3

    import duckdb

    from queryeval.engines.query import DuckDBEngine, SqliteEngine
    from queryeval.engines.query.postgres import PostgresEngine

    sqlite3.connect(tmp_path / "t.sqlite").execute("CREATE TABLE t (a)").connection.commit()
    duckdb.connect(str(tmp_path / "t.duckdb")).execute("CREATE TABLE t (a INTEGER)").close()
    db = pg_server.database("redteam_threads", "CREATE TABLE t (a int);")
    for engine in (SqliteEngine(tmp_path / "t.sqlite"), DuckDBEngine(tmp_path / "t.duckdb"),
                   PostgresEngine(db["reader"])):
        with engine:
            engine.start()
            assert sandbox_module.unavailable_layers(engine.sandbox) == [], engine.sandbox


_UNCOUNTED_MEMORY = """
import ctypes, mmap
libc = ctypes.CDLL(None, use_errno=True)
try:  # MAP_SHARED | MAP_ANONYMOUS: shared memory, which RLIMIT_DATA does not count
    m = mmap.mmap(-1, 1024**3)
    for i in range(0, 1024**3, 4096 * 64):
        m[i] = 1
    out["shared_mapping"] = "1 GiB touched"
    m.close()
except OSError as exc:
    out["shared_mapping"] = exc.errno
libc.shmget.restype = ctypes.c_int
shm = libc.shmget(0, 1024**2, 0o1000 | 0o600)  # IPC_PRIVATE, IPC_CREAT: outlives the process
out["shmget"] = "created" if shm >= 0 else ctypes.get_errno()
if shm >= 0:
    libc.shmctl(shm, 0, None)  # IPC_RMID: leave nothing behind on the old code
try:
    os.close(os.memfd_create("queryeval"))
    out["memfd"] = "created"
except OSError as exc:
    out["memfd"] = exc.errno
"""


@needs_sandbox
def test_a_sandboxed_process_cannot_take_memory_rlimit_data_does_not_count(tmp_path) -> None:
    """RLIMIT_DATA counts private writable mappings only. Before the fix a sandboxed process
    capped at 512 MiB mapped and touched 1 GiB of MAP_SHARED anonymous memory, made memfd
    files (mappable without limit), and created SysV shared memory, which outlives the
    process -- the deadline's kill does not free it. All three now fail."""
    got = _sandboxed(tmp_path, _UNCOUNTED_MEMORY)
    assert (got["shared_mapping"], got["shmget"], got["memfd"]) == (13, 13, 13)


def test_postgres_values_of_other_types_arrive_as_their_text(pg_server) -> None:
    """Regression guard for the allowlist unpickler: psycopg returns ranges and multiranges as
    its own classes, which a reply may not name. The worker sends such values as their text
    -- what the parent's conversions (``str(value)``) made of them before -- instead of
    failing the query."""
    from psycopg.types.multirange import Multirange
    from psycopg.types.range import Range

    from queryeval.engines.query.postgres import PostgresEngine

    db = pg_server.database("redteam_types", "CREATE TABLE t (a int);")
    with PostgresEngine(db["reader"]) as engine:
        result = engine.execute("SELECT int4range(1, 5) AS r, '{[1,2], [4,6)}'::int4multirange"
                                " AS m, ARRAY[int4range(2, 3)] AS a, '1.2.3.4'::inet AS i")
    # the text is psycopg's own str() of the value it decodes (what the parent made of it)
    r15, r23 = str(Range(1, 5, "[)")), str(Range(2, 3, "[)"))
    multi = str(Multirange([Range(1, 3, "[)"), Range(4, 6, "[)")]))
    assert result.to_table_json()["rows"] == [[r15, multi, str([r23]), "1.2.3.4"]]
    assert result.rows[0][0] == r15
    assert result.to_sparql_json()["results"]["bindings"][0]["r"] == {"type": "literal",
                                                                      "value": r15}


def test_wire_values_keep_row_types_and_turn_the_rest_into_text() -> None:
    import datetime as dt
    import decimal

    from queryeval.engines.query.sql_worker import wire_value

    class Berlin(dt.tzinfo):  # a time zone class a reply may not name
        def utcoffset(self, when):
            return dt.timedelta(hours=1)

        def tzname(self, when):
            return "CET"

        def dst(self, when):
            return dt.timedelta(0)

    class Opaque:
        def __str__(self) -> str:
            return "opaque!"

    fixed = dt.datetime(2020, 1, 2, 3, tzinfo=dt.timezone.utc)
    odd = dt.datetime(2020, 1, 2, 3, tzinfo=Berlin())
    kept = [1, 2.5, "s", b"b", None, True, decimal.Decimal("1.5"), fixed, dt.date(2020, 1, 2),
            dt.timedelta(1), [1, {"k": (2, 3)}]]
    assert [wire_value(v) for v in kept] == kept
    assert wire_value(odd) == "2020-01-02 03:00:00+01:00"
    assert wire_value([Opaque(), {"k": Opaque()}]) == ["opaque!", {"k": "opaque!"}]
    assert wire_value(memoryview(b"xy")) == b"xy"


# The SPARQL grammar (and rdflib) expands \uXXXX escapes in the whole text before parsing;
# oxigraph -- and other endpoints -- do not outside strings and IRIs. An escaped newline in
# a comment ends the comment for the grammar only, so text can be code for one parser and a
# comment or a string for the other.
_HIDDEN_SERVICE = ('SELECT * {{ ?s ?p ?o # \\u000a FILTER(?o != """\n'
                   'SERVICE <{url}> {{ ?a ?b ?c }}\n'
                   '# """)\n}}')
_HIDDEN_FROM = ('SELECT * # \\u000a {{ FILTER("""\n'
                'FROM <{url}>\n'
                '# """ != 1)\n'
                '{{ ?s ?p ?o }}\n'
                '# \\u000a }}\n')


_HIDDEN_BY_CR = 'SELECT * {{ ?s ?p ?o # \r SERVICE <{url}> {{ ?a ?b ?c }}\n}}'
"""rdflib ends a comment at a line feed only, oxigraph at a carriage return as well (the
grammar's EOL): a SERVICE after a bare CR in a comment is code for oxigraph only."""


def test_a_bare_carriage_return_in_a_comment_hides_service_from_the_grammar() -> None:
    """Before the fix the text passed the parse (no SERVICE) and oxigraph sent the request
    (reproduced against a loopback listener; in the worker the sandbox refused the socket,
    a remote endpoint would have run it). A CR not followed by LF is now refused."""
    from queryeval.engines.query import sparql_safety

    text = _HIDDEN_BY_CR.format(url="http://127.0.0.1:9/sparql")
    with pytest.raises(QueryRefused, match="carriage return"):
        sparql_safety.check_sparql(text)
    # a CRLF comment is read alike by both parsers and still runs
    assert sparql_safety.check_sparql("SELECT ?s # c\r\n{ ?s ?p ?o }").arity == 1


def test_escaped_syntax_hides_service_and_from_from_the_grammar(tmp_path) -> None:
    """Before the fix both texts passed the one parse (form SELECT, no SERVICE, no dataset
    clause) while oxigraph ran the SERVICE (a request reached a loopback listener, outside
    the sandbox) and read FROM <g> (the rows of a named graph outside ``allowed_graphs``);
    the remote engine forwarded both texts. A \\u escape of an ASCII character that is not a
    letter or digit -- the only ones that can move a token boundary -- is now refused."""
    import pyoxigraph as ox

    from queryeval.engines.query import sparql_safety

    secret = "http://secret.example/g"
    store = ox.Store()
    store.add(ox.Quad(ox.NamedNode("http://e/s"), ox.NamedNode("http://e/p"),
                      ox.Literal("secret"), ox.NamedNode(secret)))
    hidden_from = _HIDDEN_FROM.format(url=secret)
    assert [s["o"].value for s in store.query(hidden_from)] == ["secret"]  # oxigraph: FROM
    for text in (_HIDDEN_SERVICE.format(url="http://127.0.0.1:9/sparql"), hidden_from):
        with pytest.raises(QueryRefused, match="escape"):
            sparql_safety.check_sparql(text)


def test_the_engines_refuse_escape_hidden_service_and_send_nothing(graph, listener) -> None:
    endpoint = Listener()
    texts = (_HIDDEN_SERVICE.format(url=listener.url),
             _HIDDEN_FROM.format(url=listener.url), _HIDDEN_BY_CR.format(url=listener.url))
    try:
        with RemoteSparqlEngine(endpoint.url) as remote:
            for text in texts:
                with pytest.raises(QueryRefused):
                    remote.execute(text, timeout_s=10)
        for text in texts:
            with pytest.raises(QueryRefused):
                graph.execute(text, timeout_s=10)
        assert endpoint.hits == [] and listener.hits == []
    finally:
        endpoint.close()


@pytest.mark.parametrize("text, rows", [
    ('SELECT ("caf\\u00e9" AS ?x) {}', "café"),
    ('SELECT ("\\u0041\\U00000042" AS ?x) {}', "AB"),
    ('SELECT (STR(<http://a/\\u00e9>) AS ?x) {}', "http://a/é"),
])
def test_escapes_of_letters_and_non_ascii_still_run(graph, text, rows) -> None:
    assert [[term_text(c) for c in r] for r in graph.execute(text, timeout_s=10).rows] == [[rows]]
