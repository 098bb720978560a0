"""The viewer shows the HTML report's figures (issue 23 items 2, 3, 10; issue 24 item 8):
overall CIs of repeated runs resample cases, every attempt of a case is reachable, the
pass/fail verdict with a filter, headline kinds decided on the server, derived per-k batches
under their run, the expected chunk's text, paths named inside run files kept inside the
folder, and the compare page is the CLI's comparison."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

import queryeval as qe  # noqa: E402
from queryeval.cli.app import main  # noqa: E402
from queryeval.report.compare import compare_runs  # noqa: E402
from queryeval.report.html import render_report, report_figures  # noqa: E402
from queryeval.run.results import RunResults  # noqa: E402
from queryeval.viewer.server import create_app  # noqa: E402

R = 400  # resamples: the viewer and the report computed with the same number
MEX = ("MEX", "Mexico")
PROBS = {f"c{i:02d}": i / 11 for i in range(12)}  # 0, 1/11, ..., 1


def sel(*terms: tuple[str, str]) -> list[dict]:
    return [{"dataset_id": "D", "dimensions": [
        {"dimension_name": "COUNTRY", "values": [{"id": i, "name": n} for i, n in terms]}]}]


CASES = [{"id": cid, "name": f"question {cid}", "conversation": [
    {"role": "user", "content": f"question {cid}", "target": {"indicator_selection": sel(MEX)}}]}
    for cid in PROBS]


def seeded(seed: str):
    def bot(req: dict) -> dict:
        import random

        rng = random.Random(f"{seed}:{req['case_id']}:{req.get('repeat', 0)}")
        return {"indicator_selection": sel(MEX) if rng.random() < PROBS[req["case_id"]] else []}
    return bot


@pytest.fixture(scope="module")
def repeated(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("rep") / "runs"
    suite = root.parent / "suite.jsonl"
    suite.write_text("".join(json.dumps(c) + "\n" for c in CASES))
    runs = [qe.evaluate(str(suite), system=seeded(s), repeats=5, out=root / s, reports=False)
            for s in ("a", "b")]
    paths = [next((root / s).rglob("batch_*.json")) for s in ("a", "b")]
    return {"root": root, "paths": paths, "ids": [p.stem[len("batch_"):] for p in paths],
            "runs": runs}


@pytest.fixture(scope="module")
def rclient(repeated):
    return TestClient(create_app(repeated["root"], resamples=R), base_url="http://127.0.0.1")


def _report_ci_cells(batch: Path) -> dict[str, tuple[str, str]]:
    """The HTML report's Overall table: figure -> (CI text, n), parsed from the page."""
    page = render_report(batch, resamples=R, seed=0)
    overall = page.split("<h2>Overall</h2>", 1)[1].split("<h2>", 1)[0]
    out = {}
    for row in re.findall(r"<tr>(.*?)</tr>", overall):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
        if len(cells) == 4:
            out[cells[0]] = (cells[2], cells[3])
    return out


# --- item 2: repeated runs --------------------------------------------------------------------
def test_repeated_run_overall_cis_are_the_reports_over_cases(rclient, repeated):
    batch = repeated["paths"][0]
    doc = rclient.get(f"/api/runs/{repeated['ids'][0]}").json()
    cells = _report_ci_cells(batch)
    shown = {r["metric"]: r for r in doc["overall_rows"]}
    assert set(shown) == set(cells)
    with_ci = [m for m, r in shown.items() if r["low"] is not None]
    assert with_ci, cells
    for m in with_ci:
        r = shown[m]
        assert (f"[{r['low']:.4f}, {r['high']:.4f}]", str(r["n"])) == cells[m]
        assert r["n"] == 12  # the cases, not the 60 attempts
    # the interval resamples the 12 case means (an independent computation)
    from fractions import Fraction

    from queryeval.metrics import stats

    run = RunResults.open(batch)
    per: dict[str, list[Fraction]] = {}
    for r in run.records:
        per.setdefault(r["case_id"], []).append(Fraction(r["scores"]["macro_recall"]))
    means = [float(sum(v) / len(v)) for _, v in sorted(per.items())]
    ci = stats.bootstrap_ci(means, resamples=R, seed=0)
    assert (shown["macro_recall"]["low"], shown["macro_recall"]["high"]) == (ci.low, ci.high)


def test_repeated_run_has_the_metrics_repeats_section(rclient, repeated):
    doc = rclient.get(f"/api/runs/{repeated['ids'][0]}").json()
    metrics = json.loads(next(repeated["paths"][0].parent.glob("metrics_*.json")).read_text())
    assert doc["repeats"] == metrics["repeats"]
    assert doc["repeats"]["overall"]["pass@1"]["n"] == 12
    assert doc["attempts"] == 60


def test_repeated_run_one_row_per_case_every_attempt_reachable(rclient, repeated):
    rid = repeated["ids"][0]
    page = rclient.get(f"/api/runs/{rid}/cases", params={"limit": 500}).json()
    assert page["total"] == page["matched"] == 12
    rows = {r["case_id"]: r for r in page["rows"]}
    records = [json.loads(line) for line in
               next(repeated["paths"][0].parent.glob("results_*.jsonl")).read_text().splitlines()]
    for cid, row in rows.items():
        mine = [r for r in records if r["case_id"] == cid]
        assert [a["repeat"] for a in row["attempts"]] == [0, 1, 2, 3, 4]
        right = [r["scores"]["macro_recall"] == 1.0 for r in sorted(mine, key=lambda r: r["repeat"])]
        assert row["outcomes"] == "".join("P" if x else "F" for x in right)
        assert row["metrics"]["macro_recall"] == pytest.approx(sum(right) / 5)
        expected = "pass" if all(right) else "fail" if not any(right) else "flaky"
        assert row["verdict"] == expected
        for rep in range(5):
            doc = rclient.get(f"/api/runs/{rid}/cases/{cid}", params={"repeat": rep}).json()
            assert doc["record"]["repeat"] == rep
            want = next(r for r in mine if r["repeat"] == rep)
            assert doc["record"]["scores"] == want["scores"]
    assert rclient.get(f"/api/runs/{rid}/cases/c05", params={"repeat": 9}).status_code == 404
    flaky = rclient.get(f"/api/runs/{rid}/cases", params={"verdict": "flaky"}).json()
    metrics = json.loads(next(repeated["paths"][0].parent.glob("metrics_*.json")).read_text())
    assert flaky["matched"] == metrics["repeats"]["flaky_cases"] > 0
    assert {r["case_id"] for r in flaky["rows"]} == {
        f["case_id"] for f in metrics["repeats"]["flaky"]}


def test_compare_page_is_the_cli_comparison(rclient, repeated):
    """The compare endpoint returns what ``queryeval compare A B --pairs baseline`` computes
    (the same function, resamples and seed)."""
    a, b = repeated["paths"]
    doc = rclient.get("/api/compare", params=[("run", i) for i in repeated["ids"]]).json()
    multi = qe.compare(a, b, pairs="baseline", resamples=R, seed=0)
    want = multi.to_dict()
    doc.pop("run_ids")
    # the charts: the compare HTML's SVG, drawn from that same comparison
    from queryeval.report.html_charts import nway_charts

    assert doc.pop("charts") == nway_charts(multi.raw) != []
    assert json.loads(json.dumps(doc)) == json.loads(json.dumps(want, default=str))


def test_compare_page_of_repeated_runs_gives_the_two_run_figures(rclient, repeated):
    a, b = repeated["paths"]
    doc = rclient.get("/api/compare", params=[("run", i) for i in repeated["ids"]]).json()
    two = compare_runs(a, b, resamples=R)
    row = next(m for m in doc["overall"]["metrics"] if m["metric"] == "macro_recall")
    assert row["n"] == 12
    assert row["means"] == [two.metric("macro_recall").mean_a, two.metric("macro_recall").mean_b]


# --- item 10 and item 3: retrieval, verdicts, derived batches, expected chunk text ----------
@pytest.fixture(scope="module")
def retrieval(tmp_path_factory, examples_dir) -> dict:
    """Recorded retrieval answers at k 1 and 5; the corpus copied into the folder."""
    root = tmp_path_factory.mktemp("ret") / "runs"
    root.mkdir()
    corpus = root / "corpus.jsonl"
    shutil.copy(examples_dir / "retrieval" / "corpus.jsonl", corpus)
    ex = examples_dir / "retrieval"
    assert main(["run", str(ex / "questions.csv"), "--responses", str(ex / "responses.jsonl"),
                 "--corpus", str(corpus), "--k", "1,5", "-q", "--no-report",
                 "--out", str(root / "out")]) == 0
    batches = {json.loads(p.read_text()).get("derived_from") is None: p
               for p in root.rglob("batch_*.json")}
    return {"root": root, "run": batches[True], "derived": batches[False], "corpus": corpus}


def _id(path: Path) -> str:
    return path.stem[len("batch_"):]


def test_verdict_is_the_reports_and_filters(retrieval):
    client = TestClient(create_app(retrieval["root"], resamples=R), base_url="http://127.0.0.1")
    rid = _id(retrieval["run"])
    fig = report_figures(retrieval["run"], resamples=R)
    doc = client.get(f"/api/runs/{rid}").json()
    assert doc["verdicts"] == {v: fig.verdicts.count(v) for v in set(fig.verdicts)}
    assert doc["verdicts"] == {"pass": 52, "fail": 15}  # hit_rate@5 = 52/67
    assert doc["statuses"] == {"ok": 67}  # the call status: a miss is "ok"
    failed = client.get(f"/api/runs/{rid}/cases", params={"verdict": "fail", "limit": 500}).json()
    assert failed["matched"] == 15
    assert all(r["verdict"] == "fail" and r["status"] == "ok" and r["metrics"]["recall@5"] == 0.0
               for r in failed["rows"])


def test_derived_batches_are_grouped_under_their_run(retrieval):
    client = TestClient(create_app(retrieval["root"], resamples=R), base_url="http://127.0.0.1")
    rows = client.get("/api/runs").json()["runs"]
    assert [r["id"] for r in rows] == [_id(retrieval["run"]), _id(retrieval["derived"])]
    assert rows[1]["parent"] == rows[0]["id"] and "parent" not in rows[0]
    doc = client.get(f"/api/runs/{rows[0]['id']}").json()
    assert doc["derived"] == [rows[1]["id"]]


def test_headline_kinds_are_decided_by_type_not_value(retrieval, tmp_path):
    """A figure equal to 1.0 is a figure (JavaScript's Number.isInteger(1.0) is true: the
    page used to drop it); counts are ints in the metrics JSON."""
    root = tmp_path / "r"
    shutil.copytree(retrieval["run"].parent, root)
    metrics = next(root.glob(f"metrics_{_id(retrieval['run'])}.json"))
    doc = json.loads(metrics.read_text())
    doc["overall_metrics"]["recall@5"] = 1.0  # what a dense run got on this suite
    metrics.write_text(json.dumps(doc))
    client = TestClient(create_app(root, resamples=R), base_url="http://127.0.0.1")
    row = next(r for r in client.get("/api/runs").json()["runs"]
               if r["id"] == _id(retrieval["run"]))
    assert row["metrics"]["recall@5"] == 1.0 and row["metric_kinds"]["recall@5"] == "figure"
    assert row["metric_kinds"]["total_questions"] == "count"
    assert row["metric_kinds"]["mean_retrieval_time_ms"] == "time"
    assert "k" not in row["metrics"]  # a setting, not a figure
    kinds = list(row["metric_kinds"].values())
    assert kinds == sorted(kinds, key=["figure", "count", "score", "time"].index)


def test_missed_case_page_shows_the_expected_chunk_text(retrieval):
    client = TestClient(create_app(retrieval["root"], resamples=R), base_url="http://127.0.0.1")
    rid = _id(retrieval["run"])
    corpus = {c["chunk_id"]: c["content"] for c in map(
        json.loads, retrieval["corpus"].read_text().splitlines())}
    failed = client.get(f"/api/runs/{rid}/cases", params={"verdict": "fail", "limit": 500}).json()
    for row in failed["rows"][:5]:
        doc = client.get(f"/api/runs/{rid}/cases/{row['case_id']}").json()
        exp = doc["record"]["expected_chunk"]
        assert exp["content"] == corpus[exp["chunk_id"]]
        assert exp["chunk_id"] not in {c["chunk_id"] for c in doc["record"]["retrieved_chunks"]}


def test_corpus_outside_the_folder_is_not_opened(retrieval, tmp_path):
    """The run names a corpus outside the served folder: the viewer does not open it (the
    option is withheld from the task and listed), and the page still works."""
    root = tmp_path / "served"
    shutil.copytree(retrieval["run"].parent, root)
    client = TestClient(create_app(root, resamples=R), base_url="http://127.0.0.1")
    rid = _id(retrieval["run"])
    doc = client.get(f"/api/runs/{rid}").json()
    assert doc["withheld"] == ["corpus"]
    failed = client.get(f"/api/runs/{rid}/cases", params={"verdict": "fail"}).json()
    case = client.get(f"/api/runs/{rid}/cases/{failed['rows'][0]['case_id']}").json()
    assert "content" not in case["record"]["expected_chunk"]


# --- issue 24 item 8: a path named inside a run file --------------------------------------------
def test_tuning_file_outside_the_folder_is_never_read_nor_echoed(examples_dir, tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"rows": [{"Field Name": "x", "N": "TOP-SECRET-42",
                                            "Model": "m"}]}))
    root = tmp_path / "served"
    run = qe.evaluate(str(examples_dir / "sdmx" / "suite"),
                      responses=str(examples_dir / "sdmx" / "responses.jsonl"), out=root,
                      reports=False)
    batch = next(root.rglob("batch_*.json"))
    doc = json.loads(batch.read_text())
    doc["task"] = "fields"
    doc["evaluation_config"]["task_options"] = {"tuning": str(secret)}
    batch.write_text(json.dumps(doc))
    client = TestClient(create_app(root, resamples=R), base_url="http://127.0.0.1")
    rid = _id(batch)
    seen = [client.get(u) for u in ("/api/runs", f"/api/runs/{rid}", f"/api/runs/{rid}/cases")]
    assert all(r.status_code == 200 for r in seen), [r.text[:300] for r in seen]
    assert not any("TOP-SECRET" in r.text for r in seen)
    assert seen[1].json()["withheld"] == ["tuning"]
    # a link inside the folder to the file outside: resolved, so withheld too
    (root / "link.json").symlink_to(secret)
    doc["evaluation_config"]["task_options"] = {"tuning": str(root / "link.json")}
    batch.write_text(json.dumps(doc))
    client = TestClient(create_app(root, resamples=R), base_url="http://127.0.0.1")
    got = client.get(f"/api/runs/{rid}")
    assert got.json()["withheld"] == ["tuning"] and "TOP-SECRET" not in got.text
    # a tuning file inside the folder is used; its errors are named by kind, never quoted
    inside = root / "tuning.json"
    shutil.copy(secret, inside)
    doc["evaluation_config"]["task_options"] = {"tuning": str(inside)}
    batch.write_text(json.dumps(doc))
    client = TestClient(create_app(root, resamples=R), base_url="http://127.0.0.1")
    got = client.get(f"/api/runs/{rid}")
    assert got.status_code == 200 and "TOP-SECRET" not in got.text
    assert got.json()["withheld"] == [] and got.json()["task_error"] == "InputError"
    assert run is not None


def test_huge_integer_score_is_unreadable_not_a_500(examples_dir, tmp_path):
    """Issue 24 item 7 in the viewer: a per-case score of 400 digits (beyond float range)
    makes the run unreadable (422 naming the field), never a 500."""
    root = tmp_path / "served"
    qe.evaluate(str(examples_dir / "sdmx" / "suite"),
                responses=str(examples_dir / "sdmx" / "responses.jsonl"), out=root, reports=False)
    results = next(root.rglob("results_*.jsonl"))
    lines = results.read_text().splitlines()
    rec = json.loads(lines[0])
    rec["scores"]["macro_recall"] = 10 ** 400
    results.write_text("\n".join([json.dumps(rec), *lines[1:]]) + "\n")
    client = TestClient(create_app(root, resamples=R), base_url="http://127.0.0.1")
    rid = _id(next(root.rglob("batch_*.json")))
    for url in (f"/api/runs/{rid}", f"/api/runs/{rid}/cases", f"/api/runs/{rid}/cases/x"):
        got = client.get(url)
        assert got.status_code == 422, (url, got.status_code, got.text[:200])
        error = got.json()["error"]  # the field is named, the number itself never echoed
        assert "scores.macro_recall" in error and "beyond the range of a float" in error
        assert "1000000000" not in got.text
    assert client.get("/api/runs").status_code == 200
