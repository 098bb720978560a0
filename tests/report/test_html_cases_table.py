"""The run report's cases table and Overall intervals: failures first (errors, fails, then
passes; within each the farthest from the gold first), the case's name (the question) in the
first column and a long id shortened with the full id on hover, at most CASE_COLUMNS
per-case figures (the task's headline first, the rest named as in the results CSV), and
every Overall figure with an interval or the reason it has none."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import queryeval as qe
from queryeval.report.html import (
    CASE_COLUMNS,
    case_order,
    distance,
    render_report,
)
from queryeval.run.results import RunResults

EX = Path(__file__).resolve().parents[2] / "examples" / "retrieval"


def test_case_order_by_hand():
    values = [{"f1": 1.0}, {"f1": 0.5}, {}, {"f1": 0.0, "x": 1.0}, {"f1": 0.2}, {"f1": 1.0}]
    verdicts = ["pass", "fail", "error", "fail", "fail", "pass"]
    # distances: 0, 0.5, 1 (no rates), 0.5, 0.8, 0 -> error; fails 0.8, then the two 0.5 in
    # suite order; passes in suite order
    assert [distance(v) for v in values] == [0.0, 0.5, 1.0, 0.5, pytest.approx(0.8), 0.0]
    assert case_order(values, verdicts) == [2, 4, 1, 3, 0, 5]
    # a better-lower figure counts the other way round
    assert distance({"latency_rank": 0.25}, {"latency_rank"}) == 0.25


def _rows(page: str) -> list[str]:
    table = page[page.index('<table id="cases">'):].split("</table>")[0]
    return re.findall(r"<tr data-status=.*?</tr>", table)


@pytest.fixture(scope="module")
def sdmx_page(tmp_path_factory, examples_dir):
    """The sdmx example with every other case's selection emptied: fails among passes."""
    tmp = tmp_path_factory.mktemp("cases")
    lines = (examples_dir / "sdmx" / "responses.jsonl").read_text().splitlines()
    ids = list(dict.fromkeys(json.loads(x)["case_id"] for x in lines))
    emptied = set(ids[::2])
    with open(tmp / "r.jsonl", "w", encoding="utf-8") as fh:
        for line in lines:
            rec = json.loads(line)
            if rec["case_id"] in emptied:
                rec["indicator_selection"] = []
            fh.write(json.dumps(rec) + "\n")
    run = qe.evaluate(str(examples_dir / "sdmx" / "suite"), responses=str(tmp / "r.jsonl"),
                      out=tmp / "o", reports=False)
    loaded = RunResults.open(run.path)
    return loaded, render_report(loaded, resamples=200)


def test_failures_come_first_farthest_from_the_gold_first(sdmx_page):
    loaded, page = sdmx_page
    rows = _rows(page)
    attempts = loaded.attempts()
    by_id = {loaded.records[a.index]["case_id"]: a for a in attempts}
    shown = [re.search(r'data-case="([^"]+)"', r).group(1) for r in rows]
    assert sorted(shown) == sorted(by_id)
    verdicts = [by_id[c].verdict for c in shown]
    rank = {"error": 0, "fail": 1, "pass": 2}
    assert [rank[v] for v in verdicts] == sorted(rank[v] for v in verdicts)
    assert verdicts[0] == "fail" and verdicts[-1] == "pass"
    fails = [distance(dict(by_id[c].values)) for c, v in zip(shown, verdicts, strict=True) if v == "fail"]
    assert fails == sorted(fails, reverse=True) and len(fails) >= 12
    # the first column: the case's name, linked to its details
    first = loaded.records[by_id[shown[0]].index]
    assert re.search(r'<td class="case"><a href="#case-\d+">([^<]*)</a>', rows[0]).group(1) == \
        first["name"]


def test_long_ids_shortened_question_first_and_columns_capped(tmp_path):
    run = qe.evaluate(str(EX / "multi_questions.csv"), corpus=str(EX / "corpus.jsonl"),
                      responses=str(EX / "multi_responses.jsonl"), k=[1, 3, 5, 10],
                      out=tmp_path / "o", reports=False)
    loaded = RunResults.open(run.path)
    page = render_report(loaded, resamples=200)
    rows = _rows(page)
    rec = {r["case_id"]: r for r in loaded.records}
    for row in rows:
        cid = re.search(r'data-case="([^"]+)"', row).group(1)
        assert len(cid) == 36  # a CSV question's id
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
        assert cells[0] == rec[cid]["name"]  # the question, not the UUID
        assert f'<td class="id"><span title="{cid}">{cid[:8]}…</span></td>' in row
    head = page[page.index('<table id="cases">'):].split("</thead>")[0]
    cols = re.findall(r'<th class="num">([^<]+)</th>', head)
    assert cols[:4] == ["recall@10", "hit_rate@10", "mrr@10", "ndcg@10"]
    per_case = list(dict.fromkeys(k for a in loaded.attempts() for k in a.values))
    assert len(per_case) > CASE_COLUMNS and len(cols) == CASE_COLUMNS
    left = [k for k in per_case if k not in cols]
    assert f"{len(left)} more per-case figure(s) in results_&lt;id&gt;.csv: {', '.join(left)}" \
        in page


def test_every_overall_figure_has_an_interval_or_a_reason(tmp_path):
    run = qe.evaluate(str(EX / "multi_questions.csv"), corpus=str(EX / "corpus.jsonl"),
                      responses=str(EX / "multi_responses.jsonl"), k=[1, 10],
                      out=tmp_path / "o", reports=False)
    page = render_report(RunResults.open(run.path), resamples=200)
    overall = page.split("<h2>Overall")[1].split("</table>")[0]
    found = re.findall(
        r'<tr><td>([^<]+)</td><td class="num"[^>]*>([^<]*)</td><td class="num ci">(.*?)</td>',
        overall)
    rows = {name: ci for name, value, ci in found if value != "—"}  # a figure without a value
    assert {name for name, value, _ in found if value == "—"} == {
        "incorrect_retrievals_analysis.avg_score_incorrect"}  # no missed question scored
    for head in ("recall@10", "hit_rate@10", "mrr@10", "ndcg@10", "recall@1"):
        assert re.fullmatch(r"\[\d\.\d{4}, \d\.\d{4}\]", rows[head]), head
    assert rows["total_questions"] == '— <span class="why">a count</span>'
    assert rows["mrr@1"] == ('— <span class="why">no per-case values at k=1 in this batch '
                             '(see its k=1 batch)</span>')
    assert all(v.startswith("[") or '<span class="why">' in v for v in rows.values()), rows
