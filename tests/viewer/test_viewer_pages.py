"""The viewer's pages answer at a glance, as app.js builds them (under node, from the API's
own answers through Starlette's test client): the index names each run by its ``--name``;
a run's cases table shows the figure that decided each case (``test_suite_match`` under
--test-suite: the refuted case 0 with the neighbour in its reason) and the reason in words;
the compare page's headline reads the compare model's verdicts in every direction
(significantly worse, significantly better, no detectable difference)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest

import queryeval as qe

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from helpers.testsuite_sql import build_example  # noqa: E402
from helpers.viewer_js import render_page  # noqa: E402
from queryeval.viewer.server import create_app  # noqa: E402


def _silent(examples_dir: Path, path: Path) -> Path:
    """The sdmx example's responses with every selection empty (every case fails)."""
    with open(path, "w", encoding="utf-8") as fh:
        for line in (examples_dir / "sdmx" / "responses.jsonl").read_text().splitlines():
            rec = json.loads(line)
            rec["indicator_selection"] = []
            fh.write(json.dumps(rec) + "\n")
    return path


@pytest.fixture(scope="module")
def sdmx(tmp_path_factory, examples_dir) -> dict:
    tmp = tmp_path_factory.mktemp("pages")
    root = tmp / "runs"
    silent = _silent(examples_dir, tmp / "silent.jsonl")
    good = examples_dir / "sdmx" / "responses.jsonl"
    ids = {}
    for name, responses in (("nojudge", good), ("fakejudge", silent), ("fakejudge2", good)):
        run = qe.evaluate(str(examples_dir / "sdmx" / "suite"), responses=str(responses),
                          out=root / name, name=name, reports=False)
        ids[name] = run.batch_id
    client = TestClient(create_app(root, resamples=300), base_url="http://127.0.0.1")
    return {"root": root, "ids": ids, "client": client}


def test_index_shows_each_runs_name(sdmx, tmp_path):
    api = sdmx["client"].get("/api/runs").json()
    assert {r["id"]: r["label"] for r in api["runs"]} == {v: k for k, v in sdmx["ids"].items()}
    page = render_page({"/api/runs": api}, tmp_path, "#/")
    head, *rows = page["tables"]["runs"]
    col = head.index("name")
    shown = {row[1]: row[col] for row in rows}  # the run cell shows the id's first 8
    assert shown == {v[:8]: k for k, v in sdmx["ids"].items()}
    # the system column still names the responses file
    assert sorted(row[head.index("system")] for row in rows) == [
        "responses.jsonl", "responses.jsonl", "silent.jsonl"]


def _compare_page(sdmx, tmp_path, first: str, second: str) -> tuple[dict, dict]:
    a, b = sdmx["ids"][first], sdmx["ids"][second]
    doc = sdmx["client"].get("/api/compare", params=[("run", a), ("run", b)]).json()
    page = render_page({"/api/compare": doc}, tmp_path, f"#/compare?run={quote(a)}&run={quote(b)}")
    return doc, page


def _model(doc: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for v in doc["verdicts"]:
        if v["run_a"] == 0 and v["run_b"] == 1:
            out.setdefault(v["verdict"], []).append(v["metric"])
    return out


def test_compare_headline_says_better_when_b_is_better(sdmx, tmp_path):
    doc, page = _compare_page(sdmx, tmp_path, "fakejudge", "nojudge")
    model = _model(doc)
    assert model.get("better") and not model.get("worse")  # the model's own verdicts
    line = page["ids"]["verdict"]
    assert line.startswith("b (nojudge) against a (fakejudge): significantly better on "
                           f"{len(model['better'])}: {', '.join(model['better'])}")
    assert "regression" not in line and "worse" not in line
    assert [a for t, a, _ in page["attrs"] if t == "li" and "data-verdict" in a][0][
        "data-verdict"] == "better"


def test_compare_headline_says_worse_when_b_is_worse(sdmx, tmp_path):
    doc, page = _compare_page(sdmx, tmp_path, "nojudge", "fakejudge")
    model = _model(doc)
    assert model.get("worse") and not model.get("better")
    assert page["ids"]["verdict"].startswith(
        f"b (fakejudge) against a (nojudge): significantly worse on {len(model['worse'])}: "
        f"{', '.join(model['worse'])}")


def test_compare_headline_says_no_detectable_difference(sdmx, tmp_path):
    doc, page = _compare_page(sdmx, tmp_path, "nojudge", "fakejudge2")
    model = _model(doc)
    assert set(model) == {"no detectable difference"}
    assert page["ids"]["verdict"] == (
        f"b (fakejudge2) against a (nojudge): no detectable difference on "
        f"{len(model['no detectable difference'])}")


@pytest.fixture(scope="module")
def testsuite_run(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("ts")
    build_example(folder)
    run = qe.evaluate(folder / "suite.yaml", responses=folder / "predictions.jsonl",
                      task="query", out=folder / "runs", test_suite=12, name="ts12",
                      reports=False)
    client = TestClient(create_app(folder / "runs", resamples=200), base_url="http://127.0.0.1")
    return {"id": run.batch_id, "client": client, "run": run}


def test_cases_show_test_suite_match_and_the_reason(testsuite_run, tmp_path):
    client, rid = testsuite_run["client"], testsuite_run["id"]
    doc = client.get(f"/api/runs/{rid}").json()
    assert doc["decided_by"] == "test_suite_match"
    cases = client.get(f"/api/runs/{rid}/cases", params={"limit": 50}).json()
    rows = {r["case_id"]: r for r in cases["rows"]}
    records = {r["case_id"]: r for r in map(json.loads, (
        testsuite_run["run"].folder / f"results_{rid}.jsonl").read_text().splitlines())}
    refuted = rows["high-earners"]
    # right by accident on the original database: exact_match_f1 1, refuted by a neighbour
    assert refuted["metrics"]["exact_match_f1"] == 1.0 and refuted["verdict"] == "fail"
    assert refuted["decided"] == {"figure": "test_suite_match", "value": 0.0,
                                  "reason": records["high-earners"]["test_suite"]["reason"]}
    assert "neighbour" in refuted["reason"]
    for cid in ("not-at-most-100", "staff-and-departments", "sales-staff"):
        assert rows[cid]["decided"]["value"] == 1.0 and rows[cid]["verdict"] == "pass"
    page = render_page({f"/api/runs/{rid}/cases": cases, f"/api/runs/{rid}": doc}, tmp_path,
                       f"#/run/{rid}")
    head, *body = page["tables"]["cases"]
    assert head[:5] == ["case_id", "name", "verdict", "test_suite_match", "reason"]
    shown = {r[0]: r for r in body}
    assert shown["high-earners"][2:5] == ["fail", "0.0000", refuted["reason"]]
    assert shown["sales-staff"][2:4] == ["pass", "1.0000"]
    assert page["ids"]["run-title"].startswith("ts12 · query · ")
    # the column is not repeated among the metric columns
    assert head.count("test_suite_match") == 1
    # ids up to 12 characters are shown whole; a longer one as its first 8 and "…", in full
    # on hover
    links = {a["href"]: (a.get("title"), text) for tag, a, text in page["attrs"]
             if tag == "a" and a.get("class") == "caselink"}
    shown = dict(links.values())
    assert shown["count-at-least-120"] == "count-at…" and shown["sales-staff"] == "sales-staff"


def test_a_failed_case_without_a_deciding_rule_says_expected_and_got(sdmx):
    client, rid = sdmx["client"], sdmx["ids"]["fakejudge"]
    assert client.get(f"/api/runs/{rid}").json()["decided_by"] is None
    rows = client.get(f"/api/runs/{rid}/cases", params={"limit": 1}).json()["rows"]
    assert rows[0]["decided"] is None and rows[0]["verdict"] == "fail"
    assert rows[0]["reason"].startswith("expected ") and rows[0]["reason"].endswith("got []")
