"""The names figures are shown under (``report.html_figures.own_names``, read by the HTML
report, the notebook repr, the viewer and ``Run.groups``): retrieval leads with recall@k,
hit_rate@k, MRR and nDCG; the seed's ``recall_at_k`` (the hit rate) stays in the metrics
file under its name but is shown as ``recall_at_k (hit rate)``; a count is a whole number,
and one averaged over ``--repeats`` is named a mean; a run with derived batches says which
batch to give ``queryeval compare`` (console, HTML, viewer)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import queryeval as qe
from helpers.viewer_headline import flaky_retriever
from queryeval.report.html import overall_rows, render_report, report_figures
from queryeval.report.html_figures import batch_to_compare, own_names
from queryeval.run.results import RunResults
from queryeval.tasks.content import Figures, bare_name

EX = Path(__file__).resolve().parents[2] / "examples" / "retrieval"
REPO = Path(__file__).resolve().parents[2]
HEAD = ["recall@10", "hit_rate@10", "mrr@10", "ndcg@10"]


@pytest.fixture(scope="module")
def multi(tmp_path_factory):
    """Several relevant chunks per question: the hit rate (recall_at_k) is not recall@10."""
    out = tmp_path_factory.mktemp("multi") / "o"
    run = qe.evaluate(str(EX / "multi_questions.csv"), corpus=str(EX / "corpus.jsonl"),
                      responses=str(EX / "multi_responses.jsonl"), k=[1, 3, 5, 10], out=out,
                      name="multi", reports=False)
    return run


def test_own_names_by_hand():
    kinds = Figures(aliases={"recall_at_k": "recall@{k}"}, labels={"recall_at_k": "hit rate"},
                    headline=("recall@{k}", "hit_rate@{k}"), counts=("cases", "hits"))
    shown = own_names({"recall_at_k": 1.0, "cases": 5.0, "hits": 32.5, "hit_rate@10": 1.0,
                       "map@10": 0.6, "recall@10": 0.7}, kinds, {"k": 10})
    assert list(shown.items()) == [("recall@10", 0.7), ("hit_rate@10", 1.0), ("cases", 5),
                                   ("hits (mean over repeats)", 32.5), ("map@10", 0.6),
                                   ("recall_at_k (hit rate)", 1.0)]
    assert isinstance(shown["cases"], int)
    assert kinds.kind("hits (mean over repeats)") == "count"
    assert bare_name("recall_at_k (hit rate)") == "recall_at_k"
    # equal to its own name's figure: listed once, under that name
    assert own_names({"recall_at_k": 0.7, "recall@10": 0.7}, kinds, {"k": 10}) == {"recall@10": 0.7}


def test_retrieval_leads_with_recall_hit_rate_mrr_ndcg_and_labels_the_hit_rate(multi):
    overall = multi.metrics["overall_metrics"]
    assert overall["recall_at_k"] == overall["hit_rate@10"] == 1.0 != overall["recall@10"]
    loaded = RunResults.open(multi.path)
    fig = report_figures(loaded, resamples=200)
    rows = overall_rows(loaded, fig.metrics, fig.cis)
    names = [k for k, _, _ in rows]
    assert names[:4] == HEAD
    assert "recall_at_k" not in names and "recall_at_k (hit rate)" in names
    assert dict((k, v) for k, v, _ in rows)["recall_at_k (hit rate)"] == overall["recall_at_k"]
    assert all(ci is not None for k, _, ci in rows[:4])  # the headline has its intervals
    page = render_report(loaded, resamples=200)
    cells = re.findall(r"<td>([^<]*)</td>", page.split("<h2>Overall")[1].split("</table>")[0])
    assert cells[:4] == HEAD and "recall_at_k (hit rate)" in cells
    html = multi._repr_html_()
    assert "recall_at_k (hit rate)" in html and ">recall_at_k<" not in html
    # the metrics file keeps the seed's name
    doc = json.loads((multi.folder / f"metrics_{multi.batch_id}.json").read_text())
    assert "recall_at_k" in doc["overall_metrics"]


def test_counts_under_repeats_are_whole_or_named_means(tmp_path):
    run = qe.evaluate(str(EX / "questions.csv"), system=flaky_retriever,
                      corpus=str(EX / "corpus.jsonl"), k=[10], repeats=3, out=tmp_path / "o",
                      reports=False)
    overall = run.metrics["overall_metrics"]
    mean = overall["successful_retrievals"]
    assert isinstance(mean, float) and not mean.is_integer()  # the mean over 3 repeats
    loaded = RunResults.open(run.path)
    fig = report_figures(loaded, resamples=200)
    shown = {k: v for k, v, _ in overall_rows(loaded, fig.metrics, fig.cis)}
    assert shown["successful_retrievals (mean over repeats)"] == mean
    assert "successful_retrievals" not in shown
    assert shown["total_questions"] == 67 and isinstance(shown["total_questions"], int)
    page = render_report(loaded, resamples=200)
    assert "<td>successful_retrievals (mean over repeats)</td>" in page
    overall_html = page.split("<h2>Overall")[1].split("</table>")[0]
    assert re.search(r"<td>total_questions</td><td class=\"num\"[^>]*>67</td>", overall_html)


def test_derived_batches_say_which_batch_to_compare(tmp_path, multi):
    derived = multi.batch["derived_batches"]
    assert len(derived) == 3
    which = batch_to_compare(multi.batch_id, derived)
    assert f"give queryeval compare batch_{multi.batch_id}.json" in which
    page = render_report(RunResults.open(multi.path), resamples=100)
    assert which in page
    child = next(iter(derived.values()))
    child_page = render_report(RunResults.open(multi.folder / f"batch_{child}.json"),
                               resamples=100)
    assert f"derived from run {multi.batch_id}" in child_page
    assert batch_to_compare("x", {}) is None
    proc = subprocess.run([sys.executable, "-m", "queryeval", "run", str(EX / "multi_questions.csv"),
                           "--corpus", str(EX / "corpus.jsonl"), "--responses",
                           str(EX / "multi_responses.jsonl"), "--k", "1,10", "--out",
                           str(tmp_path / "cli"), "--no-report"], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    batch = next(Path(p).name for p in (tmp_path / "cli").rglob("batch_*.json")
                 if "derived_from" not in json.loads(Path(p).read_text()))
    assert sum(x.startswith("derived batch ") for x in lines) == 1
    assert any(x.startswith(f"to compare this run, give queryeval compare {batch}") for x in lines)
    # the viewer's run page says it too
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from queryeval.viewer.server import create_app

    client = TestClient(create_app(multi.folder, resamples=100), base_url="http://127.0.0.1")
    assert client.get(f"/api/runs/{multi.batch_id}").json()["to_compare"] == which


def test_group_count_columns_under_repeats_are_one_column_named_a_mean(tmp_path):
    """Free-form cases decided by different rules in different attempts: the decided_by
    group's ``cases`` are means over the 3 repeats (exact 4/3, inconclusive 2/3, number 1):
    one column ``cases (mean over repeats)`` on every surface, ``number``'s 1 included."""
    cases = [("capital", "Paris", ["paris."] * 3),
             ("reason", "a supply shortage", ["parts were short", "a supply shortage",
                                              "parts were short"]),
             ("count", "42", ["There are 41 stations."] * 3)]
    suite = [{"id": cid, "conversation": [{"role": "user", "content": f"{cid}?",
              "target": {"reference": {"answer": ref}}}]} for cid, ref, _ in cases]
    answers = {cid: resp for cid, _, resp in cases}
    run = qe.evaluate(suite, system=lambda r: {"response": answers[r["case_id"]][r["repeat"]]},
                      repeats=3, out=tmp_path / "runs", reports=False)
    stored = run.metrics["group_metrics"]["decided_by"]
    assert stored["exact"]["cases"] == pytest.approx(4 / 3)  # the metrics file as it is
    frame = run.groups["decided_by"]
    assert "cases" not in frame.columns
    col = frame["cases (mean over repeats)"]
    assert col.to_dict() == pytest.approx({"exact": 4 / 3, "inconclusive": 2 / 3, "number": 1.0})
    page = render_report(RunResults.open(run.path), resamples=100)
    table = page.split("table by decided_by")[1].split("</table>")[0]
    assert table.count("cases (mean over repeats)") == 1 and "<th>cases</th>" not in table
    text = str(run)  # the console summary (a fixed width: render_text)
    rule_table = text.split("By deciding rule")[1].split("\n\n")[0]
    assert "cases (mean over repeats)" in rule_table and "passed (mean over repeats)" in rule_table
    assert re.search(r"│ number +│ +1 │", rule_table)  # a whole value in a mean column
