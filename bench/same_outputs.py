"""Compare two run folders file by file, ignoring what differs from run to run.

    python bench/same_outputs.py A B

Each batch (parent and derived) is matched by its role (``derived_from`` and its task
options), and its results JSONL, results CSV and metrics JSON are compared after the batch
ids, timestamps and measured latencies are replaced by placeholders (a parent's results
JSONL, appended as cases finish, is compared as a sorted set of lines; a derived batch's
lines are in the parent's suite order and compared as they are). Prints one line per
file compared and exits 1 when any differs.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+")
_LATENCY = re.compile(r'("(?:retrieval_time_ms|latency_ms|mean_retrieval_time_ms|mean_latency_ms|elapsed_ms|'
                      r'started_at)": )-?[0-9.e+-]+')


def _role(batch: Path) -> str:
    doc = json.loads(batch.read_text(encoding="utf-8"))
    opts = (doc.get("evaluation_config") or {}).get("task_options") or {}
    return ("derived " if "derived_from" in doc else "parent ") + json.dumps(opts.get("k"))


def _normal(text: str) -> str:
    return _LATENCY.sub(r"\1<t>", _TIME.sub("<time>", _UUID.sub("<id>", text)))


def _csv_normal(text: str) -> str:
    """Measured times (a column whose name ends in ``time_ms`` or ``latency_ms``) blanked."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows:
        return ""
    drop = {i for i, c in enumerate(rows[0]) if c.endswith(("time_ms", "latency_ms"))}
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(rows[0])
    for row in rows[1:]:
        w.writerow(["<t>" if i in drop and v else v for i, v in enumerate(row)])
    return _normal(out.getvalue())


def batches(folder: Path) -> dict[str, Path]:
    return {_role(p): p for p in sorted(folder.rglob("batch_*.json"))}


def main() -> int:
    a, b = (Path(p) for p in sys.argv[1:3])
    ba, bb = batches(a), batches(b)
    if set(ba) != set(bb):
        print(f"different batches: {sorted(ba)} vs {sorted(bb)}")
        return 1
    bad = 0
    for role in sorted(ba):
        ida = ba[role].stem.removeprefix("batch_")
        idb = bb[role].stem.removeprefix("batch_")
        for prefix, suffix in (("results", ".jsonl"), ("results", ".csv"), ("metrics", ".json")):
            fa = ba[role].with_name(f"{prefix}_{ida}{suffix}")
            fb = bb[role].with_name(f"{prefix}_{idb}{suffix}")
            ta, tb = fa.read_text(encoding="utf-8"), fb.read_text(encoding="utf-8")
            norm = _csv_normal if suffix == ".csv" else _normal
            if suffix == ".jsonl" and role.startswith("parent"):  # lines in completion order
                same = sorted(norm(ta).splitlines()) == sorted(norm(tb).splitlines())
            else:
                same = norm(ta) == norm(tb)
            bad += not same
            print(f"{'same' if same else 'DIFFERENT':9s} {role:24s} {prefix}{suffix} "
                  f"({len(ta):,} / {len(tb):,} bytes)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
