"""Build emp.sqlite from emp.sql (next to this file, or at the path given).

    python examples/sql/build_db.py [OUT.sqlite]
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def build(out: Path) -> Path:
    out.unlink(missing_ok=True)
    con = sqlite3.connect(out)
    try:
        con.executescript((HERE / "emp.sql").read_text(encoding="utf-8"))
        con.commit()
    finally:
        con.close()
    return out


if __name__ == "__main__":
    print(build(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "emp.sqlite"))
