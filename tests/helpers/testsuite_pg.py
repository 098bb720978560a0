"""What the tests of testsuite pg share with other test files: ``EXAMPLE``, ``GRANTS``, ``fingerprint``, ``records``, ``suite_for``, ``temp_tables`` (moved here from test_testsuite_pg.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import queryeval as qe  # noqa: E402

psycopg = pytest.importorskip("psycopg",
                              reason="psycopg not installed (pip install 'queryeval[postgres]')")


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "testsuite"


GRANTS = "GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader;"


def suite_for(url: str, folder: Path) -> Path:
    text = (EXAMPLE / "suite.yaml").read_text(encoding="utf-8")
    path = folder / "suite.yaml"
    path.write_text(text.replace("source: emp.sqlite", f"source: {url}"), encoding="utf-8")
    return path


def records(run: qe.Run) -> dict[str, dict]:
    path = run.folder / f"results_{run.batch_id}.jsonl"
    return {r["case_id"]: r for r in map(json.loads, path.read_text().splitlines())}


def fingerprint(admin_url: str) -> dict[str, tuple]:
    """Row count and an md5 over the sorted rows of every real table (as the superuser)."""
    with psycopg.connect(admin_url, autocommit=True) as con:
        tables = [r[0] for r in con.execute(
            "SELECT format('%I.%I', schemaname, tablename) FROM pg_tables WHERE schemaname "
            "NOT IN ('pg_catalog', 'information_schema') ORDER BY 1").fetchall()]
        return {t: con.execute(f"SELECT count(*), md5(coalesce(string_agg(x::text, '|' "
                               f"ORDER BY x::text), '')) FROM {t} x").fetchone()
                for t in tables}


def temp_tables(admin_url: str, wait_s: float = 30.0) -> list[str]:
    """Temporary tables of any session on the server, once the sessions that closed have
    ended (a client's close returns before the server has finished the session)."""
    with psycopg.connect(admin_url, autocommit=True) as con:
        for _ in range(int(wait_s * 10)):
            found = [r[0] for r in con.execute(
                "SELECT relname FROM pg_class WHERE relpersistence = 't'").fetchall()]
            if not found:
                return []
            time.sleep(0.1)
        return found


def temp_storage(admin_url: str, names: tuple[str, ...] = ("emp", "dept")) -> dict[str, tuple[int, int]]:
    """Each temporary table of ``names`` on the server: (its oid, its storage's relfilenode)
    -- the same oid is the same table, a new relfilenode fresh storage (a TRUNCATE)."""
    with psycopg.connect(admin_url, autocommit=True) as con:
        return {r[0]: (r[1], r[2]) for r in con.execute(
            "SELECT relname, oid, relfilenode FROM pg_class WHERE relpersistence = 't' "
            "AND relkind = 'r' AND relname = ANY(%s)", (list(names),)).fetchall()}
