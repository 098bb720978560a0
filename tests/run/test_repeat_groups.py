"""With ``--repeats``, a group that exists in some attempts only (a free-form case decided by
the ladder in one attempt, left inconclusive in the others) had its counts averaged over the
attempts where it existed: 1 case "inconclusive" in the table by deciding rule while the
overall ``inconclusive`` said 0.67, and the rule table's cases no longer summed to the cases
(a newcomer's audit; each test failed on the code before its fix). A group absent from an
attempt has 0 cases there; its rates are left out (undefined), as before."""

from __future__ import annotations

import json

import pytest

import queryeval as qe
from queryeval.run.repeats import combine_aggregates


def test_a_group_absent_from_one_repeat_counts_zero_there():
    a = {"overall_metrics": {"inconclusive": 1},
         "group_metrics": {"decided_by": {"exact": {"cases": 1, "passed": 1, "pass_rate": 1.0},
                                          "inconclusive": {"cases": 1, "passed": 0,
                                                           "pass_rate": 0.0}}}}
    b = {"overall_metrics": {"inconclusive": 0},
         "group_metrics": {"decided_by": {"exact": {"cases": 2, "passed": 2,
                                                    "pass_rate": 1.0}}}}
    out = combine_aggregates([a, a, b])
    groups = out["group_metrics"]["decided_by"]
    assert groups["inconclusive"] == {"cases": pytest.approx(2 / 3), "passed": 0,
                                      "pass_rate": 0.0}
    assert groups["exact"]["cases"] == pytest.approx(4 / 3)
    assert out["overall_metrics"]["inconclusive"] == pytest.approx(2 / 3)
    # absent from the first repeat: the same
    out = combine_aggregates([b, a, a])
    assert out["group_metrics"]["decided_by"]["inconclusive"]["cases"] == pytest.approx(2 / 3)


def test_freeform_rule_table_with_repeats_sums_to_the_cases(tmp_path):
    cases = [("capital", "Paris", ["paris."] * 3),
             ("reason", "a supply shortage", ["parts were short", "a supply shortage",
                                              "parts were short"]),
             ("count", "42", ["There are 41 stations."] * 3)]
    suite = [{"id": cid, "conversation": [{"role": "user", "content": f"{cid}?",
              "target": {"reference": {"answer": ref}}}]} for cid, ref, _ in cases]
    answers = {cid: resp for cid, _, resp in cases}

    def bot(request):
        return {"response": answers[request["case_id"]][request["repeat"]]}

    run = qe.evaluate(suite, system=bot, repeats=3, out=tmp_path / "runs", reports=False)
    overall = run.overall
    groups = json.loads(run.path.with_name(run.path.name.replace("batch_", "metrics_"))
                        .read_text())["group_metrics"]["decided_by"]
    # per attempt: capital exact, count number (fail), reason inconclusive twice, exact once
    assert overall["inconclusive"] == pytest.approx(2 / 3)
    assert groups["inconclusive"]["cases"] == pytest.approx(2 / 3)
    assert groups["exact"] == {"cases": pytest.approx(4 / 3), "passed": pytest.approx(4 / 3),
                               "pass_rate": 1.0}
    assert sum(g["cases"] for g in groups.values()) == pytest.approx(overall["cases"])
    assert sum(g["passed"] for g in groups.values()) == pytest.approx(overall["passed"])
    assert overall["pass_rate"] == pytest.approx((1 + 1 / 3 + 0) / 3)


def test_the_console_note_writes_a_mean_count_as_a_figure(tmp_path, capsys):
    # printed "0.6666666666666666 cases inconclusive" with --repeats
    from queryeval.cli.app import main

    suite = tmp_path / "cases.jsonl"
    suite.write_text(json.dumps({"id": "reason", "conversation": [{
        "role": "user", "content": "Why?", "target": {"reference": {
            "answer": "a supply shortage"}}}]}) + "\n")
    (tmp_path / "bot.py").write_text(
        "def answer(request):\n"
        "    return {'response': 'a supply shortage' if request['repeat'] == 1 else 'no'}\n")
    code = main(["run", str(suite), "--system", f"python:{tmp_path / 'bot.py'}:answer",
                 "--repeats", "3", "--out", str(tmp_path / "runs"), "--no-report"])
    text = " ".join((capsys.readouterr().out).split())
    assert code == 0
    assert "0.666667 case(s) inconclusive: no rule decided them" in text
    assert "0.6666666666666666" not in text


def test_the_freeform_workbook_says_which_attempt_each_row_is(tmp_path):
    # with --repeats the Overview sheet had three identical-looking rows per case and no
    # repeat column (the results CSV has one)
    import csv

    from openpyxl import load_workbook

    suite = [{"id": "count", "conversation": [{"role": "user", "content": "How many?",
              "target": {"reference": {"answer": "42"}}}]}]
    answers = ["42", "41", "42"]
    run = qe.evaluate(suite, system=lambda r: {"response": answers[r["repeat"]]}, repeats=3,
                      out=tmp_path / "runs", reports=True)
    sheet = load_workbook(run.folder / f"report_{run.batch_id}.xlsx")["Overview"]
    rows = list(sheet.iter_rows(values_only=True))
    head = list(rows[0])
    got = [(r[head.index("repeat")], r[head.index("response")], r[head.index("passed")])
           for r in rows[1:]]
    assert head[:2] == ["case_id", "repeat"]
    assert got == [(0, "42", 1), (1, "41", 0), (2, "42", 1)]
    with open(run.folder / f"results_{run.batch_id}.csv", newline="") as fh:
        assert [(int(r["repeat"]), r["response"]) for r in csv.DictReader(fh)] == \
            [(g[0], g[1]) for g in got]
