"""What the tests of testsuite neighbours share with other test files: ``company`` (moved here from test_testsuite_neighbours.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

SCHEMA = """
CREATE TABLE dept (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                   budget REAL CHECK (budget IS NULL OR budget >= 0));
CREATE TABLE emp (id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
                  salary INTEGER, dept_id INTEGER REFERENCES dept(id),
                  boss INTEGER REFERENCES emp(id), hired DATE NOT NULL);
CREATE TABLE project (code TEXT NOT NULL, dept_id INTEGER NOT NULL REFERENCES dept(id),
                      lead INTEGER REFERENCES emp(id), PRIMARY KEY (code, dept_id));
"""


DATA = """
INSERT INTO dept VALUES (1, 'sales', 10.5), (2, 'research', NULL);
INSERT INTO emp VALUES (1, 'a@x', 'alice', 90, 1, NULL, '2020-01-05'),
  (2, 'b@x', 'bob', 120, 1, 1, '2021-03-01'), (3, 'c@x', 'carol', 150, 2, 1, '2019-07-07');
INSERT INTO project VALUES ('p1', 1, 2), ('p1', 2, NULL), ('p2', 2, 3);
"""


@pytest.fixture
def company(tmp_path) -> Path:
    db = tmp_path / "company.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript(SCHEMA + DATA)
    conn.commit()
    conn.close()
    return db
