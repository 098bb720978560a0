"""Every comparison surface gives the figures of the two-run compare on runs with --repeats:
each case's mean over its attempts, n = cases (issue 23 item 1; before, the N-way compare
took each case's last attempt and counted attempts)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from typer.testing import CliRunner

import queryeval as qe
from queryeval.cli.app import app

N_CASES, REPEATS = 6, 10
CASES = [{"id": f"c{i}", "conversation": [{"role": "user", "content": f"question {i}?",
          "target": {"answers": [{"name": "n", "value": str(i)}]}}]} for i in range(N_CASES)]


def _case_index(request: dict) -> int:
    text = json.dumps(request)
    return next(i for i in range(N_CASES) if f"question {i}?" in text)


def right_a(request: dict) -> dict:
    """Case i is right on repeats 0 .. 3 + i % 3 (4, 5 or 6 of 10): the last repeat never."""
    i, rep = _case_index(request), request.get("repeat", 0)
    return {"response": f"@n[{i if rep < 4 + i % 3 else 'x'}]"}


def right_b(request: dict) -> dict:
    """Every case right on repeats 0 .. 5 (6 of 10)."""
    i, rep = _case_index(request), request.get("repeat", 0)
    return {"response": f"@n[{i if rep < 6 else 'x'}]"}


# hand-computed: per-case rates 0.4, 0.5, 0.6, 0.4, 0.5, 0.6 -> 0.5; B: 0.6 everywhere
MEAN_A, MEAN_B = 0.5, 0.6


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("rep")
    a = qe.evaluate(CASES, system=right_a, repeats=REPEATS, out=root / "a", name="bot-a")
    b = qe.evaluate(CASES, system=right_b, repeats=REPEATS, out=root / "b", name="bot-b")
    c = qe.evaluate(CASES, system=right_a, repeats=REPEATS, out=root / "c")
    return root, a, b, c


def test_two_run_compare_pairs_case_means(runs):
    _, a, b, _ = runs
    m = qe.compare(a, b).metric("all_correct")
    assert (m.n, m.mean_a, m.mean_b) == (6, pytest.approx(MEAN_A), pytest.approx(MEAN_B))


@pytest.mark.parametrize("how", ["pairs_all", "three"])
def test_nway_compare_gives_the_two_run_figures(runs, how):
    _, a, b, c = runs
    comp = qe.compare(a, b, pairs="all") if how == "pairs_all" else qe.compare(a, b, c)
    t = comp.overall
    assert t.n["all_correct"] == N_CASES
    assert t.means["all_correct"][:2] == [pytest.approx(MEAN_A), pytest.approx(MEAN_B)]
    two = qe.compare(a, b).metric("all_correct")
    test = t.test("all_correct", 0, 1).result
    assert (test.n, test.mean_a, test.mean_b, test.p_randomization) == (
        two.n, two.mean_a, two.mean_b, two.p_randomization)
    assert [r["cases"] for r in comp.to_dict()["runs"]] == [N_CASES] * len(comp.labels)


def test_every_cli_format_gives_the_two_run_figures(runs, tmp_path):
    _, a, b, c = runs
    out = {k: tmp_path / f"cmp.{k}" for k in ("json", "csv", "md", "tex", "xlsx", "html")}
    res = CliRunner().invoke(app, [
        "compare", str(a.path), str(b.path), str(c.path), "--resamples", "200", "-q",
        "--json", str(out["json"]), "--csv", str(out["csv"]), "--markdown", str(out["md"]),
        "--latex", str(out["tex"]), "--xlsx", str(out["xlsx"]), "--html", str(out["html"])])
    assert res.exit_code == 0, res.output
    doc = json.loads(out["json"].read_text())
    row = next(r for r in doc["overall"]["metrics"] if r["metric"] == "all_correct")
    assert row["n"] == N_CASES and row["means"] == [pytest.approx(MEAN_A),
                                                    pytest.approx(MEAN_B), pytest.approx(MEAN_A)]
    rows = list(csv.reader(io.StringIO(out["csv"].read_text())))
    line = next(r for r in rows if r[0] == "" and r[2] == "all_correct")
    assert line[3] == "6" and float(line[4]) == pytest.approx(MEAN_A)
    assert float(line[8]) == pytest.approx(MEAN_B)
    assert "| all\\_correct | 6 | 0.5000" in out["md"].read_text()
    assert "all\\_correct & 6 & 0.5000" in out["tex"].read_text()
    assert "0.6000" in out["html"].read_text() and "0.8333" not in out["html"].read_text()
    from openpyxl import load_workbook

    ws = load_workbook(out["xlsx"])["Compare"]
    found = [[c.value for c in r] for r in ws.iter_rows() if r[0].value == "all_correct"][0]
    assert found[1] == N_CASES and found[2:5] == [pytest.approx(MEAN_A), pytest.approx(MEAN_B),
                                                  pytest.approx(MEAN_A)]


def test_viewer_compare_gives_the_two_run_figures(runs):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from queryeval.viewer.server import create_app

    root, a, b, _ = runs
    client = TestClient(create_app(root, resamples=200), base_url="http://127.0.0.1")
    doc = client.get(f"/api/compare?run={a.batch_id}&run={b.batch_id}").json()
    row = next(r for r in doc["overall"]["metrics"] if r["metric"] == "all_correct")
    assert row["n"] == N_CASES
    assert row["means"] == [pytest.approx(MEAN_A), pytest.approx(MEAN_B)]
