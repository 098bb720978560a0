"""``queryeval compare RUN ... --cases FILE`` / ``qe.compare(..., cases=...)``: a comparison on
the platinum suite of ``queryeval audit --write-platinum`` only, and how each run's mean and
rank move (report/platinum.py), on three runs whose figures are worked out by hand."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import queryeval as qe
from queryeval.cli.app import main
from queryeval.report.platinum import platinum_shift

GOLDS = {"c1": ("Which x are there?", "SELECT x FROM t ORDER BY x"),
         "c2": ("How many rows?", "SELECT count(*) FROM t"),
         "c3": ("Smallest x?", "SELECT min(x) FROM t"),
         "c4": ("smallest x", "SELECT min(x) AS m FROM t")}  # a duplicate of c3
RIGHT = {cid: gold for cid, (_q, gold) in GOLDS.items()}
# exact_match_f1 per case: A 1 1 0 0, B 1 0 1 1, C 0 0 1 0
RUNS = {"A": {"c3": "SELECT 7", "c4": "SELECT 7"},
        "B": {"c2": "SELECT 7"},
        "C": {"c1": "SELECT 7", "c2": "SELECT 7", "c4": "SELECT 7"}}


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory) -> tuple[Path, list[Path]]:
    tmp = tmp_path_factory.mktemp("platinum")
    db = tmp / "t.sqlite"
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1), (2), (3);")
    con.commit()
    con.close()
    suite = tmp / "s.yaml"
    suite.write_text("".join(
        f"---\nid: {cid}\nconversation:\n- role: user\n  content: {json.dumps(q)}\n"
        f"  target:\n    query:\n      gold: {json.dumps(g)}\n"
        for cid, (q, g) in GOLDS.items()), encoding="utf-8")
    platinum = tmp / "platinum.yaml"
    report = qe.audit(suite, source=db, write_platinum=platinum)
    assert report.flagged() == {"c3", "c4"}  # duplicates
    runs = []
    for name, wrong in RUNS.items():
        responses = tmp / f"{name}.jsonl"
        responses.write_text("".join(json.dumps({"case_id": cid, "query": wrong.get(cid, q)})
                                     + "\n" for cid, q in RIGHT.items()), encoding="utf-8")
        assert main(["run", str(suite), "--database", str(db), "--responses", str(responses),
                     "--out", str(tmp / name), "--name", name, "-q", "--no-report"]) == 0
        runs.append(next((tmp / name).rglob("batch_*.json")))
    return platinum, runs


def test_compare_on_the_platinum_cases_pairs_only_them(three_runs):
    platinum, runs = three_runs
    full = qe.compare(runs[0], runs[1], metrics=["exact_match_f1"])
    part = qe.compare(runs[0], runs[1], metrics=["exact_match_f1"], cases=platinum)
    assert (full.paired, part.paired) == (4, 2)
    # B - A: full 0.75 - 0.5; on c1, c2: 0.5 - 1
    assert full.metric("exact_match_f1").diff == pytest.approx(0.25)
    assert part.metric("exact_match_f1").diff == pytest.approx(-0.5)
    many = qe.compare(*runs, metrics=["exact_match_f1"], cases=["c1", "c2"])
    assert many.overall.means["exact_match_f1"] == pytest.approx([1.0, 0.5, 0.0])


def test_the_rankings_move_with_spearman(three_runs, capsys):
    platinum, runs = three_runs
    shift = platinum_shift(runs, {"c1", "c2"}, "exact_match_f1")
    assert [(r["full"], r["subset"]) for r in shift["runs"]] == [
        (0.5, 1.0), (0.75, 0.5), (0.25, 0.0)]
    assert [(r["full_rank"], r["subset_rank"]) for r in shift["runs"]] == [
        (2, 1), (1, 2), (3, 3)]
    # ranks (ascending) full 2 3 1, subset 3 2 1: d^2 = 2, rho = 1 - 6 * 2 / (3 * 8)
    assert shift["spearman"] == pytest.approx(0.5)
    assert main(["compare", *map(str, runs), "--cases", str(platinum), "--metric",
                 "exact_match_f1"]) in (None, 0)
    text = " ".join(capsys.readouterr().out.split())
    assert "--cases: exact_match_f1 on 2 of 4 cases" in text
    assert "Spearman between the rankings: 0.500" in text


def test_cases_none_of_which_the_runs_have_is_one_clear_error(three_runs, tmp_path, capsys):
    _platinum, runs = three_runs
    other = tmp_path / "o.yaml"
    other.write_text("id: zz\nconversation:\n- role: user\n  content: q\n  target:\n"
                     "    query:\n      gold: SELECT 1\n", encoding="utf-8")
    assert main(["compare", str(runs[0]), str(runs[1]), "--cases", str(other)]) == 2
    assert "none of the 1 case(s) of --cases is in both runs" in capsys.readouterr().err


def test_the_shift_table_is_in_the_json_and_the_html(three_runs, tmp_path):
    platinum, runs = three_runs
    out_json, out_html = tmp_path / "c.json", tmp_path / "c.html"
    assert main(["compare", *map(str, runs), "--cases", str(platinum), "--metric",
                 "exact_match_f1", "--json", str(out_json), "--html", str(out_html),
                 "-q"]) in (None, 0)
    shift = json.loads(out_json.read_text(encoding="utf-8"))["platinum_shift"]
    assert (shift["metric"], shift["full_cases"], shift["subset_cases"]) == (
        "exact_match_f1", 4, 2)
    # hand-computed above: means full 0.5 0.75 0.25, subset 1 0.5 0; shift = subset - full
    assert [(r["label"], r["full"], r["subset"], r["shift"], r["full_rank"], r["subset_rank"])
            for r in shift["runs"]] == [("A", 0.5, 1.0, 0.5, 2, 1), ("B", 0.75, 0.5, -0.25, 1, 2),
                                        ("C", 0.25, 0.0, -0.25, 3, 3)]
    assert shift["spearman"] == pytest.approx(0.5)
    page = out_html.read_text(encoding="utf-8")
    section = page[page.index('<section id="platinum-shift">'):]
    assert section.index("</section>") < section.index("</body>")
    cells = [c.split("<")[0] for c in section.split("<td>")[1:]]
    assert cells == ["A", "0.5000", "2", "1.0000", "1", "+0.5000",
                     "B", "0.7500", "1", "0.5000", "2", "-0.2500",
                     "C", "0.2500", "3", "0.0000", "3", "-0.2500"]
    assert "Spearman between the rankings: 0.500" in section
    # two runs: the same table (Spearman undefined), through qe.compare too
    two = qe.compare(runs[0], runs[1], metrics=["exact_match_f1"], cases=platinum)
    assert [r["shift"] for r in two.platinum["runs"]] == [0.5, -0.25]
    assert two.platinum["spearman"] is None
    doc = json.loads(two.to_json(tmp_path / "two.json").read_text(encoding="utf-8"))
    assert doc["platinum_shift"] == two.platinum
    assert "undefined (fewer than 3 runs" in two.to_html(tmp_path / "two.html").read_text(
        encoding="utf-8")
    # without --cases: no table anywhere
    plain = qe.compare(runs[0], runs[1], metrics=["exact_match_f1"])
    assert plain.platinum is None
    assert "platinum_shift" not in json.loads(
        plain.to_json(tmp_path / "p.json").read_text(encoding="utf-8"))
