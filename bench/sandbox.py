"""Figures for issue 24 (docs/reliability.md, "Sandbox"): each crack's reproduction, now.

1. **Lexing** -- a query of 99,983 ``é`` (under the length cap) through the embedded engine:
   the time the *caller* spends (it only checks the length; the one parse runs in the worker,
   under the deadline) and the whole call, against an anchor measured in the same run: the
   old pname lexer (``_TOKEN_RE``'s pname alternative, kept here verbatim) on 20,000 ``é``
   -- it is quadratic, so 99,983 would take ~25x longer (99.5 s in the issue).
2. **Scoring** -- arity of the issue's n³ ASK (``VALUES`` 500 x 500 x 500): the scorer only
   parses now; the old code evaluated it in the scoring process (24.9 s in the issue).
3. **PostgreSQL** (``--pg``: starts a throw-away server from Debian's binaries via
   tests/helpers/pg_server.py) -- ``SELECT repeat('x', 20000) FROM generate_series(1, 200000)``
   through the engine in a fresh process: its peak RSS before and after, and the outcome
   (the old code: 3,875 MB at timeout_s=5).

    python bench/sandbox.py            # 1 and 2 (a few seconds)
    python bench/sandbox.py --pg       # and 3
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_PN_CHARS_BASE = ("A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff"
                  "\u200c-\u200d\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf"
                  "\ufdf0-\ufffd\U00010000-\U000effff")
_PN_CHARS = _PN_CHARS_BASE + "_\\-0-9\u00b7\u0300-\u036f\u203f-\u2040"
OLD_PNAME = re.compile(rf"(?:[{_PN_CHARS_BASE}_](?:[{_PN_CHARS}.]*[{_PN_CHARS}])?)?:|(?P<other>.)",
                       re.DOTALL)


def old_lexer_seconds(n: int) -> float:
    text = "é" * n
    start = time.perf_counter()
    for _ in OLD_PNAME.finditer(text):
        pass
    return time.perf_counter() - start


def lexing() -> None:
    from queryeval.engines.query import LocalSparqlEngine, QueryExecutionError
    from queryeval.engines.query.sparql_safety import check_length

    query = "SELECT * { ?s ?p " + "é" * (99_983 - 20) + " }"
    start = time.perf_counter()
    check_length(query)
    caller = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "g.ttl").write_text("<http://a> <http://p> 1 .\n", encoding="utf-8")
        with LocalSparqlEngine(Path(tmp) / "g.ttl") as engine:
            engine.start()
            start = time.perf_counter()
            try:
                engine.execute(query, timeout_s=5)
                outcome = "ok"
            except QueryExecutionError as exc:
                outcome = f"{exc.kind}: {exc.reason[:80]}"
            whole = time.perf_counter() - start
    anchor = old_lexer_seconds(20_000)
    print(f"lexing: {len(query):,} chars; caller {caller * 1000:.3f} ms; whole call "
          f"{whole * 1000:.0f} ms ({outcome})")
    print(f"  anchor: old pname lexer on 20,000 chars {anchor:.2f} s "
          f"(x25 for 99,983 chars: ~{anchor * 25:.0f} s); whole call / anchor = "
          f"{whole / anchor:.4f}")


def scoring() -> None:
    from queryeval.metrics.tables.arity import sparql_arity

    values = " ".join(map(str, range(500)))
    ask = (f"ASK {{ OPTIONAL {{ ?s ?p ?o }} VALUES ?a {{{values}}} VALUES ?b {{{values}}} "
           f"VALUES ?c {{{values}}} FILTER(STRLEN(\"SERVICE\") = 7 || ?a + ?b + ?c < 0) }}")
    start = time.perf_counter()
    arity = sparql_arity(ask)
    print(f"scoring: arity of the n^3 ASK = {arity} in {(time.perf_counter() - start) * 1000:.0f}"
          " ms (parse only; the old code evaluated it: 24.9 s in the issue)")


_PEAK = """
import json, resource, sys, time
from queryeval.engines.query.postgres import PostgresEngine
from queryeval.engines.query import QueryExecutionError
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with PostgresEngine(sys.argv[1]) as engine:
    start = time.perf_counter()
    try:
        status = f"ok, {engine.execute(sys.argv[2], timeout_s=5).row_count} rows"
    except QueryExecutionError as exc:
        status = exc.kind + ": " + exc.reason
    seconds = time.perf_counter() - start
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"status": status, "before_mb": before / 1024, "after_mb": after / 1024,
                  "seconds": seconds}))
"""


def postgres() -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from helpers.pg_server import SKIP_NO_BINARIES, PgServer, find_bindir

    bindir = find_bindir()
    if bindir is None:
        print(f"postgres: skipped: {SKIP_NO_BINARIES}")
        return
    server = PgServer.start(bindir)
    try:
        db = server.database("balloon", "SELECT 1;")
        query = "SELECT repeat('x', 20000) FROM generate_series(1, 200000)"
        out = subprocess.run([sys.executable, "-c", _PEAK, db["reader"], query],
                             capture_output=True, text=True, timeout=300, check=True)
        got = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"postgres: {query}\n  peak RSS of the evaluating process {got['before_mb']:.0f} MB"
              f" -> {got['after_mb']:.0f} MB in {got['seconds']:.1f} s; {got['status']}"
              "\n  (the old code: 3,875 MB at timeout_s=5)")
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", action="store_true", help="also the PostgreSQL reproduction")
    args = parser.parse_args()
    lexing()
    scoring()
    if args.pg:
        postgres()


if __name__ == "__main__":
    main()
