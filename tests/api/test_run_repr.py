"""The notebook view of a Run (``Run._repr_html_``) leads with what a reader wants first: the
pass/fail counts, the headline figures with the HTML report's intervals, and the worst cases
(errors, fails, then the farthest from the gold) with the reason each did not pass."""

from __future__ import annotations

import json
import re

import queryeval as qe
from queryeval.report.html import report_figures
from queryeval.report.junit import case_outcome
from queryeval.run.results import RunResults


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def test_repr_leads_with_counts_headline_intervals_and_worst_cases(tmp_path, examples_dir):
    lines = (examples_dir / "sdmx" / "responses.jsonl").read_text().splitlines()
    ids = list(dict.fromkeys(json.loads(x)["case_id"] for x in lines))
    emptied = ids[:3]  # three more cases miss every term: macro_recall 0
    with open(tmp_path / "r.jsonl", "w", encoding="utf-8") as fh:
        for line in lines:
            rec = json.loads(line)
            if rec["case_id"] in emptied:
                rec["indicator_selection"] = []
            fh.write(json.dumps(rec) + "\n")
    run = qe.evaluate(str(examples_dir / "sdmx" / "suite"), responses=str(tmp_path / "r.jsonl"),
                      out=tmp_path / "o", name="three-silent", reports=False)
    loaded = RunResults.open(run.path)
    verdicts = [c.verdict for c in loaded.cases]
    n_fail = verdicts.count("fail")
    assert len(verdicts) == 23 and verdicts.count("error") == 0 and n_fail >= 3
    page = run._repr_html_()
    text = _text(page)
    # 1. the counts, first
    assert text.index(f"23 cases : {23 - n_fail} pass, {n_fail} fail, 0 error") < \
        text.index("headline")
    # 2. the headline figures with the HTML report's intervals (10,000 resamples, seed 0)
    fig = report_figures(loaded)
    for metric in ("macro_precision", "macro_recall"):
        ci = fig.cis[metric]
        value = fig.metrics["overall_metrics"][metric]
        assert f"{metric} {value:.4f} [{ci.low:.4f}, {ci.high:.4f}]" in text
    # 3. the worst cases: the silent ones (recall and precision 0) first, with their reason
    worst = re.findall(r"<tr><td>[^<]*</td><td><code>([^<]+)</code></td><td>(\w+)</td>"
                       r"<td>([^<]*)</td></tr>", page)
    assert len(worst) == min(5, n_fail)
    assert {cid for cid, _, _ in worst[:3]} == set(emptied)
    by_id = {c.case_id: c for c in loaded.cases}
    for cid, verdict, why in worst:
        assert verdict == "fail"
        full = case_outcome(loaded.records, by_id[cid])[1]  # the JUnit report's reason
        assert why.replace("&quot;", '"') == (full if len(full) <= 200 else full[:199] + "…")
    assert text.index("worst cases") < text.index("every figure")
