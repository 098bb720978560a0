"""The HTML report: self-contained, escaped, every failure linked to its details, charts
generic over group_metrics (spider chart for any group of 3+ members on [0, 1])."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
import typer

from queryeval.metrics import stats
from queryeval.report.html import flatten, rate_keys, render_report, write_html_report
from queryeval.report.html_details import generic_details, render_details, selection_details
from queryeval.report.html_svg import bar_chart, radar_chart
from queryeval.run.config import RunConfig
from queryeval.run.evaluate import start_run
from queryeval.run.results import RunResults, resolve_batch

USA = "5eed0000-0000-0000-0000-000000017334"
FRANCE = "5eed0000-0000-0000-0000-00000001eef0"


class _Doc(HTMLParser):
    """Collects tags with their attributes (fails on nothing: we check what it finds)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def find(self, tag: str, **attrs) -> list[dict]:
        return [a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items())]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, examples_dir) -> Path:
    """The example run with one case's response missing (a failed call)."""
    tmp = tmp_path_factory.mktemp("html")
    src = examples_dir / "sdmx" / "responses.jsonl"
    lines = [ln for ln in src.read_text().splitlines() if USA not in ln]
    (tmp / "r.jsonl").write_text("\n".join(lines) + "\n")
    result = start_run(RunConfig(suite=str(examples_dir / "sdmx" / "suite"),
                                 responses=str(tmp / "r.jsonl"), out=str(tmp / "out"), reports=False))
    return result.log.paths.batch


def test_report_self_contained_and_figures(run_dir):
    path = write_html_report(run_dir, resamples=2000, seed=0)
    run = RunResults.open(run_dir)
    assert path == run.log.paths.folder / f"report_{run.batch_id}.html"
    text = path.read_text(encoding="utf-8")
    doc = _Doc(text)
    # no network: no external script, stylesheet, image or font
    assert not doc.find("link") and not doc.find("img")
    assert all("src" not in a for a in doc.find("script"))
    assert re.findall(r"https?://[^\s\"'<>]+", text) == ["http://www.w3.org/2000/svg"] * len(
        doc.find("svg"))
    # overall figures with the bootstrap CI of the per-case means
    recalls = [r["scores"]["macro_recall"] for r in run.records]
    ci = stats.bootstrap_ci(recalls, resamples=2000, seed=0)
    assert f"[{ci.low:.4f}, {ci.high:.4f}]" in text
    assert sum(recalls) / len(recalls) == pytest.approx(18.5 / 23)  # USA now scores 0
    # charts: overall, the per-case distribution (the viewer's), then bars per group kind;
    # a spider chart only for a group of 5+ members (tag: 9), with every charted figure
    # (dimension and dataset have 3 members)
    labels = [a.get("aria-label") for a in doc.find("svg")]
    assert labels == [
        "Overall figures (95% CI)", "Per-case scores", "by tag", "macro_precision, macro_recall by tag",
        "by dimension", "by dataset"]
    assert len(doc.find("svg", **{"class": "chart radar"})) == 1


def test_case_table_links_every_failure(run_dir):
    text = render_report(run_dir, resamples=200)
    doc = _Doc(text)
    rows = doc.find("tr")
    statuses = [r["data-status"] for r in rows if "data-status" in r]
    assert len(statuses) == 23
    # france, germany, size_of_economy_france (0), population_two_sources (0.5), canada (2/3)
    assert statuses.count("fail") == 5 and statuses.count("error") == 1
    links = {a["href"] for a in doc.find("a") if a.get("href", "").startswith("#case-")}
    sections = {"#" + s["id"] for s in doc.find("section")}
    assert links == sections and len(links) == 6
    usa = text[text.index(f"<code>{USA}</code>"):]
    assert "call failed — missing: no recorded response" in usa[:2000]
    france = text[text.index(f"<code>{FRANCE}</code>"):]
    france = france[: france.index("</section>")]
    # selection details: the missed terms of the France case
    assert "<th>missed (FN)</th>" in france and "<code>FRA</code> France" in france
    assert text.count('<option value="fail">fail (5)</option>') == 1


def test_escaping_and_generic_task(run_dir, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(resolve_batch(run_dir).parent, folder)
    run = RunResults.open(folder)
    evil = '<script>alert("x")</script>'
    recs = [json.loads(ln) for ln in run.log.paths.results_jsonl.read_text().splitlines()]
    for r in recs:
        r["name"] = evil
        r["tags"] = ['"><img src=x onerror=alert(1)>']
        r["turns"][0]["question"] = evil
    run.log.paths.results_jsonl.write_text("".join(json.dumps(r) + "\n" for r in recs))
    # an unknown task kind with a concept group: generic details and a PSAQ spider chart
    batch = json.loads(run.log.paths.batch.read_text())
    batch["task"] = "answers"
    run.log.paths.batch.write_text(json.dumps(batch))
    metrics = json.loads(run.log.paths.metrics.read_text())
    metrics["group_metrics"] = {"concept": {
        "Summary Statistics": {"psaq": 0.5, "abq": 0.25, "questions": 4},
        "Correlation Analysis": {"psaq": 1.0, "abq": 1.0, "questions": 2},
        "Outlier Detection": {"psaq": 0.0, "abq": 0.0, "questions": 1},
        "Machine Learning": {"psaq": 0.5, "abq": 0.5, "questions": 2},
        evil: {"psaq": 0.75, "abq": None, "questions": 1}}}
    run.log.paths.metrics.write_text(json.dumps(metrics))
    text = render_report(folder, resamples=100)
    assert "<script>alert" not in text and "<img" not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in text
    doc = _Doc(text)
    # abq has a None: a radar would have to leave abq out, so bars only
    assert doc.find("svg", **{"class": "chart radar"}) == []
    assert "<b>expected</b>" in text and "<b>produced</b>" in text  # generic renderer
    metrics["group_metrics"]["concept"][evil]["abq"] = 0.5
    run.log.paths.metrics.write_text(json.dumps(metrics))
    radar = _Doc(render_report(folder, resamples=100)).find("svg", **{"class": "chart radar"})
    assert [a["aria-label"] for a in radar] == ["psaq, abq by concept"]  # 5 members, both series


def test_flatten_and_rate_keys():
    assert flatten({"a": 1, "b": {"c": 0.5, "d": {"e": None}}, "l": [1]}) == {
        "a": 1, "b.c": 0.5, "b.d.e": None}
    members = {"x": {"rate": 0.5, "count": 1, "big": 2.0, "opt": None, "time_ms": 0.1},
               "y": {"rate": 1.0, "count": 0, "big": 0.5, "opt": 0.25, "time_ms": 0.2}}
    assert rate_keys(members) == ["rate", "opt"]


def test_svg_geometry():
    svg = bar_chart([("a", [0.5]), ("b", [None])], ["v"], title="t", width=500, label_width=100,
                    ci=[[(0.25, 0.75)], [None]])
    # plot width = 500 - 100 - 56 = 344: a bar of 0.5 is 172 wide, starting at x = 100
    assert '<rect x="100" y="17" width="172" height="11"' in svg
    assert ">n/a</text>" in svg
    assert 'd="M186 22.5H358' in svg  # whisker from 0.25 to 0.75 of the plot
    radar = radar_chart(["p", "q", "r", "s"], {"m": [1.0, 0.5, 0.0, 0.25]}, title="r", size=460)
    # centre (175 + 200, 40 + 200 + 10); the first axis points up
    assert '<circle cx="375" cy="50" r="3"' in radar  # value 1 on axis 0: top of the ring
    assert '<circle cx="475" cy="250" r="3"' in radar  # 0.5 on axis 1 (pointing right)
    with pytest.raises(ValueError):
        radar_chart(["a", "b"], {"m": [1, 1]}, title="x")
    assert "&lt;b&gt;" in bar_chart([("<b>", [0.1])], ["v"], title="<b>")


def test_detail_renderers_and_hooks():
    rec = {"case_id": "1", "turns": [{"turn": 0, "question": "q<", "target": {"a": "<x>"},
                                      "output": None, "error": {"kind": "timeout", "message": "slow"},
                                      "scores": {"s": 1}}]}
    html = generic_details(rec)
    assert "turn 0: q&lt;" in html and "&quot;&lt;x&gt;&quot;" in html and "timeout: slow" in html
    assert generic_details({"case_id": "1", "answer": 3}) == '<pre>{\n  &quot;answer&quot;: 3\n}</pre>'

    class Hooked:
        def html_details(self, record):
            return "<p>custom</p>"

    assert render_details("indicator_selection", Hooked(), rec) == "<p>custom</p>"
    # a selection record of an unexpected shape falls back to the generic renderer
    assert render_details("indicator_selection", None, {"turns": [{"scores": {"dimensions": [{}]}}]})
    dims = {"dataset_id": "D", "dimension": "X", "in_target": False, "tp": [], "fn": [],
            "fp": [["A", "a"]], "precision": 0.0, "recall": None}
    sel = selection_details({"turns": [{"turn": 2, "scores": {"dimensions": [dims]}}]})
    assert "D / X" in sel and "(not in target)" in sel and "<code>A</code> a" in sel


def test_cli_report(run_dir, tmp_path, monkeypatch, capsys):
    import queryeval.cli.app as cli_app
    from queryeval.cli import report as report_cmd

    app = typer.Typer(pretty_exceptions_enable=False)
    app.command("report")(report_cmd.command)
    app.command("noop")(lambda: None)
    monkeypatch.setattr(cli_app, "app", app)
    out = tmp_path / "r.html"
    assert cli_app.main(["report", str(run_dir), "--output", str(out), "--resamples", "100"]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert str(out) in capsys.readouterr().out
    assert cli_app.main(["report", str(tmp_path / "nothing")]) == 2


def test_retrieval_and_query_renderers_and_verdicts():
    from queryeval.report.html_details import query_details, retrieval_details
    from queryeval.run.results import attempt_passed, reduce_cases
    from queryeval.tasks.base import get_task

    # the one pass rule (the run model's): retrieval passes on the expected chunk in the top
    # k although precision@5 < 1; a failed call is an error; without a task every [0, 1]
    # figure must be 1
    values = {"recall@5": 1.0, "hit_rate@5": 1.0, "precision@5": 0.2}
    found = {"case_id": "a", "status": "ok", "scores": values,
             "evaluation_result": {"correct_chunk_retrieved": True}}
    failed = {"case_id": "b", "status": "error", "scores": values}
    cases = reduce_cases(get_task("retrieval"), [found, failed])
    assert [c.verdict for c in cases] == ["pass", "error"]
    assert attempt_passed(None, found, values) is False
    assert attempt_passed(None, found, {"rank": 3.0, "ok": 1.0}) is True  # 3.0: not a rate
    rec = {"question": "How <much>?", "expected_chunk": {"chunk_id": "c2", "content_hash": "h2",
                                                         "name": "guide.pdf"},
           "evaluation_result": {"rank_if_found": 2},
           "retrieved_chunks": [{"chunk_id": "c1", "score": 0.5, "content": "x", "content_hash": "h1"},
                                {"chunk_id": "c2", "score": 0.4, "content": "<y>", "content_hash": "h2"}]}
    html = retrieval_details(rec)
    assert "How &lt;much&gt;?" in html and "found at rank 2" in html
    assert '<td class="pass">c2 ✔ expected</td>' in html and '<td class="">c1</td>' in html
    assert "&lt;y&gt;" in html
    q = query_details({"question": "q", "gold_query": "SELECT ?a <x>", "predicted_query": None,
                       "scores": {"arity_f1": 1.0}})
    assert "SELECT ?a &lt;x&gt;" in q and "arity_f1" in q


def test_line_chart_geometry():
    from queryeval.report.html_svg import line_chart

    svg = line_chart([1, 5, 10], {"recall@k": [0.5, None, 1.0]}, title="<t>", width=560, height=300)
    # plot: x from 46 to 560 - 64 = 496 (3 points, step 225); y from 18 (1.0) to 260 (0.0)
    assert '<circle cx="46" cy="139" r="3.5"' in svg  # 0.5 at k = 1
    assert '<circle cx="496" cy="18" r="3.5"' in svg  # 1.0 at k = 10
    assert svg.count("<circle") == 2  # None: no point, and the line joins the two others
    assert 'd="M46 139 L496 18"' in svg and "&lt;t&gt;" in svg
    with pytest.raises(ValueError):
        line_chart([1, 2], {"s": [0.5]}, title="x")


def test_repeated_run_counts_attempts_not_cases(tmp_path, examples_dir):
    """With --repeats a record is an attempt: the case table says "46 attempts (23 cases ×
    2)" and marks each row's attempt; the details name the attempt (both said "46 cases")."""
    result = start_run(RunConfig(suite=str(examples_dir / "sdmx" / "suite"),
                                 responses=str(examples_dir / "sdmx" / "responses.jsonl"),
                                 out=str(tmp_path), reports=False, repeats=2))
    text = render_report(result.log.paths.batch, resamples=100)
    assert "46 cases" not in text  # 5 failing cases (test_case_table_links_every_failure) × 2
    assert "<summary>46 attempts (23 cases × 2): 36 pass, 10 fail, 0 error" in text
    rows = re.findall(rf'<tr data-status="\w+" data-case="{FRANCE}">.*?</tr>', text)
    assert sorted(re.search(r'<span class="note">#(\d)</span>', r).group(1) for r in rows) == ["0", "1"]
    assert f"<code>{FRANCE}</code> attempt 1" in text
