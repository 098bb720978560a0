"""N-way compare: three real runs of the example suite (A the baseline, B fixes three cases
and breaks one, C answers nothing), TREC run files, and the outputs.

Oracles: the two-run compare (the pairwise raw p-values must be identical), a brute-force
enumeration of every sign flip, Holm computed by hand, ranx's per-query scores and its
paired t-test, and hand-computed means."""

from __future__ import annotations

import csv
import io
import itertools
import json
from pathlib import Path

import pytest
from openpyxl import load_workbook

from helpers.compare_nway import _run  # noqa: E402,F401
from helpers.sdmx_variants import CANADA, FRANCE, GERMANY, USA
from helpers.sdmx_variants import variant_responses as _responses
from queryeval.cli.app import main
from queryeval.errors import ConfigError, GateFailure
from queryeval.report.compare import check_regression, compare_many, compare_runs, compare_trec
from queryeval.report.compare_output import csv_rows, to_latex, to_markdown, write
from queryeval.report.html_compare import render_nway
from queryeval.run.results import RunResults, case_metrics

R = 2000  # resamples (the 23-case tests are Monte Carlo; the groups are exact)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, examples_dir) -> list[Path]:
    tmp = tmp_path_factory.mktemp("nway")
    a = _run(examples_dir, tmp / "a", examples_dir / "sdmx" / "responses.jsonl")
    records = RunResults.open(a).records
    b = _run(examples_dir, tmp / "b", _responses(records, tmp / "b.jsonl",
                                                 fix={FRANCE, GERMANY, CANADA}, empty={USA}))
    c = _run(examples_dir, tmp / "c", _responses(records, tmp / "c.jsonl",
                                                 empty={r["case_id"] for r in records}))
    return [a, b, c]


@pytest.fixture(scope="module")
def comp_all(runs):
    return compare_many(runs, pairs="all", resamples=R)


def test_pairwise_p_values_identical_to_two_run_compare(runs, comp_all):
    assert len(comp_all.overall.tests) == 3 * 2  # 3 pairs x 2 metrics
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        two = compare_runs(runs[i], runs[j], resamples=R)
        for m in two.metrics:
            t = comp_all.overall.test(m.metric, i, j)
            assert (t.i, t.j) == (i, j)
            assert t.result.p_randomization == m.p_randomization  # identical, not approx
            assert t.result.p_ttest == m.p_ttest
            assert (t.result.ci_low, t.result.ci_high, t.result.diff) == (m.ci_low, m.ci_high,
                                                                          m.diff)
            assert [f.case_id for f in t.result.regressed] == [f.case_id for f in m.regressed]
        # the per-pair Holm across metrics is the two-run compare's too
        assert [x.p_holm for x in comp_all.pair_results[(i, j)]] == [m.p_holm for m in two.metrics]


def test_holm_across_every_test_of_the_table(comp_all):
    tests = comp_all.overall.tests
    raw = [t.result.p_randomization for t in tests]
    order = sorted(range(len(raw)), key=lambda k: raw[k])
    expected, running = [0.0] * len(raw), 0.0
    for rank, k in enumerate(order):  # Holm by hand: max over (m - rank) * p, capped at 1
        running = max(running, min(1.0, (len(raw) - rank) * raw[k]))
        expected[k] = running
    assert [t.p_adjusted for t in tests] == pytest.approx(expected)
    # A vs B: differences +1, +1, -1 (recall) -> p = 1; A vs C and B vs C: tiny p
    assert comp_all.overall.test("macro_recall", 0, 1).p_adjusted == 1.0
    # A vs C: 17 cases differ, all one way: exact over 2**17 flips, p = 2 / 2**17
    assert comp_all.overall.test("macro_recall", 0, 2).result.p_randomization == 2 / 2**17


def test_means_best_and_marks(comp_all):
    t = comp_all.overall
    # B: A's 19.5/23 plus France and Germany fixed (+2) minus USA (-1); C: 3 absent-target cases
    assert t.means["macro_recall"] == pytest.approx([19.5 / 23, 20.5 / 23, 3 / 23])
    assert t.best("macro_recall") == [1]
    assert t.marks("macro_recall", 0, 0.05) == ([2], [])
    assert t.marks("macro_recall", 1, 0.05) == ([2], [])
    assert t.marks("macro_recall", 2, 0.05) == ([], [0, 1])
    cpi = next(g for g in comp_all.groups["tag"] if g.member == "cpi")
    assert cpi.n["macro_recall"] == 5 and cpi.best("macro_recall") == [0, 1]  # a tie


def _brute_force_p(diffs: list[float]) -> float:
    obs = abs(sum(diffs))
    hits = sum(abs(sum(s * d for s, d in zip(signs, diffs, strict=True))) >= obs - 1e-9
               for signs in itertools.product((1, -1), repeat=len(diffs)))
    return hits / 2 ** len(diffs)


@pytest.mark.parametrize("tag", ["cpi", "weo"])
def test_group_p_values_match_brute_force_enumeration(runs, comp_all, tag):
    a, c = RunResults.open(runs[0]), RunResults.open(runs[2])
    by_c = {r["case_id"]: r for r in c.records}
    table = next(g for g in comp_all.groups["tag"] if g.member == tag)
    for metric in ("macro_precision", "macro_recall"):
        diffs = [case_metrics(c.task, by_c[r["case_id"]])[metric]
                 - case_metrics(a.task, r)[metric] for r in a.records if tag in r["tags"]]
        test = table.test(metric, 0, 2)
        assert test.result.randomization_method == "exact" and test.result.n == len(diffs)
        assert test.result.p_randomization == pytest.approx(_brute_force_p(diffs), abs=1e-15)
    assert len(diffs) == {"cpi": 5, "weo": 13}[tag]


def test_baseline_mode_and_gate(runs):
    comp = compare_many(runs, resamples=R)
    assert sorted({(t.i, t.j) for t in comp.overall.tests}) == [(0, 1), (0, 2)]
    assert [(t.j, t.result.metric) for t in comp.regressions()] == [
        (2, "macro_precision"), (2, "macro_recall")]
    with pytest.raises(GateFailure, match=r"c \(c.jsonl\) macro_precision"):
        check_regression(comp)
    check_regression(compare_many(runs[:2], resamples=R))  # B is not worse: no error
    with pytest.raises(ConfigError, match="at least two runs"):
        compare_many(runs[:1])
    with pytest.raises(ConfigError, match="unknown metric"):
        compare_many(runs, ["nope"])


def test_exports(runs, comp_all, tmp_path):
    md = to_markdown(comp_all)
    assert "| macro\\_recall | 23 | 0.8478<sup>c</sup> | **0.8913**<sup>c</sup> | 0.1304 ▼ |" in md
    tex = to_latex(comp_all)
    assert "\\toprule" in tex and "\\bottomrule" in tex
    assert ("macro\\_recall & 23 & 0.8478$^{c}$ & \\textbf{0.8913}$^{c}$ & "
            "0.1304$^{\\downarrow}$ \\\\") in tex
    rows = list(csv.reader(io.StringIO(write(comp_all, tmp_path / "t.csv", "csv").read_text())))
    recall = next(r for r in rows if r[:3] == ["", "", "macro_recall"])
    assert float(recall[4]) == pytest.approx(19.5 / 23) and recall[9] == "yes"  # b best
    assert recall[6] == "c" and recall[15] == "yes"  # a beats c; c worse than baseline
    doc = json.loads(write(comp_all, tmp_path / "t.json", "json").read_text())
    assert doc["overall"]["metrics"][1]["best"] == [1]
    assert [r["run"] for r in doc["regressions"]] == [2, 2]
    wb = load_workbook(write(comp_all, tmp_path / "t.xlsx", "xlsx"))
    ws = wb["Compare"]
    cells = {(c.row, c.column): c.value for row in ws.iter_rows() for c in row}
    row = min(r for (r, c), v in cells.items() if c == 1 and v == "macro_recall")  # overall
    assert cells[(row, 4)] == pytest.approx(20.5 / 23)
    assert ws.cell(row, 4).font.bold and not ws.cell(row, 3).font.bold
    assert cells[(3, 1)].startswith("b (") and "worse on 0" in cells[(3, 1)]  # verdict first
    assert cells[(4, 1)].startswith("c (") and "worse on 2" in cells[(4, 1)]
    assert wb["Tests"].max_row == 1 + sum(len(t.tests) for t in comp_all.tables())


def test_hostile_text_is_neutralised(runs, tmp_path):
    comp = compare_many(runs, resamples=R)
    comp.labels[1] = "<script>alert(1)</script>"
    comp.groups["tag"][0].member = '=HYPERLINK("http://x")'
    html = render_nway(comp)
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    rows = csv_rows(comp)
    assert any(r[1] == "'=HYPERLINK(\"http://x\")" for r in rows)
    assert "\\textbackslash{}" in to_latex(_with_label(comp, "a\\b"))
    wb = load_workbook(write(comp, tmp_path / "h.xlsx", "xlsx"))
    found = [c for row in wb["Compare"].iter_rows() for c in row
             if isinstance(c.value, str) and c.value.startswith("tag = =HYPERLINK")]
    assert found and all(c.data_type == "s" for c in found)
    assert "| a: a\\\\b | b: \\<script\\>alert(1)\\</script\\> |" in to_markdown(comp)


def _with_label(comp, label):
    comp.labels[0] = label
    return comp


def test_cli_three_runs(runs, tmp_path, capsys):
    args = ["compare", *map(str, runs), "--resamples", str(R), "--markdown",
            str(tmp_path / "o.md"), "--html", str(tmp_path / "o.html")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "0.8913" in out and (tmp_path / "o.md").is_file()
    assert main([*args, "--fail-on-regression"]) == 1
    assert "macro_recall" in capsys.readouterr().err
    assert main(["compare", *map(str, runs[:2]), "--resamples", "200", "--fail-on-regression",
                 "-q"]) == 0
    assert main(["compare", str(runs[0])]) == 2


# --- TREC run files ---------------------------------------------------------------------------
DOCS = [f"d{k}" for k in range(6)]


def _trec(tmp: Path) -> tuple[Path, Path, Path]:
    """8 queries, relevant docs d0 and d3; run A ranks d0 first on even queries, run B puts
    the relevant documents lower on queries 1-3 and higher on 5-7."""
    qrels = tmp / "qrels.txt"
    qrels.write_text("".join(f"q{q} 0 {d} 1\n" for q in range(8) for d in ("d0", "d3")))
    orders_a = {q: (DOCS if q % 2 == 0 else DOCS[::-1]) for q in range(8)}
    orders_b = {q: (DOCS[1:] + DOCS[:1] if q in (1, 2, 3) else
                    ["d3", "d0", "d1", "d2", "d4", "d5"] if q in (5, 6, 7) else orders_a[q])
                for q in range(8)}
    paths = []
    for name, orders in (("a", orders_a), ("b", orders_b)):
        p = tmp / f"run_{name}.txt"
        p.write_text("".join(f"q{q} Q0 {d} {r + 1} {10 - r} {name}\n"
                             for q in range(8) for r, d in enumerate(orders[q])))
        paths.append(p)
    return qrels, paths[0], paths[1]


def test_trec_compare_brute_force(tmp_path):
    qrels, ra, rb = _trec(tmp_path)
    comp = compare_trec(qrels, [ra, rb], ["ndcg@10", "recall@1"])
    t = comp.overall.test("recall@1", 0, 1).result
    # recall@1 per query: A = 1/2 on even queries (d0 first), 0 on odd ones (d5 first);
    # B: q1-3 put d1 first (0), q5-7 put d3 first (1/2), the rest as A
    a = [0.5 if q % 2 == 0 else 0.0 for q in range(8)]
    b = [0.0 if q in (1, 2, 3) else 0.5 if q in (5, 6, 7) else a[q] for q in range(8)]
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    assert t.n == 8 and t.mean_a == pytest.approx(sum(a) / 8)
    assert t.mean_b == pytest.approx(sum(b) / 8)
    assert t.randomization_method == "exact"
    assert t.p_randomization == pytest.approx(_brute_force_p(diffs), abs=1e-15)


@pytest.mark.slow
def test_trec_compare_matches_ranx(tmp_path):
    ranx = pytest.importorskip("ranx")
    qrels, ra, rb = _trec(tmp_path)
    comp = compare_trec(qrels, [ra, rb], ["ndcg@10"])
    q = ranx.Qrels.from_file(str(qrels), kind="trec")
    runs = [ranx.Run.from_file(str(p), kind="trec") for p in (ra, rb)]
    runs[0].name, runs[1].name = "a", "b"
    per = [ranx.evaluate(q, r, "ndcg@10", return_mean=False) for r in runs]
    diffs = [float(y - x) for x, y in zip(per[0], per[1], strict=True)]
    t = comp.overall.test("ndcg@10", 0, 1).result
    assert t.mean_a == pytest.approx(float(per[0].mean()))
    assert t.mean_b == pytest.approx(float(per[1].mean()))
    assert t.p_randomization == pytest.approx(_brute_force_p(diffs), abs=1e-12)
    report = ranx.compare(q, runs, ["ndcg@10"], stat_test="student").to_dict()
    assert t.p_ttest == pytest.approx(float(report["a"]["comparisons"]["b"]["ndcg@10"]),
                                      rel=1e-9)


def test_python_api(runs, tmp_path):
    import queryeval as qe

    cmp = qe.compare(*runs, resamples=R)
    assert type(cmp).__name__ == "MultiComparison"
    assert cmp.to_pandas().loc["macro_recall"].tolist() == pytest.approx(
        [19.5 / 23, 20.5 / 23, 3 / 23])
    assert cmp.regressions == [(2, "macro_precision"), (2, "macro_recall")]
    with pytest.raises(GateFailure):
        cmp.check()
    assert cmp.write(tmp_path / "t.md").read_text(encoding="utf-8") == cmp.to_markdown()
    # two runs: the two-run Comparison, metrics still accepted positionally
    two = qe.compare(runs[0], runs[1], ["macro_recall"], resamples=R)
    assert [m.metric for m in two.metrics] == ["macro_recall"]
    as_table = qe.compare(runs[0], runs[1], pairs="baseline", resamples=R)
    assert as_table.overall.test("macro_recall", 0, 1).result.p_randomization == \
        two.metric("macro_recall").p_randomization


def test_cli_bad_inputs_exit_2(runs, tmp_path, capsys):
    qrels, ra, _ = _trec(tmp_path)
    cases = [
        (["--qrels", str(qrels), str(ra), str(tmp_path / "missing.txt")], "missing.txt"),
        (["--qrels", str(qrels), str(ra), str(ra), "-m", "bogus@3"], "unknown metric 'bogus@3'"),
        ([str(runs[0]), str(ra), str(runs[1])], "not a run log"),
    ]
    for args, message in cases:
        assert main(["compare", *args]) == 2, args
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err


def test_cli_names_alpha_and_a_missing_path(runs, tmp_path, capsys):
    missing = tmp_path / "nothere.json"
    cases = [
        (["compare", str(runs[0]), str(runs[1]), "--alpha", "2"], "--alpha must be between 0"),
        (["compare", *map(str, runs), "--alpha", "0"], "--alpha must be between 0"),
        (["compare", str(runs[0]), str(missing)], f"{missing}: no such file or folder"),
        (["compare", *map(str, runs), str(missing)], f"{missing}: no such file or folder"),
        (["report", str(tmp_path / "nothere")], "nothere: no such file or folder"),
    ]
    for args, message in cases:
        assert main(args) == 2, args
        err = " ".join(capsys.readouterr().err.split())
        assert message in err and "not a run log" not in err and "Traceback" not in err, err


def test_to_pandas_one_column_per_run_even_with_equal_labels(runs, tmp_path):
    """Three runs whose labels match (each recorded from a file named responses.jsonl)."""
    import shutil

    import queryeval as qe

    same = []
    for k, run in enumerate(runs):
        dest = tmp_path / f"r{k}"
        shutil.copytree(run.parent, dest)
        batch = dest / run.name
        doc = json.loads(batch.read_text(encoding="utf-8"))
        doc["evaluation_config"]["responses"] = f"/data/{k}/responses.jsonl"
        doc.pop("label", None)  # a run from before labels were stored: derived from the config
        batch.write_text(json.dumps(doc), encoding="utf-8")
        same.append(batch)
    cmp = qe.compare(*same, resamples=200)
    assert cmp.labels == ["responses.jsonl"] * 3
    df = cmp.to_pandas()
    assert list(df.columns) == ["a: responses.jsonl", "b: responses.jsonl", "c: responses.jsonl"]
    assert df.loc["macro_recall"].tolist() == pytest.approx([19.5 / 23, 20.5 / 23, 3 / 23])


# --- group sections: one membership rule --------------------------------------------------------
def test_distinct_groups_drops_empty_and_duplicate_members():
    from queryeval.report.compare import distinct_groups

    members = {"tag": {"handbook": {"c1", "c2"}, "x": {"c1"}, "y": {"c3"}},
               "dataset": {"handbook": {"c1", "c2"}, "other": {"c3"}},
               "concept": {"empty": set()}}
    assert distinct_groups(members) == [
        ("dataset", "handbook", {"c1", "c2"}, ("tag",)),
        ("dataset", "other", {"c3"}, ("tag = y",)),
        ("tag", "x", {"c1"}, ())]


def test_retrieval_compare_shows_each_group_once(tmp_path, capsys):
    """The retrieval suite puts its dataset into the tags too: ``tag = Riverside Benefits``
    repeated ``dataset = Riverside Benefits`` in every N-way format."""
    suite = Path(__file__).resolve().parents[2] / "examples" / "retrieval"
    batches = []
    for folder, k in (("a", "10"), ("b", "3")):
        assert main(["run", str(suite / "questions.csv"), "--corpus", str(suite / "corpus.jsonl"),
                     "--out", str(tmp_path / folder), "--k", k, "--no-report", "-q"]) == 0
        batches.append(str(next((tmp_path / folder).rglob("batch_*.json"))))
    capsys.readouterr()
    datasets = sorted({r["dataset"] for r in csv.DictReader(
        open(suite / "questions.csv", encoding="utf-8")) if r["dataset"]})
    assert len(datasets) >= 2
    assert main(["compare", *batches, "--pairs", "all", "--resamples", "50",
                 "--markdown", str(tmp_path / "c.md"), "--csv", str(tmp_path / "c.csv"),
                 "--json", str(tmp_path / "c.json"), "--html", str(tmp_path / "c.html")]) == 0
    console = capsys.readouterr().out
    doc = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    scopes = [(g["key"], g["member"], g.get("also")) for ts in doc["groups"].values() for g in ts]
    assert scopes == [("dataset", d, ["tag"]) for d in datasets]
    assert all(m["n"] > 0 for ts in doc["groups"].values() for g in ts for m in g["metrics"])
    md = (tmp_path / "c.md").read_text(encoding="utf-8")
    page = (tmp_path / "c.html").read_text(encoding="utf-8")
    for d in datasets:
        assert md.count(f"### dataset = {d} (also tag)") == 1
        assert f"dataset = {d} (also tag)" in page
    for text in (console, md, page):
        assert "tag = " not in text.replace("(also tag)", "")
    rows = list(csv.reader(io.StringIO((tmp_path / "c.csv").read_text(encoding="utf-8"))))
    assert {r[0] for r in rows[1:]} <= {"", "dataset"}
