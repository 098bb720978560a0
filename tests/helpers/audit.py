"""What the tests of audit share with other test files: ``_sql_example``, ``wide_table_suite`` (moved here from test_audit.py)."""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


SQL_EXAMPLE = ROOT / "examples" / "sql"


def _sql_example(tmp_path: Path) -> Path:
    """The SQL example copied to tmp_path with its database built there."""
    for name in ("suite.yaml", "predictions.jsonl"):
        shutil.copy(SQL_EXAMPLE / name, tmp_path / name)
    sys.path.insert(0, str(SQL_EXAMPLE))
    try:
        from build_db import build
    finally:
        sys.path.remove(str(SQL_EXAMPLE))
    build(tmp_path / "shop.sqlite")
    return tmp_path / "suite.yaml"


def wide_table_suite(tmp_path: Path) -> tuple[Path, Path]:
    """A 300-row table of six 3-valued columns (seeded) and a one-case suite whose gold
    selects every column: a column mapping the search cannot settle exactly."""
    import random

    rng = random.Random(7)
    db = tmp_path / "w.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE w(a, b, c, d, e, f)")
    con.executemany("INSERT INTO w VALUES (?, ?, ?, ?, ?, ?)",
                    [tuple(rng.randrange(3) for _ in range(6)) for _ in range(300)])
    con.commit()
    con.close()
    suite = tmp_path / "s.yaml"
    suite.write_text("id: wide\nconversation:\n- role: user\n  content: q\n  target:\n"
                     "    query:\n      gold: SELECT a, b, c, d, e, f FROM w\n", encoding="utf-8")
    return db, suite
