"""The issue-39 scenario: a 4-table library schema (authors, books, members, loans) with
the constraints people declare (primary keys, a UNIQUE email, NOT NULL, CHECK, foreign
keys), a little data, and golds as a new user writes them. ``SOUND`` golds ask a fully
constrained question (no near-miss mutant of them is equivalent on every database the
schema allows, unless provably so); ``LOOSE`` golds carry a redundant clause that no
database can expose, so ``queryeval audit --test-suite`` must keep flagging them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE authors (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT);
CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL,
  author_id INTEGER NOT NULL REFERENCES authors(id), genre TEXT,
  year INTEGER CHECK (year > 1400));
CREATE TABLE members (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT UNIQUE,
  city TEXT);
CREATE TABLE loans (id INTEGER PRIMARY KEY, book_id INTEGER NOT NULL REFERENCES books(id),
  member_id INTEGER NOT NULL REFERENCES members(id), loaned TEXT NOT NULL, returned TEXT);
"""

DATA = """
INSERT INTO authors VALUES (1, 'Austen', 'UK'), (2, 'Borges', 'AR'), (3, 'Calvino', 'IT'),
  (4, 'Dickinson', 'US'), (5, 'Eco', 'IT'), (6, 'Fo', NULL);
INSERT INTO books VALUES (1, 'Emma', 1, 'novel', 1815), (2, 'Ficciones', 2, 'stories', 1944),
  (3, 'Invisible Cities', 3, 'novel', 1972), (4, 'Poems', 4, 'poetry', 1890),
  (5, 'The Name of the Rose', 5, 'novel', 1980), (6, 'Persuasion', 1, 'novel', 1817),
  (7, 'The Aleph', 2, 'stories', 1949), (8, 'Baudolino', 5, 'novel', 2000),
  (9, 'Mistero Buffo', 6, 'drama', 1969), (10, 'Letters', 4, NULL, 1958);
INSERT INTO members VALUES (1, 'Ada', 'ada@x.org', 'Leeds'), (2, 'Ben', 'ben@x.org', 'York'),
  (3, 'Cleo', NULL, 'Leeds'), (4, 'Dan', 'dan@x.org', NULL), (5, 'Alma', 'alma@x.org', 'Hull'),
  (6, 'Eve', 'eve@x.org', 'York');
INSERT INTO loans VALUES (1, 1, 1, '2024-01-05', '2024-01-20'), (2, 3, 1, '2024-02-01', NULL),
  (3, 5, 2, '2024-02-10', '2024-03-01'), (4, 2, 3, '2024-03-03', NULL),
  (5, 8, 5, '2023-12-12', '2024-01-02'), (6, 4, 2, '2024-04-01', NULL),
  (7, 1, 5, '2024-04-02', NULL), (8, 6, 3, '2023-11-30', '2023-12-15');
"""

SOUND = {
    "avg-year": "SELECT AVG(year) FROM books",
    "open-loans": "SELECT COUNT(*) FROM loans WHERE returned IS NULL",
    "latest-poetry": "SELECT MAX(year) FROM books WHERE genre = 'poetry'",
    "first-member": "SELECT name FROM members ORDER BY name LIMIT 1",
    "never-lent": "SELECT title FROM books WHERE id NOT IN (SELECT DISTINCT book_id FROM loans)",
    "borrowing": "SELECT name FROM members WHERE id IN (SELECT member_id FROM loans "
                 "WHERE returned IS NULL)",
    "recent-titles": "SELECT title FROM books WHERE year > 1950",
    "novelists": "SELECT a.name, b.title FROM authors AS a JOIN books AS b "
                 "ON b.author_id = a.id WHERE b.genre = 'novel'",
    "a-cities": "SELECT city FROM members WHERE name LIKE 'A%'",
    "members-loans": "SELECT m.name, l.loaned FROM members AS m LEFT JOIN loans AS l "
                     "ON l.member_id = m.id",
    "out-titles": "SELECT b.title FROM books AS b JOIN loans AS l ON l.book_id = b.id "
                  "WHERE l.returned IS NULL",
    "late-borrowers": "SELECT m.name FROM members AS m LEFT JOIN loans AS l "
                      "ON l.member_id = m.id WHERE l.loaned > '2024-01-31'",
}
LOOSE = {
    "distinct-key": "SELECT DISTINCT id FROM books WHERE year > 1900",
    "redundant-check": "SELECT name FROM authors WHERE country = 'IT' AND country IS NOT NULL",
}


def library(folder: Path) -> Path:
    """The database, written into ``folder``."""
    db = folder / "library.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript(SCHEMA + DATA)
    conn.commit()
    conn.close()
    return db


def suite(folder: Path, golds: dict[str, str]) -> Path:
    path = folder / "library.yaml"
    path.write_text("".join(
        f"---\nid: {cid}\nconversation:\n- role: user\n  content: question {cid}\n  target:\n"
        f"    query:\n      gold: \"{q}\"\n" for cid, q in golds.items()), encoding="utf-8")
    return path
