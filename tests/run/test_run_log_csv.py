"""The run log's results CSV: each row's cells are ``row.get(column)`` in column order (a
column the row lacks is empty), whatever kind of mapping the row is, and formula-like text
gets its leading quote; written row by row or from an iterable, the same file."""

from __future__ import annotations

import csv
import io
from collections import defaultdict

from queryeval.io.safetext import csv_row
from queryeval.run.log import RunLog

COLUMNS = ["id", "score", "text", "flag"]


class Odd(dict):
    def __missing__(self, key):  # [] would invent a value; get() does not
        return "invented"


def _expected(rows) -> str:
    out = io.StringIO(newline="")
    w = csv.writer(out)
    w.writerow(COLUMNS)
    for row in rows:
        w.writerow(csv_row([row.get(c) for c in COLUMNS]))
    return out.getvalue()


def test_cells_are_the_rows_gets(tmp_path):
    rows = [{"id": "a", "score": 0.5, "text": "=1+1", "flag": True},
            {"id": "b", "score": 1},  # lacks two columns
            {"score": 2, "id": "c", "flag": False, "text": "x", "extra": "ignored"},
            defaultdict(lambda: "invented", {"id": "d"}),
            Odd({"id": "e", "score": None})]
    log = RunLog.create(tmp_path, {"task": "t"}, dated=False)
    log.write_csv(COLUMNS, iter(rows))
    text = log.paths.results_csv.read_bytes().decode("utf-8")
    assert text == _expected(rows)
    assert "invented" not in text and "'=1+1" in text
    with log.csv_writer(COLUMNS) as add:
        for row in rows:
            add(row)
    assert log.paths.results_csv.read_bytes().decode("utf-8") == text
