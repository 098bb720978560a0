"""What the tests of testsuite sql share with other test files: ``EXAMPLE_ANSWERS``, ``build_example``, ``case``, ``records`` (moved here from test_testsuite_sql.py)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import queryeval as qe

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "testsuite"


#: The head of a ``python:`` bot module over the example: the predicted query of each case
#: (predictions.jsonl beside it) and the case each question belongs to.
EXAMPLE_ANSWERS = '''
import json
from pathlib import Path

ANSWERS = {json.loads(l)["case_id"]: json.loads(l)["query"]
           for l in (Path(__file__).parent / "predictions.jsonl").read_text().splitlines()}
QUESTIONS = {"Who earns more than 100?": "high-earners",
             "Which employees do not earn 100 or less?": "not-at-most-100",
             "Which department does each employee work in?": "staff-and-departments",
             "Who works in department 1?": "sales-staff",
             "How many employees earn at least 120?": "count-at-least-120"}
'''


def build_example(folder: Path) -> Path:
    """examples/testsuite copied into ``folder`` with its emp.sqlite built."""
    for name in ("suite.yaml", "predictions.jsonl", "emp.sql", "build_db.py"):
        shutil.copy(EXAMPLE / name, folder / name)
    spec = importlib.util.spec_from_file_location("emp_build", folder / "build_db.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build(folder / "emp.sqlite")


def case(cid: str, source: str, gold: str, **more) -> dict:
    return {"id": cid, "conversation": [{"role": "user", "content": cid, "target": {
        "query": {"source": source, "gold": gold, **more}}}]}


def records(run: qe.Run) -> dict[str, dict]:
    path = run.folder / f"results_{run.batch_id}.jsonl"
    return {r["case_id"]: r for r in map(json.loads, path.read_text().splitlines())}
