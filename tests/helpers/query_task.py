"""What the tests of query task share with other test files: ``make_shop_db``, ``run_records`` (moved here from test_query_task.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path


def run_records(out: Path) -> tuple[dict, dict]:
    (batch,) = out.rglob("batch_*.json")
    bid = batch.stem.removeprefix("batch_")
    metrics = json.loads((batch.parent / f"metrics_{bid}.json").read_text())
    records = {r["case_id"]: r for r in map(json.loads, (batch.parent / f"results_{bid}.jsonl").read_text().splitlines())}
    return metrics, records


def make_shop_db(db: Path) -> Path:
    """A SQLite shop: items(name, price) = carrot 0.5, onion 0.4, saffron 9.0."""
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE items(name TEXT, price REAL); INSERT INTO items VALUES "
                      "('carrot', 0.5), ('onion', 0.4), ('saffron', 9.0);")
    con.commit()
    con.close()
    return db
