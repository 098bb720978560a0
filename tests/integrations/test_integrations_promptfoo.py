"""The promptfoo Python assertion, called as promptfoo calls a ``file://`` assertion: its
Python wrapper (a separate process) loads the file by path with importlib, calls
``get_assert(output, context)`` with JSON-decoded arguments and prints
``{"type": "final_result", "data": result}``; promptfoo then accepts a bool, a number or a
GradingResult object (``pass`` bool, ``score`` number, ``reason`` string). The tests run
examples/ci/promptfoo/promptfooconfig.yaml's tests through that protocol."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ci" / "promptfoo"

# what promptfoo's src/python/wrapper.py does with (script, method, args file)
WRAPPER = """
import asyncio, importlib.util, json, os, sys
script_path, method_name, json_path = sys.argv[1:4]
script_dir = os.path.dirname(os.path.abspath(script_path))
sys.path.insert(0, script_dir)
module_name = os.path.basename(script_path).rsplit(".", 1)[0]
spec = importlib.util.spec_from_file_location(module_name, script_path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
method = getattr(module, method_name)
with open(json_path) as fp:
    data = json.load(fp)
result = asyncio.run(method(*data)) if asyncio.iscoroutinefunction(method) else method(*data)
print(json.dumps({"type": "final_result", "data": result}))
"""


def promptfoo_call(tmp_path: Path, output: str, context: dict) -> dict:
    args = tmp_path / "args.json"
    args.write_text(json.dumps([output, context]), encoding="utf-8")
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(WRAPPER, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(wrapper), str(EXAMPLE / "queryeval_assert.py"),
                           "get_assert", str(args)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    msg = json.loads(proc.stdout.strip().splitlines()[-1])
    assert msg["type"] == "final_result"
    result = msg["data"]
    # promptfoo's isGradingResult
    assert isinstance(result["pass"], bool) and isinstance(result["score"], (int, float)) \
        and isinstance(result["reason"], str)
    return result


@pytest.fixture
def config(tmp_path):
    sys.path.insert(0, str(REPO / "examples" / "sql"))
    try:
        from build_db import build
    finally:
        sys.path.pop(0)
    db = build(tmp_path / "shop.sqlite")
    doc = yaml.safe_load((EXAMPLE / "promptfooconfig.yaml").read_text(encoding="utf-8"))
    for test in doc["tests"]:  # the example's database, built here
        target = json.loads(test["vars"]["target"])
        assert target["query"]["source"] == "../../sql/shop.sqlite"
        target["query"]["source"] = str(db)
        test["vars"]["target"] = json.dumps(target)
    return doc


def contexts(doc: dict, name: str) -> list[dict]:
    """promptfoo's assertion context for each assertion of a test (default ones first)."""
    test = next(t for t in doc["tests"] if t["description"] == name)
    asserts = doc["defaultTest"]["assert"] + test.get("assert", [])
    prompt = doc["prompts"][0].replace("{{question}}", test["vars"]["question"])
    return [{"prompt": prompt, "vars": test["vars"], "test": test, "config": a.get("config")}
            for a in asserts if a["type"] == "python"]


def test_right_query_passes(tmp_path, config):
    (ctx,) = contexts(config, "cheap-by-name")
    result = promptfoo_call(tmp_path, "SELECT name FROM items WHERE price < 1 ORDER BY name",
                            ctx)
    assert (result["pass"], result["score"]) == (True, 1.0)
    assert result["namedScores"]["row_matching_f1"] == 1.0


def test_wrong_query_fails_with_expected_vs_got(tmp_path, config):
    (ctx,) = contexts(config, "cheap-by-name")
    result = promptfoo_call(tmp_path, "SELECT name FROM items WHERE price > 1", ctx)
    assert (result["pass"], result["score"]) == (False, 0.0)
    assert result["reason"].startswith("expected ")
    assert "SELECT name FROM items WHERE price > 1" in result["reason"]


def test_per_metric_assertion_with_threshold(tmp_path, config):
    verdict, by_metric = contexts(config, "spices")
    sql = "SELECT name FROM items WHERE category = 'spice' AND price < 5"
    # gold {saffron, pepper}, got {pepper}: precision 1, recall 1/2, F1 2/3
    result = promptfoo_call(tmp_path, sql, verdict)
    assert result["pass"] is False and result["namedScores"]["row_matching_f1"] == \
        pytest.approx(2 / 3)
    result = promptfoo_call(tmp_path, sql, by_metric)
    assert result["pass"] is True and result["score"] == pytest.approx(2 / 3)


def test_a_bad_target_is_a_failed_assertion_saying_why(tmp_path):
    ctx = {"prompt": "p", "vars": {"question": "q", "target": "not json"}, "test": {},
           "config": {}}
    result = promptfoo_call(tmp_path, "x", ctx)
    assert result["pass"] is False and "not a queryeval target" in result["reason"]
