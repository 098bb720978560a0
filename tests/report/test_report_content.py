"""What the reports SAY, per task: every k of a retrieval run (console, HTML, xlsx), the named
built-in retriever, the expected chunk's text; query rows side by side with the mapping and
the matched rows; answers' sub-answer lines, missing responses, CIs and integer counts;
charts that keep every series and give n; folding of large runs; the SDMX xlsx result
column; the error banner. Every test includes a hostile name and checks it is escaped."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import openpyxl
import pytest
from rich.console import Console

from queryeval.metrics import stats
from queryeval.report.console import render_summary
from queryeval.report.html import error_banner, render_report
from queryeval.report.run_reports import write_run_reports
from queryeval.run.config import RunConfig
from queryeval.run.evaluate import start_run
from queryeval.run.results import RunResults
from queryeval.suite.retrieval import read_corpus
from queryeval.tasks.content import Figures
from queryeval.tasks.query.task import result_sample
from queryeval.tasks.retrieval.task import RetrievalTask

EVIL = "<script>alert(1)</script>"
EVIL_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def _console_text(renderables) -> str:
    console = Console(file=io.StringIO(), width=250, color_system=None)
    for r in renderables if isinstance(renderables, list) else [renderables]:
        console.print(r)
    return console.file.getvalue()


def _report_text(batch: Path) -> str:
    return render_report(batch, resamples=300, seed=0)


# --- retrieval ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def retrieval_run(tmp_path_factory, examples_dir):
    tmp = tmp_path_factory.mktemp("ret")
    result = start_run(RunConfig(
        suite=str(examples_dir / "retrieval" / "questions.csv"), out=str(tmp / "out"),
        task_options={"k": [1, 5, 10], "corpus": str(examples_dir / "retrieval" / "corpus.jsonl")}), reporter=write_run_reports)
    return result


def _derived_recalls(result) -> dict[int, float]:
    folder = result.log.paths.folder
    out = {}
    for batch_id in result.log.batch["derived_batches"].values():
        m = json.loads((folder / f"metrics_{batch_id}.json").read_text())
        out[m["overall_metrics"]["k"]] = m["overall_metrics"]["recall_at_k"]
    return out


def test_retrieval_run_reports_every_k(retrieval_run, examples_dir):
    result = retrieval_run
    o = result.metrics["overall_metrics"]
    derived = _derived_recalls(result)
    assert sorted(derived) == [1, 5]
    # the run's own figures at each smaller k equal the derived batch's (the oracle) ...
    assert o["recall@1"] == derived[1] and o["recall@5"] == derived[5]
    # ... and the share of questions whose chunk is within the first k (no min_score here)
    ranks = [r["evaluation_result"]["rank_if_found"] for r in result.records]
    for k in (1, 5, 10):
        assert o[f"recall@{k}"] == pytest.approx(sum(1 for x in ranks if x and x <= k) / len(ranks))
    assert o["mrr@1"] == o["recall@1"]  # at k = 1 the reciprocal rank is 1 or 0
    assert o["recall@1"] < o["recall@5"] < o["recall@10"]
    by_ds = result.metrics["group_metrics"]["dataset"]
    for ds, fig in by_ds.items():
        rs = [r for r in result.records if r["dataset"] == ds]
        assert fig["recall@5"] == pytest.approx(
            sum(1 for r in rs if (r["evaluation_result"]["rank_if_found"] or 99) <= 5) / len(rs))
    # console: one row per k, not only the largest
    text = _console_text(render_summary(result.task.summary(result.metrics), result.metrics))
    for k in (1, 5, 10):
        assert re.search(rf"recall@{k}\s+│\s+{o[f'recall@{k}']:.4f}", text), text
    assert "Overall (k=1, 5, 10)" in text


def test_retrieval_single_k_keeps_the_reference_layout():
    task = RetrievalTask({"k": [5]})
    assert task.smaller_ks() == []
    m = task.aggregate([])
    assert "recall@1" not in m["overall_metrics"] and m["group_metrics"] == {"dataset": {}}


def test_a_users_own_retriever_is_not_recorded_as_bm25(tmp_path, examples_dir):
    """A run of recorded responses (or --system) records no built-in retriever: its batch said
    ``retriever: bm25``; a built-in run without --retriever still reports bm25."""
    ret = examples_dir / "retrieval"
    result = start_run(RunConfig(suite=str(ret / "questions.csv"), responses=str(ret / "responses.jsonl"),
                                 out=str(tmp_path), reports=False, task_options={"k": [5]}))
    batch = json.loads(result.log.paths.batch.read_text())
    assert batch["evaluation_config"]["task_options"]["retriever"] is None
    assert f"<th>system</th><td>recorded: {ret / 'responses.jsonl'}</td>" in _report_text(
        result.log.paths.batch)
    assert RetrievalTask({}).system_label() == "bm25"
    assert RetrievalTask({"retriever": "bm25"}).system_label() == "bm25"


def test_retrieval_html_xlsx_and_system_label(retrieval_run, examples_dir):
    result = retrieval_run
    o = result.metrics["overall_metrics"]
    text = _report_text(result.log.paths.batch)
    # header names the built-in retriever, not "recorded: None"
    assert "<th>system</th><td>built-in: bm25</td>" in text and "recorded: None" not in text
    assert RetrievalTask({"retriever": "dense"}).system_label() == "dense: all-MiniLM-L6-v2"
    assert RetrievalTask({"retriever": "dense", "model": "/m/e5"}).system_label() == "dense: /m/e5"
    # a "By k" table with each k's recall, and the curve
    section = text[text.index("<h2>By k</h2>"):text.index("<h2>By group</h2>")]
    assert "<th class=\"num\">@1</th>" in section and "<th class=\"num\">@10</th>" in section
    for k in (1, 5, 10):
        assert f'data-v="{o[f"recall@{k}"]!r}"' in section
    # every k gets its CI (per-case recall at each k), and the status is decided at k = 10
    records = list(result.records)
    by_id = sorted(records, key=lambda r: str(r["case_id"]))  # the cases' bootstrap order
    for k in (1, 5):
        hits = [1.0 if (r["evaluation_result"]["rank_if_found"] or 99) <= k else 0.0 for r in by_id]
        # the questions of one document form a cluster: whole documents are resampled
        index = stats.cluster_index([r.get("cluster") for r in by_id])
        assert index is not None and index.max() + 1 == len({r["cluster"] for r in by_id})
        ci = stats.cluster_bootstrap_ci(hits, index, resamples=300, seed=0)
        row = re.search(rf"<td>recall@{k}</td>.*?</tr>", text).group(0)
        assert f"[{ci.low:.4f}, {ci.high:.4f}]" in row
    n_pass = sum(r["evaluation_result"]["correct_chunk_retrieved"] for r in records)
    assert n_pass == 59 and f'<option value="pass">pass ({n_pass})</option>' in text
    assert section.count('<svg class="chart line"') == 1 and section.count("<circle") == 9
    # group charts give each dataset's n
    assert "Riverside Benefits (n=33)" in text and "Lakeside Transit (n=34)" in text
    # the xlsx: one row per question, found@k per k agreeing with recall@k
    wb = openpyxl.load_workbook(result.log.paths.report_xlsx)
    ws = wb["Questions"]
    head = [c.value for c in ws[1]]
    assert head[6:9] == ["found@1", "found@5", "found@10"]
    rows = list(ws.iter_rows(min_row=2, values_only=True))
    assert len(rows) == 67
    for j, k in enumerate((1, 5, 10), start=6):
        assert sum(r[j] == "yes" for r in rows) == round(o[f"recall@{k}"] * 67)
    st = [r for r in wb["Statistics"].iter_rows(values_only=True) if r[0] == "(all)"]
    assert st == [("(all)", 67, o["recall@1"], o["recall@5"], o["recall@10"])]


def test_retrieval_html_overall_lists_each_figure_once_and_k_in_the_heading(retrieval_run):
    """The metrics file keeps ``recall_at_k`` (= ``recall@10``) and ``k``; the Overall table
    lists recall@10 once and no ``k`` row, the heading says ``k = 10``; in the By k chart no
    two value labels at the same k overlap and equal values are labelled once."""
    o = retrieval_run.metrics["overall_metrics"]
    assert o["k"] == 10 and o["recall_at_k"] == o["recall@10"]
    text = _report_text(retrieval_run.log.paths.batch)
    assert "<h2>Overall (k = 10)</h2>" in text
    overall = text[text.index("<h2>Overall"):text.index("<h2>By k</h2>")]
    names = re.findall(r"<tr><td>([^<]+)</td>", overall)
    assert "recall_at_k" not in names and "k" not in names
    assert names.count("recall@10") == 1 and len(names) == len(set(names))
    section = text[text.index("<h2>By k</h2>"):text.index("<h2>By group</h2>")]
    labels = re.findall(r'<text x="([\d.]+)" y="([\d.]+)" class="val">([\d.]+)</text>', section)
    by_x: dict[str, list[tuple[float, str]]] = {}
    for x, y, v in labels:
        by_x.setdefault(x, []).append((float(y), v))
    assert len(by_x) == 3
    for placed in by_x.values():
        ys = sorted(y for y, _ in placed)
        assert all(b - a >= 12 for a, b in zip(ys, ys[1:], strict=False)), placed
        texts = [v for _, v in placed]
        assert len(texts) == len(set(texts)), placed
    # at k = 1 recall, mrr and ndcg are all 0.627 (one relevant chunk): one label
    assert f"{o['recall@1']:.3f}" == f"{o['mrr@1']:.3f}" == f"{o['ndcg@1']:.3f}"
    assert len(by_x[min(by_x, key=float)]) == 1


def test_retrieval_failure_shows_the_expected_chunk_text(retrieval_run, examples_dir):
    result = retrieval_run
    corpus = {c.chunk_id: c.content for c in read_corpus(examples_dir / "retrieval" / "corpus.jsonl")}
    missed = next(r for r in result.records if not r["evaluation_result"]["correct_chunk_retrieved"])
    text = _report_text(result.log.paths.batch)
    i = text.index(f"<code>{missed['case_id']}</code>")
    section = text[i:text.index('id="case-', i)]
    from html import escape

    want = escape(corpus[missed["expected_chunk"]["chunk_id"]][:600])
    assert want in section
    assert "not in the top 10" in section
    first = missed["retrieved_chunks"][0]
    assert escape(first["content"][:100]) in section  # the retrieved chunks' text too


def test_retrieval_details_without_corpus_say_so():
    from queryeval.report.html_details import render_details

    rec = {"question": EVIL, "k": 5, "expected_chunk": {"chunk_id": "c9", "content_hash": "ab",
                                                         "name": EVIL, "source": "d"},
           "evaluation_result": {"rank_if_found": None}, "retrieved_chunks": []}
    html = render_details("retrieval", RetrievalTask({"k": [5]}), rec)
    assert EVIL not in html and html.count(EVIL_ESCAPED) == 2
    assert "its text is not in the log" in html and "nothing retrieved" in html
    # a chunk min_score dropped (kept in all_retrieved_chunks) still gives the expected text
    rec["all_retrieved_chunks"] = [{"chunk_id": "c9", "score": 0.1, "content": "the <answer>",
                                    "content_hash": "AB"}]
    html = render_details("retrieval", RetrievalTask({"k": [5], "min_score": 0.5}), rec)
    assert '<blockquote class="expected"><span class="wrap">the &lt;answer&gt;</span>' in html


# --- query --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def query_run(tmp_path_factory, examples_dir):
    tmp = tmp_path_factory.mktemp("qry")
    return start_run(RunConfig(suite=str(examples_dir / "sparql" / "suite.yaml"),
                               responses=str(examples_dir / "sparql" / "predictions.jsonl"),
                               out=str(tmp / "out"), reports=False,
                               task_options={"store_dir": str(tmp / "store")}))


def test_result_sample_marks_matched_rows_under_the_mapping():
    def sparql(vars_, rows):
        return {"head": {"vars": vars_}, "results": {"bindings": [
            {v: {"type": "literal", "value": x} for v, x in zip(vars_, row, strict=True) if x is not None}
            for row in rows]}}

    gold = sparql(["a", "b"], [["1", "x"], ["2", "y"], ["3", "z"]])
    pred = sparql(["q", "p"], [["y", "2"], ["x", "9"], [None, "3"], ["z", "3"]])
    s = result_sample(gold, pred, ["p", "q"], limit=3)
    assert s["gold"] == {"columns": ["a", "b"], "total": 3,
                         "rows": [["1", "x"], ["2", "y"], ["3", "z"]], "matched": [False, True, True]}
    assert s["predicted"] == {"columns": ["q", "p"], "total": 4,
                              "rows": [["y", "2"], ["x", "9"], [None, "3"]],
                              "matched": [True, False, False]}
    # no mapping (e.g. the predicted table has too few columns): nothing is marked
    assert result_sample(gold, pred, None)["gold"]["matched"] == [False] * 3
    assert result_sample({"columns": ["n"], "rows": [[3]]}, None, None)["gold"]["rows"] == [["3"]]


def test_query_details_rows_side_by_side_and_tag_groups(query_run):
    rec = next(r for r in query_run.records if r["case_id"] == "zone-temps")
    sample = rec["result_sample"]
    # gold: 5 (AHU, zone sensor) pairs; predicted: every AHU × every sensor (2 × 5), of which
    # exactly the 5 gold pairs match
    assert (sample["gold"]["total"], sample["predicted"]["total"]) == (5, 10)
    assert sample["gold"]["matched"] == [True] * 5
    assert sum(sample["predicted"]["matched"]) == 5 and len(sample["predicted"]["rows"]) == 10
    assert sample["mapping"] == ["ahu", "s"]
    text = _report_text(query_run.log.paths.batch)
    i = text.index("<code>zone-temps</code>")
    section = text[i:text.index("<code>", i + 30)]
    assert "gold ← predicted): ahu ← ahu, sensor ← s" in section
    assert section.count('<td class="miss">✗</td>') == 5 and section.count('<td class="hit">✓</td>') == 10
    assert "(5 rows)" in section and "(10 rows)" in section
    # grouped by tag like the other tasks, with hand-computed means
    tags = query_run.metrics["group_metrics"]["tag"]
    assert tags["relationships"]["cases"] == 4 and tags["points"]["cases"] == 3
    assert tags["points"]["arity_f1"] == pytest.approx((1.0 + 0.8 + 2 / 3) / 3)
    assert "<h3>by tag (4)</h3>" in text and "points (n=3)" in text
    # long reasons wrap
    assert ".reason,.wrap{white-space:pre-wrap" in text


def test_query_details_escape_rows_and_reasons():
    from queryeval.report.html_details import query_details

    rec = {"question": EVIL, "gold_query": "SELECT 1", "predicted_query": EVIL,
           "gold_execution": {"status": "ok", "rows": 1, "columns": 1},
           "predicted_execution": {"status": "failed", "reason": EVIL},
           "result_sample": result_sample({"columns": [EVIL], "rows": [[EVIL]]}, None, None),
           "scores": {"arity_f1": 0.0}}
    html = query_details(rec)
    assert "<script>" not in html and html.count(EVIL_ESCAPED) == 5
    assert '<p class="reason error">' in html


# --- answers ------------------------------------------------------------------------------------
LONG_Q = "Compute the mean of the fare column after removing outliers, then " * 8


def _answers_suite(tmp: Path, n: int = 12) -> tuple[Path, Path]:
    concepts = ["Summary Statistics", "Correlation Analysis", "Outlier Detection",
                "Feature Engineering", "Distribution Analysis", "Machine Learning"]
    docs, lines = [], []
    for i in range(n):
        name = EVIL if i == 0 else f"q{i}"
        q = LONG_Q if i == 1 else f"Question {i}?"
        docs.append(json.dumps({
            "id": f"q{i}", "name": name, "tags": [f"t{i % 3}"],
            "metadata": {"concepts": [concepts[i % 6]], "level": "easy" if i % 2 else "hard"},
            "conversation": [{"role": "user", "content": q, "target": {"answers": [
                {"name": "a", "value": "1"}, {"name": "b", "value": "2"}, {"name": "c", "value": "3"}]}}]}))
        if i == 2:
            continue  # no recorded line: a missing response
        response = {0: "@a[1] @b[<b>x</b>] @c[3]", 3: ""}.get(
            i, "@a[1] @b[2]" if i % 2 else "@a[1] @b[2] @c[3]")
        lines.append(json.dumps({"id": f"q{i}", "response": response}))
    suite = tmp / "cases.jsonl"
    suite.write_text("\n".join(docs) + "\n")
    responses = tmp / "responses.jsonl"
    responses.write_text("\n".join(lines) + "\n")
    return suite, responses


@pytest.fixture(scope="module")
def answers_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ans")
    suite, responses = _answers_suite(tmp)
    return start_run(RunConfig(suite=str(suite), responses=str(responses), out=str(tmp / "out"),
                               reports=False))


def test_answers_details_sub_answers_and_missing(answers_run):
    text = _report_text(answers_run.log.paths.batch)
    assert EVIL not in text and EVIL_ESCAPED in text
    i = text.index("<code>q0</code>")
    q0 = text[i:text.index("<code>q1</code>")]
    assert "✓ @a: expected [1], got [1]" in q0
    assert "✗ @b: expected [2], got [&lt;b&gt;x&lt;/b&gt;]" in q0
    assert "— 2 of 3 right" in q0
    q2 = text[text.index("<code>q2</code>"):text.index("<code>q3</code>")]
    assert "missing response (scored 0)" in q2 and "✗ @a: expected [1], got (none)" in q2
    q3 = text[text.index("<code>q3</code>"):text.index("<code>q5</code>")]
    assert "missing response (scored 0)" in q3
    # the long question: cut with an ellipsis, the full text on click and hover
    q1 = text[text.index("<code>q1</code>"):text.index("<code>q2</code>")]
    full = LONG_Q
    assert f'title="{full}"' in q1 and "…</span></summary>" in q1
    assert q1.count(full) == 2  # tooltip and the unfolded text


def test_answers_cis_and_integer_counts(answers_run):
    records = sorted(answers_run.records, key=lambda r: str(r["case_id"]))  # bootstrap order
    o = answers_run.metrics["overall_metrics"]
    text = _report_text(answers_run.log.paths.batch)
    props = [r["scores"]["proportion_correct"] for r in records]
    alls = [r["scores"]["all_correct"] for r in records]
    assert o["psaq"] == pytest.approx(sum(props) / 12)
    for key, values in (("psaq", props), ("abq", alls)):
        ci = stats.bootstrap_ci(values, resamples=300, seed=0)
        assert f"[{ci.low:.4f}, {ci.high:.4f}]" in text, key
    num = [r["scores"]["correct_subquestions"] for r in records]
    den = [r["scores"]["subquestions"] for r in records]
    assert o["uasq"] == sum(num) / sum(den) == 24 / 36
    ci = stats.bootstrap_ratio_ci(num, den, resamples=300, seed=0)
    assert ci.low < o["uasq"] < ci.high
    row = re.search(r"<td>uasq</td>.*?</tr>", text).group(0)
    assert f"[{ci.low:.4f}, {ci.high:.4f}]" in row and '<td class="num">12</td>' in row
    # per-case counts are integers: "2", not "2.0000"; proportions keep their decimals
    cases = text[text.index('<table id="cases">'):]
    q0 = re.search(r'<tr data-status="fail" data-case="q0"><td class="case"><a href="#case-0">'
                   r'.*?</tr>', cases).group(0)
    assert '<td class="num" data-v="2.0">2</td>' in q0 and '<td class="num" data-v="3.0">3</td>' in q0
    assert '<td class="num" data-v="0.6666666666666666">0.6667</td>' in q0


def test_ratio_bootstrap_agrees_with_the_mean_bootstrap():
    # with every denominator 1 the ratio of sums is the mean, drawn from the same indices
    values = [0.0, 1.0, 1.0, 0.5, 0.25, 1.0]
    a = stats.bootstrap_ratio_ci(values, [1.0] * 6, resamples=500, seed=3)
    b = stats.bootstrap_ci(values, resamples=500, seed=3)
    assert (a.mean, a.low, a.high, a.n) == pytest.approx((b.mean, b.low, b.high, b.n))
    same = stats.bootstrap_ratio_ci([1, 2, 3], [2, 4, 6])  # every case 1/2: a point
    assert (same.mean, same.low, same.high) == (0.5, 0.5, 0.5)
    assert stats.bootstrap_ratio_ci([], []).mean is None
    assert stats.bootstrap_ratio_ci([0, 0], [0, 0]).low is None
    with pytest.raises(ValueError, match="differ in length"):
        stats.bootstrap_ratio_ci([1], [1, 2])


# --- charts and large runs ----------------------------------------------------------------------
def test_large_run_folds_cases_and_details(tmp_path):
    suite, responses = _answers_suite(tmp_path, n=300)
    result = start_run(RunConfig(suite=str(suite), responses=str(responses),
                                 out=str(tmp_path / "out"), reports=False))
    text = _report_text(result.log.paths.batch)
    assert '<details class="fold" id="cases-box"><summary>300 cases: ' in text  # not open
    assert text.count('<details class="case" id="case-') == sum(
        1 for r in result.records if r["scores"]["all_correct"] != 1.0)
    assert "<section class=\"case\"" not in text
    # radar: the concept group has 6 members and psaq/abq/uasq defined for each
    assert '<svg class="chart radar"' in text and "Summary Statistics (n=50)" in text


# --- SDMX xlsx ----------------------------------------------------------------------------------
def test_selection_xlsx_result_column(tmp_path, examples_dir):
    usa = "5eed0000-0000-0000-0000-000000017334"
    src = examples_dir / "sdmx" / "responses.jsonl"
    lines = [ln for ln in src.read_text().splitlines() if usa not in ln]
    (tmp_path / "r.jsonl").write_text("\n".join(lines) + "\n")
    result = start_run(RunConfig(suite=str(examples_dir / "sdmx" / "suite"),
                                 responses=str(tmp_path / "r.jsonl"), out=str(tmp_path / "out")), reporter=write_run_reports)
    ws = openpyxl.load_workbook(result.log.paths.report_xlsx)["Overview"]
    head = [c.value for c in ws[1]]
    assert head[6:8] == ["status", "result"]
    rows = {r[0]: r for r in ws.iter_rows(min_row=2, values_only=True)}
    assert rows[usa][6].startswith("error") and rows[usa][7] == "error"
    results = [r[7] for r in rows.values()]
    # the HTML report's statuses: 5 fail, 1 error, the rest pass (test_html_report)
    assert (results.count("pass"), results.count("fail"), results.count("error")) == (17, 5, 1)
    for r in rows.values():
        if r[7] == "pass":
            assert r[3] == r[4] == 1.0 and r[6] == "ok"
    html = _report_text(result.log.paths.batch)
    statuses = re.findall(r'<tr data-status="(\w+)" data-case="([^"]+)">', html)
    assert {cid: s for s, cid in statuses} == {cid: r[7] for cid, r in rows.items()}


# --- error banner -------------------------------------------------------------------------------
def test_error_banner_from_metrics(tmp_path, examples_dir):
    result = start_run(RunConfig(suite=str(examples_dir / "sdmx" / "suite"),
                                 responses=str(examples_dir / "sdmx" / "responses.jsonl"),
                                 out=str(tmp_path / "out"), reports=False))
    text = _report_text(result.log.paths.batch)
    assert 'class="banner"' not in text  # no failed call, no banner
    path = result.log.paths.metrics
    metrics = json.loads(path.read_text())
    metrics["error_summary"] = [
        {"kind": "connection", "count": 12, "first_message": "ConnectError: refused " + EVIL,
         "case": "abc"},
        {"kind": EVIL, "count": 1, "first_message": "x" * 1000, "case": EVIL}]
    path.write_text(json.dumps(metrics))
    text = _report_text(result.log.paths.batch)
    banner = text[text.index('<div class="banner"'):text.index("</div>", text.index('class="banner"'))]
    assert text.index('class="banner"') < text.index('<table class="meta">')  # at the top
    assert ("<li><b>12 ×</b> connection: ConnectError: refused " + EVIL_ESCAPED
            + ' <span class="note">(case abc)</span></li>') in banner
    assert "<script>" not in banner and banner.count(EVIL_ESCAPED) == 3
    assert "x" * 299 + "…" in banner and "x" * 300 not in banner
    assert error_banner({"error_summary": []}) == "" and error_banner({}) == ""
    loaded = RunResults.open(result.log.paths.batch)
    assert loaded.metrics["error_summary"][0]["count"] == 12


# --- fields ---------------------------------------------------------------------------------------
def test_fields_status_follows_the_seed_pass_rule(tmp_path, examples_dir):
    result = start_run(RunConfig(
        suite=str(examples_dir / "fields" / "evaluation.csv"), out=str(tmp_path / "out"),
        reports=False, task_options={"data": str(examples_dir / "fields" / "ingredients.csv"),
                                     "model": "bm25"}))
    o = result.metrics["overall_metrics"]
    text = _report_text(result.log.paths.batch)
    # the HTML's pass count is the seed's "passed" (not "every figure equals 1")
    assert f'<option value="pass">pass ({o["passed"]})</option>' in text
    assert o["passed"] == sum(r["scores"]["passed"] for r in result.records) and o["passed"] > 1
    assert "<th>system</th><td>built-in: retriever: bm25</td>" in text
    by_id = sorted(result.records, key=lambda r: str(r["case_id"]))  # the bootstrap order
    recalls = [r["scores"]["recall"] for r in by_id]
    ci = stats.bootstrap_ci(recalls, resamples=300, seed=0)
    assert o["avg_recall"] == pytest.approx(sum(recalls) / len(recalls))
    row = re.search(r"<td>avg_recall</td>.*?</tr>", text).group(0)
    assert f"[{ci.low:.4f}, {ci.high:.4f}]" in row


def test_long_case_names_are_cut_with_the_full_text_on_hover(tmp_path):
    from queryeval.report.html import CASE_NAME_CHARS

    suite, responses = _answers_suite(tmp_path, n=2)
    long = EVIL + " what is the median fare" * 10
    suite.write_text(suite.read_text().replace(json.dumps(EVIL), json.dumps(long), 1))
    run = start_run(RunConfig(suite=str(suite), responses=str(responses),
                              out=str(tmp_path / "out"), reports=False))
    text = _report_text(run.log.paths.batch)
    row = re.search(r'<tr data-status="[a-z]+" data-case="q0">.*?</tr>', text).group(0)
    title = re.search(r'<span title="([^"]*)">([^<]*)</span>', row)
    full = long.replace("<", "&lt;").replace(">", "&gt;")
    assert title.group(1) == full  # the whole name on hover, escaped
    shown = title.group(2).replace("&lt;", "<").replace("&gt;", ">")
    assert shown == long[:CASE_NAME_CHARS - 1].rstrip() + "…"  # cut at 70, no trailing blank
    assert EVIL not in text
    q1 = re.search(r'<tr data-status="[a-z]+" data-case="q1">.*?</tr>', text).group(0)
    assert "title=" not in q1.split("</td>")[0]  # a short name is shown whole


# --- what each figure is (the task's Figures) ---------------------------------------------------
def _overall_names(text: str) -> list[str]:
    overall = text[text.index("<h2>Overall"):]
    overall = overall[:overall.index('<p class="note">Intervals')]
    overall = overall.split('<table id="timings">')[0]
    return re.findall(r"<tr><td>([^<]+)</td>", overall)


def test_settings_and_timings_are_not_listed_or_charted_as_metrics(answers_run, query_run,
                                                                   retrieval_run, tmp_path):
    """Each task declares which of its figures are settings, timings, older names or not on
    [0, 1] (``Task.figures``); the HTML reads that: settings in the Overall heading, timings in
    their own table, ``recall_at_k`` under its own name, the similarity score never charted
    even when every value falls in [0, 1] (a dense retriever's cosine)."""
    answers = _report_text(answers_run.log.paths.batch)
    assert "<h2>Overall (match = numeric, missing_mode = wrong)</h2>" in answers
    assert not {"match", "missing_mode"} & set(_overall_names(answers))
    query = _report_text(query_run.log.paths.batch)
    rules = query_run.metrics["overall_metrics"]["rules"]
    assert f"<h2>Overall (rules = {rules})</h2>" in query and "rules" not in _overall_names(query)
    # retrieval: the timing apart, and a copy whose scores all lie in [0, 1]
    folder = tmp_path / "copy"
    shutil.copytree(retrieval_run.log.paths.folder, folder)
    metrics_file = folder / retrieval_run.log.paths.metrics.name
    doc = json.loads(metrics_file.read_text())
    for figures in doc["group_metrics"]["dataset"].values():
        figures["avg_score_incorrect"] = 0.6
    doc["overall_metrics"]["incorrect_retrievals_analysis"]["avg_score_incorrect"] = 0.6
    metrics_file.write_text(json.dumps(doc))
    text = _report_text(folder / retrieval_run.log.paths.batch.name)
    names = _overall_names(text)
    assert "mean_retrieval_time_ms" not in names and "recall_at_k" not in names and "k" not in names
    timings = text[text.index('<table id="timings">'):]
    assert re.match(r'<table id="timings">.*?<td>mean_retrieval_time_ms</td>', timings)
    svgs = "".join(re.findall(r"<svg.*?</svg>", text, flags=re.S))
    assert "avg_score_incorrect" not in svgs and "recall_at_k" not in svgs
    assert "recall@10" in svgs  # the metrics themselves are still charted
    # a task that declares nothing keeps every figure
    assert RetrievalTask.figures.kind("recall_at_k") == "alias"
    assert RetrievalTask.figures.kind("incorrect_retrievals_analysis.avg_score_incorrect") == "unbounded"
    assert Figures().kind("k") == "metric"


def test_single_k_console_and_charts_name_recall_by_its_k(tmp_path, examples_dir):
    """A single-k run's dataset figures are stored under the reference's ``recall_at_k``; the
    console column and the HTML chart call it ``recall@5``."""
    ret = examples_dir / "retrieval"
    result = start_run(RunConfig(suite=str(ret / "questions.csv"), out=str(tmp_path), reports=False,
                                 task_options={"k": [5], "corpus": str(ret / "corpus.jsonl")}))
    assert "recall_at_k" in next(iter(result.metrics["group_metrics"]["dataset"].values()))
    text = _console_text(render_summary(result.task.summary(result.metrics), result.metrics))
    assert "recall_at_k" not in text and "mean_retrieval_time_ms" not in text.split("Timings")[0]
    timings = text[text.index("Timings"):text.index("By dataset")]
    assert re.search(r"timing\s+┃\s+value", timings) and "mean_retrieval_time_ms" in timings
    by_dataset = text[text.index("By dataset"):]
    for name, figures in result.metrics["group_metrics"]["dataset"].items():
        assert re.search(rf"{name}\s+│\s+\d+\s+│\s+{figures['recall_at_k']:.4f}", by_dataset)
    page = _report_text(result.log.paths.batch)
    svgs = "".join(re.findall(r"<svg.*?</svg>", page, flags=re.S))
    assert "recall_at_k" not in page and "recall@5" in svgs


def test_notebook_view_lists_metrics_as_the_report_does(answers_run, retrieval_run, tmp_path):
    """A Run in a notebook (``_repr_html_``): settings beside the heading, not as metric rows;
    no ``recall_at_k`` beside ``recall@10``; no empty group (``concept (0)``)."""
    import queryeval as qe

    answers = qe.load(answers_run.log.paths.batch)._repr_html_()
    rows = re.findall(r"<tr><td>([^<]+)</td>", answers)
    assert "match = numeric, missing_mode = wrong" in answers
    assert "psaq" in rows and not {"match", "missing_mode"} & set(rows)
    retrieval = qe.load(retrieval_run.log.paths.batch)._repr_html_()
    rows = re.findall(r"<tr><td>([^<]+)</td>", retrieval)
    assert "recall@10" in rows and "recall_at_k" not in rows and "k" not in rows
    folder = tmp_path / "copy"
    shutil.copytree(answers_run.log.paths.folder, folder)
    metrics_file = folder / answers_run.log.paths.metrics.name
    doc = json.loads(metrics_file.read_text())
    doc["group_metrics"]["concept"] = {}
    metrics_file.write_text(json.dumps(doc))
    page = qe.load(folder / answers_run.log.paths.batch.name)._repr_html_()
    assert "concept (0)" not in page and "concept_group (" in page


def test_data_values_are_written_as_meant_in_one_place():
    """A database's sum that lands one binary step above 12.78 prints as 12.780000000000001
    with repr; result rows show 12.78. Figures keep their 4 decimals; both come from
    report.numbers."""
    import math

    from queryeval.report import console, html_page
    from queryeval.report.html_details import _rows_table
    from queryeval.report.numbers import figure, value_text

    above = math.nextafter(12.78, 13)
    assert repr(above) == "12.780000000000001" and repr(1.1 * 3) == "3.3000000000000003"
    assert value_text(above) == "12.78" and value_text(1.1 * 3) == "3.3" and value_text(3.0) == "3.0"
    assert value_text(0.1 + 0.2) == "0.3" and value_text(1e300) == "1e+300"
    assert value_text(2 ** 0.5) == "1.4142135623731" and value_text(7) == "7"
    for x in (12.78, 0.1, 1 / 3, 123456.789, 5e-324):  # 15 digits read back as written
        assert float(value_text(x)) == float(f"{x:.15g}")
    html = _rows_table("rows", {"columns": ["gross"], "rows": [[above]], "matched": [True]})
    assert "<td class=\"hit\">12.78</td>" in html and "12.780000000000001" not in html
    assert console.fmt is html_page.fmt is figure and figure(0.5) == "0.5000"


def test_viewer_reads_the_same_declared_figures(answers_run, retrieval_run):
    """The viewer's index headlines and run page take the task's Figures too (by the task's
    name in the index): no ``match``/``k`` headline, the timing kept as a time."""
    from queryeval.viewer.index import headline_figures
    from queryeval.viewer.results import run_figures

    figures, kinds = headline_figures(answers_run.metrics["overall_metrics"], None, "answers")
    assert "psaq" in figures and not {"match", "missing_mode"} & set(figures)
    overall = retrieval_run.metrics["overall_metrics"]
    figures, kinds = headline_figures(overall, 10, "retrieval")
    assert "k" not in figures and "recall_at_k" not in figures and "recall@10" in figures
    assert kinds["mean_retrieval_time_ms"] == "time"
    page = run_figures(RunResults.open(answers_run.log.paths.batch), resamples=100)
    assert page["settings"] == "match = numeric, missing_mode = wrong"
    assert not {"match", "missing_mode"} & {row["metric"] for row in page["overall_rows"]}
