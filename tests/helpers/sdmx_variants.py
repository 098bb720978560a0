"""Variants of the sdmx example's recorded responses (examples/sdmx/responses.jsonl): some
cases answered right (their targets), some emptied, the rest as recorded. Shared by the
compare tests, the chart tests and bench/chart_pictures.py (which puts tests/ on its path,
as bench/fuzz.py does)."""

from __future__ import annotations

import json
from pathlib import Path

FRANCE = "5eed0000-0000-0000-0000-00000001eef0"
GERMANY = "5eed0000-0000-0000-0000-000000013556"
CANADA = "5eed0000-0000-0000-0000-000000015445"
USA = "5eed0000-0000-0000-0000-000000017334"


def variant_responses(records: list[dict], path: Path, *, fix=(), empty=()) -> Path:
    """Write the responses of a run's ``records`` to ``path``: each case in ``fix``
    answered with its target, each in ``empty`` with nothing, the others as recorded."""
    with open(path, "w", encoding="utf-8") as fh:
        for r in records:
            for t in r["turns"]:
                out = t["target"] if r["case_id"] in fix else [] if r["case_id"] in empty \
                    else t["output"]
                fh.write(json.dumps({"case_id": r["case_id"], "turn": t["turn"],
                                     "indicator_selection": out}) + "\n")
    return path
