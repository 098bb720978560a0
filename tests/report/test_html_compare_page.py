"""The compare HTML pages (``queryeval compare … --html``): flipped cases grouped by case (one
row per case listing the metrics that moved, each once), the warnings folded into one note
with every warning in full on demand, and for N runs each run's Δ against the baseline with
its paired interval, read from the compare model."""

from __future__ import annotations

import re
from html import unescape

import pytest

from helpers.compare_nway import _run
from helpers.sdmx_variants import CANADA, FRANCE, GERMANY, USA
from helpers.sdmx_variants import variant_responses as _responses
from queryeval.report.compare import compare_many, compare_runs
from queryeval.report.html_compare import render_comparison, render_nway
from queryeval.report.html_page import fmt
from queryeval.run.results import RunResults

R = 300


@pytest.fixture(scope="module")
def runs(tmp_path_factory, examples_dir):
    tmp = tmp_path_factory.mktemp("cmp-page")
    a = _run(examples_dir, tmp / "a", examples_dir / "sdmx" / "responses.jsonl")
    records = RunResults.open(a).records
    b = _run(examples_dir, tmp / "b", _responses(records, tmp / "b.jsonl",
                                                 fix={FRANCE, GERMANY, CANADA}, empty={USA}))
    c = _run(examples_dir, tmp / "c", _responses(records, tmp / "c.jsonl",
                                                 empty={r["case_id"] for r in records}))
    return [a, b, c]


def _flip_rows(page: str) -> list[list[str]]:
    table = page[page.index('<table id="cases">'):].split("</table>")[0]
    body = table.split("<tbody>")[1]
    return [[unescape(re.sub(r"<br>", "\n", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"<tr data-status=.*?</tr>", body)]


def test_two_run_flips_one_row_per_case(runs):
    comp = compare_runs(runs[0], runs[1], resamples=R)
    want: dict[str, dict[str, set[str]]] = {}
    for m in comp.metrics:
        for kind, items in (("improved", m.improved), ("regressed", m.regressed)):
            for f in items:
                want.setdefault(f.case_id, {"improved": set(), "regressed": set()})[kind].add(
                    f"{m.metric} {fmt(f.a)} → {fmt(f.b)}")
    flips = sum(len(m.improved) + len(m.regressed) for m in comp.metrics)
    page = render_comparison(comp)
    rows = _flip_rows(page)
    assert [r[0] for r in rows] == list(want)  # each case once
    assert len(rows) == len(want) == 4 < flips  # USA, FRANCE, GERMANY, CANADA, on 2 metrics
    for case_id, _name, change, improved, regressed in rows:
        assert set(filter(None, improved.split("\n"))) == want[case_id]["improved"]
        assert set(filter(None, regressed.split("\n"))) == want[case_id]["regressed"]
        assert change == ("regressed" if case_id == USA else "improved")
    assert '<option value="regressed">regressed (1)</option>' in page


def test_nway_deltas_and_grouped_flips_from_the_model(runs):
    comp = compare_many(runs, resamples=R)
    page = render_nway(comp)
    table = page[page.index('<table class="deltas">'):].split("</table>")[0]
    shown = [[unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
             for row in re.findall(r"<tr><td>.*?</tr>", table)]
    verdicts = {(v["run_b"], v["metric"]): v["verdict"] for v in comp.verdicts()
                if v["run_a"] == 0}
    want = []
    for (i, j), results in comp.pair_results.items():
        assert i == 0
        for m in results:
            want.append([f"{'abc'[j]} − a", m.metric, str(m.n), fmt(m.diff),
                         f"[{fmt(m.ci_low)}, {fmt(m.ci_high)}]"])
            assert verdicts.get((j, m.metric), "not tested") in shown[len(want) - 1][6]
    assert [r[:5] for r in shown] == want
    assert any(r[6] == "worse" for r in shown if r[0] == "c − a")  # c empties every case
    rows = _flip_rows(page)
    for pair in ("b", "c"):
        ids = [r[1] for r in rows if r[0] == f"a → {pair}"]
        assert len(ids) == len(set(ids))  # one row per case and pair
    assert len([r for r in rows if r[0] == "a → b"]) == 4


def test_warnings_fold_into_one_note(runs):
    comp = compare_runs(runs[0], runs[0], resamples=R)  # a run against itself: a warning
    assert comp.warnings
    page = render_comparison(comp)
    assert '<p class="warning">' not in page
    box = page[page.index('<details class="warnings" id="warnings">'):].split("</details>")[0]
    assert f"{len(comp.warnings)} warning(s)" in box
    assert [unescape(w) for w in re.findall(r'<li class="warning">(.*?)</li>', box)] == \
        comp.warnings
