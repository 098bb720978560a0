"""The cross-feature matrix (issue 23): every run kind × every consumer gives the same
per-case values and aggregates, asserted against hand-computed expectations.

Run kinds: plain, repeats, cached (second run served from the call cache), resumed after a
kill (the log cut as SIGKILL leaves it, then ``queryeval run --resume``), with errors
(``on_error=score`` and ``skip``), Ray, and derived per-k batches (retrieval). Consumers:
console summary, metrics JSON, results CSV, xlsx report, HTML report, ``qe.Run.to_pandas``
and the run model, the two-run compare and the N-way compare in every format, the viewer
API, gates (``--fail-under``'s check) and ``qe.testing``. New run kinds and consumers join
the lists below. Later features (task kinds, readers, exporters) join the matrix in their own
``tests/test_matrix_<feature>.py`` through the shared checks of ``tests/helpers/matrix_checks.py``.

Six closed-form cases with one sub-answer each, so a case's ``all_correct`` is 1 or 0 per
attempt and ``psaq`` is the mean of the per-case means over the counted cases.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from fractions import Fraction
from pathlib import Path

import pytest

import queryeval as qe
from helpers.ci_lab import BOTS
from helpers.matrix_checks import build_kind, built_once, check_one_population, write_lab
from queryeval.errors import GateFailure

REPO = Path(__file__).resolve().parents[2]
N = 6
# the bots (BOTS, tests/helpers/ci_lab.py): plain is right on c0..c3; repeated: case i right on
# repeats 0 .. i % 4; failing: c4's call fails, c5 wrong

# hand-computed per-case all_correct (mean over attempts) and the counted cases
PLAIN = {"c0": 1.0, "c1": 1.0, "c2": 1.0, "c3": 1.0, "c4": 0.0, "c5": 0.0}
REPEATED = {"c0": Fraction(1, 4), "c1": Fraction(2, 4), "c2": Fraction(3, 4), "c3": Fraction(4, 4),
            "c4": Fraction(1, 4), "c5": Fraction(2, 4)}
EXPECTED = {  # kind -> (per-case values, counted case ids)
    "plain": (PLAIN, list(PLAIN)),
    "repeats": ({k: float(v) for k, v in REPEATED.items()}, list(PLAIN)),
    "cached": (PLAIN, list(PLAIN)),
    "resumed": (PLAIN, list(PLAIN)),
    "errors": (PLAIN, list(PLAIN)),
    "skip_errors": (PLAIN, ["c0", "c1", "c2", "c3", "c5"]),
    # repeats under on_error=skip, repeat 1 of c1, c3, c5 failing (PEFF, PEPP, PEFF): a case
    # with a failed attempt is left out of every mean (docs/repeats.md)
    "repeats_skip": ({"c0": 0.25, "c1": 0.25, "c2": 0.75, "c3": 0.75, "c4": 0.25, "c5": 0.25},
                     ["c0", "c2", "c4"]),
    "ray": (PLAIN, list(PLAIN)),
}
KINDS = list(EXPECTED)
AGG = {k: sum(v[c] for c in ids) / len(ids) for k, (v, ids) in EXPECTED.items()}
assert AGG["repeats"] == pytest.approx(3.25 / 6) and AGG["skip_errors"] == pytest.approx(0.8)
assert AGG["repeats_skip"] == pytest.approx(5 / 12)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("matrix")
    return write_lab(root, BOTS, {f"c{i}": {"answers": [{"name": "n", "value": str(i)}]}
                                  for i in range(N)})


def _spec(lab: Path, fn: str) -> str:
    return f"python:{lab / 'bots.py'}:{fn}"


def _build(kind: str, lab: Path) -> qe.Run:
    out = lab / "runs" / kind
    cases = str(lab / "cases.jsonl")
    common = {"out": out, "reports": True, "retries": 0, "backoff": 0.0, "name": kind}
    if kind == "ray":
        pytest.importorskip("ray")
        try:
            return qe.evaluate(cases, system=_spec(lab, "plain"), executor="ray", **common)
        except Exception as exc:  # noqa: BLE001 - a machine where Ray cannot start
            if "ray" in type(exc).__module__.lower() or "ray" in str(exc).lower():
                pytest.skip(f"Ray cannot start here: {str(exc)[:120]}")
            raise
    return build_kind(kind, cases, lab / "bots.py", lab / "runs", n=N)


@pytest.fixture(scope="module")
def built(lab):
    return built_once(lambda kind: _build(kind, lab))


def _file(run: qe.Run, prefix: str, suffix: str) -> Path:
    return run.folder / f"{prefix}_{run.batch_id}{suffix}"


def _per_case(rows: list[tuple[str, float]]) -> dict[str, float]:
    """Mean per case id of (case id, value) rows (attempt rows of a repeated run)."""
    acc: dict[str, list[float]] = {}
    for cid, v in rows:
        acc.setdefault(cid, []).append(float(v))
    return {k: sum(v) / len(v) for k, v in acc.items()}


# --- single-run consumers ---------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_run_model_and_to_pandas(built, kind):
    run, (values, counted) = built(kind), EXPECTED[kind]
    assert run.label == kind
    assert {c.case_id: c.means["all_correct"] for c in run.results.cases} == pytest.approx(values)
    assert [c.case_id for c in run.results.counted()] == counted
    df = run.to_pandas()
    assert df.groupby("id")["all_correct"].mean().to_dict() == pytest.approx(values)
    table = run.case_table()
    assert table["all_correct"].to_dict() == pytest.approx(values)
    if kind == "repeats":
        assert table["passes"].to_dict() == {k: int(v * 4) for k, v in REPEATED.items()}
        assert table.loc["c1", "verdict"] == "flaky" and table.loc["c3", "verdict"] == "pass"
    if kind in ("errors", "skip_errors"):
        assert table.loc["c4", "verdict"] == "error"
    if kind == "repeats_skip":
        assert {c.case_id: c.outcomes for c in run.results.cases} == {
            "c0": "PFFF", "c1": "PEFF", "c2": "PPPF", "c3": "PEPP", "c4": "PFFF", "c5": "PEFF"}


@pytest.mark.parametrize("kind", KINDS)
def test_every_figure_is_the_mean_of_the_per_case_population(built, kind):
    run, (_, counted) = built(kind), EXPECTED[kind]
    assert check_one_population(run, "all_correct", overall="psaq") == pytest.approx(AGG[kind])
    assert sorted(run.results.vector("all_correct")) == sorted(counted)


@pytest.mark.parametrize("kind", KINDS)
def test_console_and_metrics_json(built, kind):
    run = built(kind)
    doc = json.loads(_file(run, "metrics", ".json").read_text())
    assert doc["overall_metrics"]["psaq"] == pytest.approx(AGG[kind])
    assert run.overall["psaq"] == pytest.approx(AGG[kind])
    text = str(run)
    assert re.search(rf"psaq\s*│\s*{AGG[kind]:.4f}", text) and f"run: {kind}" in text
    assert kind in run._repr_html_()


@pytest.mark.parametrize("kind", KINDS)
def test_csv_and_xlsx(built, kind):
    from openpyxl import load_workbook

    run, (values, _) = built(kind), EXPECTED[kind]
    with open(_file(run, "results", ".csv"), newline="") as fh:
        rows = [(r["case_id"], r["all_correct"] or 0.0) for r in csv.DictReader(fh)]
    assert _per_case(rows) == pytest.approx(values)
    ws = load_workbook(_file(run, "report", ".xlsx"))["Overview"]
    head = [c.value for c in ws[1]]
    at = head.index("all correct")
    rows = [(r[0], r[at] or 0.0) for r in ws.iter_rows(min_row=2, values_only=True) if r[0]]
    assert _per_case(rows) == pytest.approx(values)


@pytest.mark.parametrize("kind", KINDS)
def test_html_report(built, kind):
    run, (_, counted) = built(kind), EXPECTED[kind]
    page = _file(run, "report", ".html").read_text()
    m = re.search(r'<td>psaq</td><td class="num" data-v="([^"]+)">[^<]*</td><td class="num ci">'
                  r'\[([0-9.]+), ([0-9.]+)\]</td><td class="num">(\d+)</td>', page)
    assert m, "no psaq row with its interval"
    assert float(m[1]) == pytest.approx(AGG[kind]) and int(m[4]) == len(counted)
    assert float(m[2]) <= AGG[kind] <= float(m[3])
    assert run.label in page


@pytest.mark.parametrize("kind", KINDS)
def test_gates(built, kind):
    run = built(kind)
    run.check_gates({"psaq": AGG[kind] - 1e-9})
    with pytest.raises(GateFailure, match="psaq"):
        run.check_gates({"psaq": AGG[kind] + 1e-6})


@pytest.mark.parametrize("kind", ["plain", "errors", "skip_errors", "repeats"])
def test_qe_testing(lab, kind):
    fn = {"plain": "plain", "errors": "failing", "skip_errors": "failing",
          "repeats": "repeated"}[kind]
    opts = {"on_error": "skip"} if kind == "skip_errors" else {}
    if kind == "repeats":  # forwarded to qe.evaluate like every option (issue 23 item 7)
        opts["repeats"] = 4
    suite, spec = str(lab / "cases.jsonl"), _spec(lab, fn)
    metrics = qe.testing.assert_suite(suite, system=spec, thresholds={"psaq": AGG[kind] - 1e-9},
                                      retries=0, **opts)
    assert metrics["overall_metrics"]["psaq"] == pytest.approx(AGG[kind])
    with pytest.raises(AssertionError, match="psaq"):
        qe.testing.assert_suite(suite, system=spec, thresholds={"psaq": AGG[kind] + 1e-6},
                                retries=0, **opts)


# --- comparisons ------------------------------------------------------------------------------
def _paired_means(kind: str) -> tuple[list[str], float, float]:
    """Cases paired between the plain run (A) and ``kind`` (B) and the two means over them."""
    values, counted = EXPECTED[kind]
    ids = [c for c in PLAIN if c in counted]
    return ids, sum(PLAIN[c] for c in ids) / len(ids), sum(values[c] for c in ids) / len(ids)


@pytest.mark.parametrize("kind", KINDS)
def test_two_run_compare_every_format(built, kind, tmp_path):
    from openpyxl import load_workbook

    base, run = built("plain"), built(kind)
    ids, mean_a, mean_b = _paired_means(kind)
    comp = qe.compare(base, run, resamples=200)
    m = comp.metric("all_correct")
    assert (m.n, m.mean_a, m.mean_b) == (len(ids), pytest.approx(mean_a), pytest.approx(mean_b))
    assert comp.labels == ["plain", kind]
    doc = json.loads(comp.to_json(tmp_path / "c.json").read_text())
    row = next(r for r in doc["metrics"] if r["metric"] == "all_correct")
    assert (row["n"], row["mean_a"], row["mean_b"]) == (len(ids), pytest.approx(mean_a),
                                                       pytest.approx(mean_b))
    ws = load_workbook(comp.to_xlsx(tmp_path / "c.xlsx"))["Summary"]
    line = next(r for r in ws.iter_rows(values_only=True) if r[0] == "all_correct")
    assert line[1:4] == (len(ids), pytest.approx(mean_a), pytest.approx(mean_b))
    page = comp.to_html(tmp_path / "c.html").read_text()
    assert f'data-v="{mean_b!r}"' in page or f"{mean_b:.4f}" in page
    assert re.search(rf"all_correct\s*│\s*{len(ids)}\s*│\s*{mean_a:.4f}\s*│\s*{mean_b:.4f}",
                     str(comp))


def test_nway_compare_every_format(built, tmp_path):
    runs = [built(k) for k in KINDS]
    common = [c for c in PLAIN if all(c in EXPECTED[k][1] for k in KINDS)]
    means = [sum(EXPECTED[k][0][c] for c in common) / len(common) for k in KINDS]
    comp = qe.compare(*runs, resamples=200)
    assert comp.labels == KINDS
    assert comp.overall.n["all_correct"] == len(common)
    assert comp.overall.means["all_correct"] == pytest.approx(means)
    files = {k: comp.write(tmp_path / f"n.{k}") for k in ("json", "csv", "md", "tex", "xlsx",
                                                          "html")}
    doc = json.loads(files["json"].read_text())
    row = next(r for r in doc["overall"]["metrics"] if r["metric"] == "all_correct")
    assert row["n"] == len(common) and row["means"] == pytest.approx(means)
    assert [r["cases"] for r in doc["runs"]] == [N] * len(KINDS)
    rows = list(csv.reader(io.StringIO(files["csv"].read_text())))
    line = next(r for r in rows if r[:3] == ["", "", "all_correct"])
    assert [float(line[4 + 4 * k]) for k in range(len(KINDS))] == pytest.approx(means)
    cells = " | ".join(f"{m:.4f}" for m in means)
    md = re.sub(r"\*\*|<sup>\w*</sup>| ▼", "", files["md"].read_text())
    assert f"| all\\_correct | {len(common)} | {cells} |" in md
    tex = re.sub(r"\\textbf\{([^}]*)\}|\$\^\{[^}]*\}\$", r"\1", files["tex"].read_text())
    assert f"all\\_correct & {len(common)} & " + " & ".join(f"{m:.4f}" for m in means) in tex
    from openpyxl import load_workbook

    ws = load_workbook(files["xlsx"])["Compare"]
    got = next(r for r in ws.iter_rows(values_only=True) if r[0] == "all_correct")
    assert list(got[2:2 + len(KINDS)]) == pytest.approx(means)
    page = files["html"].read_text()
    assert all(f"{m:.4f}" in page for m in means)


def test_viewer_api(built, lab):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from queryeval.viewer.server import create_app

    runs = {k: built(k) for k in KINDS}
    client = TestClient(create_app(lab / "runs", resamples=200), base_url="http://127.0.0.1")
    for kind, run in runs.items():
        doc = client.get(f"/api/runs/{run.batch_id}").json()
        assert doc["metrics"]["psaq"] == pytest.approx(AGG[kind]) and doc["label"] == kind
        row = next(m for m in doc["overall_rows"] if m["metric"] == "psaq")
        assert (row["n"], row["value"]) == (len(EXPECTED[kind][1]), pytest.approx(AGG[kind])), kind
        cases = client.get(f"/api/runs/{run.batch_id}/cases?limit=100").json()["rows"]
        got = {r["case_id"]: r["metrics"]["all_correct"] for r in cases}
        assert got == pytest.approx(EXPECTED[kind][0]), kind
    ids = "&".join(f"run={runs[k].batch_id}" for k in KINDS)
    doc = client.get(f"/api/compare?{ids}").json()
    common = [c for c in PLAIN if all(c in EXPECTED[k][1] for k in KINDS)]
    row = next(r for r in doc["overall"]["metrics"] if r["metric"] == "all_correct")
    assert row["n"] == len(common)
    assert row["means"] == pytest.approx(
        [sum(EXPECTED[k][0][c] for c in common) / len(common) for k in KINDS])


# --- structural: one reduction of attempts ----------------------------------------------------
def test_every_consumer_reads_the_one_reduction(built, lab, monkeypatch, tmp_path):
    """Per-case values, n and verdicts are computed in one place (run.results: reduce_cases,
    CaseResult, Attempt): with that place patched to sentinels, every consumer's per-case
    figures change with it. A consumer that re-derives them (its own grouping, means or pass
    rule) keeps the true values and fails here."""
    import dataclasses

    from queryeval.report import html
    from queryeval.report.case_rows import case_rows
    from queryeval.run import finish, repeats
    from queryeval.run import results as model
    from queryeval.run.log import RunLog
    from queryeval.tasks.base import get_task

    # the duplicate reductions are gone
    assert not any(hasattr(html, n) for n in ("verdict", "PASS_METRICS", "_counted"))
    assert not any(hasattr(repeats, n) for n in ("case_means", "outcome_letter"))

    c0 = {"id": "c0", "conversation": [{"role": "user", "content": "question 0?",
                                        "target": {"answers": [{"name": "n", "value": "0"}]}}]}
    qe.testing.check_case(c0, system=_spec(lab, "plain"), retries=0)  # c0 passes
    folder = tmp_path / "run"
    shutil.copytree(built("repeats").folder, folder)  # finish below rewrites its CSV
    batch = next(folder.glob("batch_*.json"))
    real = model.reduce_cases
    monkeypatch.setattr(model, "reduce_cases", lambda task, records: [
        dataclasses.replace(c, means={k: 0.375 for k in c.means}) for c in real(task, records)])
    monkeypatch.setattr(model.CaseResult, "verdict", property(lambda self: "flaky"))
    monkeypatch.setattr(model.CaseResult, "passes", property(lambda self: 1))
    monkeypatch.setattr(model.Attempt, "verdict", property(lambda self: "fail"))

    # the viewer's case rows
    rows = case_rows(model.RunResults.open(batch))
    assert [r["metrics"]["all_correct"] for r in rows] == [0.375] * N
    assert {r["verdict"] for r in rows} == {"flaky"}
    assert {a["verdict"] for r in rows for a in r["attempts"]} == {"fail"}
    assert {r["outcomes"] for r in rows} == {"FFFF"} and {r["pass_rate"] for r in rows} == {0.25}
    # the HTML report: each attempt's verdict and the CIs over the cases' means
    fig = html.report_figures(batch, resamples=50)
    assert set(fig.verdicts) == {"fail"} and len(fig.verdicts) == 4 * N
    assert (fig.cis["all_correct"].mean, fig.cis["all_correct"].n) == (0.375, N)
    # the repeats section of finish (and repeats_<id>.csv), from the record stream
    log = RunLog.open(batch)
    task = get_task(log.batch["task"], log.batch["evaluation_config"].get("task_options") or {})
    section = finish._repeat_section(log, task, log.scan_records())["repeats"]
    assert section["overall"]["all_correct_mean"]["mean"] == 0.375
    assert section["overall"]["pass_rate"]["mean"] == 0.25
    assert section["flaky_cases"] == N
    assert {f["outcomes"] for f in section["flaky"]} == {"FFFF"}
    with open(log.paths.repeats_csv, newline="") as fh:
        assert {r["all_correct_mean"] for r in csv.DictReader(fh)} == {"0.375"}
    # qe.testing: the case's verdict is the model's
    with pytest.raises(AssertionError, match="all_correct = 0.375"):
        qe.testing.check_case(c0, system=_spec(lab, "plain"), retries=0)


# --- derived per-k batches (retrieval) --------------------------------------------------------
@pytest.fixture(scope="module")
def per_k(tmp_path_factory):
    folder = tmp_path_factory.mktemp("perk")
    suite = REPO / "examples" / "retrieval"
    shutil.copy(suite / "questions.csv", folder / "questions.csv")
    run = qe.evaluate(str(folder / "questions.csv"), corpus=str(suite / "corpus.jsonl"),
                      k=[1, 5], out=folder / "runs", reports=True)
    # the oracle: recall@k of a case is 1 when the expected chunk's rank is at most k
    ranks = {r["case_id"]: (r.get("evaluation_result") or {}).get("rank_if_found")
             for r in run.records}
    expect = {k: {c: float(rk is not None and rk <= k) for c, rk in ranks.items()} for k in (1, 5)}
    return folder, run, expect


def test_per_k_batches_agree_everywhere(per_k, tmp_path):
    folder, run, expect = per_k
    (derived,) = run.derived
    assert run.label == derived.label == "bm25"
    for k, batch in ((5, run), (1, derived)):
        vals = expect[k]
        mean = sum(vals.values()) / len(vals)
        assert batch.overall[f"recall@{k}"] == pytest.approx(mean)
        assert batch.results.vector(f"recall@{k}") == pytest.approx(vals)
        assert batch.to_pandas().set_index("id")[f"recall@{k}"].to_dict() == pytest.approx(vals)
        batch.check_gates({f"recall@{k}": mean - 1e-9})
        with pytest.raises(GateFailure):
            batch.check_gates({f"recall@{k}": mean + 1e-6})
        page = _file(batch, "report", ".html")
        if not page.exists():  # a derived batch gets its report on demand
            batch.report(xlsx=False, resamples=200)
        assert f"{mean:.4f}" in page.read_text()
    # the main run's recall@1 per case (smaller k) is the derived batch's
    assert run.results.vector("recall@1") == pytest.approx(expect[1])
    comp = qe.compare(derived, run, metrics=["recall@1"], resamples=200)
    m = comp.metric("recall@1")
    assert (m.n, m.mean_a, m.mean_b, m.diff) == (len(expect[1]), pytest.approx(
        sum(expect[1].values()) / len(expect[1])), pytest.approx(m.mean_a), 0.0)
    multi = qe.compare(derived, run, pairs="all", resamples=200)
    assert multi.overall.means["recall@1"] == pytest.approx([m.mean_a, m.mean_a])
    from starlette.testclient import TestClient

    from queryeval.viewer.server import create_app

    client = TestClient(create_app(folder / "runs", resamples=200), base_url="http://127.0.0.1")
    doc = client.get(f"/api/runs/{derived.batch_id}").json()
    assert doc["metrics"]["recall@1"] == pytest.approx(m.mean_a)
    metrics = qe.testing.assert_suite(str(folder / "questions.csv"),
                                      thresholds={"recall@5": sum(expect[5].values()) / len(
                                          expect[5]) - 1e-9},
                                      corpus=str(REPO / "examples/retrieval/corpus.jsonl"),
                                      k=[1, 5])
    assert metrics["overall_metrics"]["recall@1"] == pytest.approx(m.mean_a)
