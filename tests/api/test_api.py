"""The Python API: evaluate with every kind of system and input, Run's tables and summaries,
errors as the project's exception types, temporary run logs, resume, load, compare."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

import queryeval as qe
from queryeval.cli.app import main
from queryeval.errors import ConfigError, InputError, SystemCallError
from queryeval.run.finish import CallsFailed
from queryeval.suite.loader import load_suite

REPO = Path(__file__).resolve().parents[2]
SDMX = REPO / "examples" / "sdmx"


def sel(dataset: str, dim: str, *terms: tuple[str, str]) -> list[dict]:
    return [{"dataset_id": dataset, "dimensions": [
        {"dimension_name": dim, "values": [{"id": i, "name": n} for i, n in terms]}]}]


MEX = ("MEX", "Mexico")
USA = ("USA", "United States")
DEU = ("DEU", "Germany")


def case(cid: str, question: str, *terms: tuple[str, str], tags=()) -> dict:
    return {"id": cid, "name": cid, "tags": list(tags), "conversation": [
        {"role": "user", "content": question,
         "target": {"indicator_selection": sel("D", "COUNTRY", *terms)}}]}


CASES = [
    case("c1", "mexico", MEX, tags=["latam"]),
    case("c2", "usa", USA),
    case("c3", "germany and mexico", DEU, MEX, tags=["latam", "multi"]),
    case("c4", "nothing", USA),
]


def bot(request: dict) -> dict:
    """Selects the countries named in the last message (c4 gets nothing: recall 0)."""
    text = request["messages"][-1]["content"]
    terms = [t for key, t in (("mexico", MEX), ("usa", USA), ("germany", DEU)) if key in text]
    return {"indicator_selection": sel("D", "COUNTRY", *terms) if terms else []}


# --- systems ----------------------------------------------------------------------------------
def test_sync_callable_scores_hand_computed_values():
    run = qe.evaluate(CASES, system=bot)
    o = run.metrics["overall_metrics"]
    # c1, c2, c3 perfect; c4 selects nothing: recall 0, precision 0 (one dimension in target)
    assert o["macro_recall"] == pytest.approx(3 / 4)
    assert o["macro_precision"] == pytest.approx(3 / 4)
    assert (o["tp"], o["fp"], o["fn"]) == (4, 0, 1)
    assert run.task_name == "indicator_selection"
    assert run.config["system"].startswith("object:")


def test_async_callable_runs_on_one_loop_thread_within_the_concurrency_limit():
    threads: set[int] = set()
    inflight = 0
    peak = 0
    lock = threading.Lock()

    async def abot(request: dict) -> dict:
        nonlocal inflight, peak
        threads.add(threading.get_ident())
        with lock:
            inflight += 1
            peak = max(peak, inflight)
        try:
            for _ in range(100):  # wait (up to 1 s) until another call is in flight too
                if inflight >= 2:
                    break
                await asyncio.sleep(0.01)
            return bot(request)
        finally:
            with lock:
                inflight -= 1

    many = [case(f"x{i}", "mexico", MEX) for i in range(12)]
    run = qe.evaluate(many, system=abot, concurrency=3)
    assert run.overall["macro_recall"] == 1.0
    assert len(threads) == 1 and threading.get_ident() not in threads  # one loop, not ours
    assert 2 <= peak <= 3


def test_async_timeout_cancels_and_records_a_timeout():
    cancelled = []

    async def slow(request: dict) -> dict:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(request["case_id"])
            raise
        return {}

    t0 = time.monotonic()
    run = qe.evaluate(CASES[:2], system=slow, timeout=0.2, retries=1, backoff=0.01)
    assert time.monotonic() - t0 < 10
    df = run.to_pandas()
    assert list(df["status"]) == ["error", "error"]
    assert all(e.startswith("timeout: no answer within 0.2s") for e in df["error"])
    assert [r["turns"][0]["attempts"] for r in run.records] == [2, 2]  # retried once
    assert sorted(cancelled) == ["c1", "c1", "c2", "c2"]


def test_async_code_that_blocks_the_loop_still_times_out():
    async def blocking(request: dict) -> dict:
        time.sleep(2)  # wrong in async code: the loop cannot cancel it
        return bot(request)

    t0 = time.monotonic()
    run = qe.evaluate(CASES[:1], system=blocking, timeout=0.2, retries=0)
    assert time.monotonic() - t0 < 8
    assert run.to_pandas()["error"].tolist() == ["timeout: no answer within 0.2s"]


def test_errors_are_recorded_as_for_python_systems():
    calls: dict[str, int] = {}

    def flaky(request: dict) -> dict:
        cid = request["case_id"]
        calls[cid] = calls.get(cid, 0) + 1
        if cid == "c1":
            raise ValueError("boom")
        if cid == "c2":
            raise ConnectionError("down")
        if cid == "c3":
            raise SystemCallError("http_status", "429 slow down", retryable=True)
        return bot(request)

    run = qe.evaluate(CASES, system=flaky, retries=2, backoff=0.001)
    df = run.to_pandas().set_index("id")
    assert df.loc["c1", "error"] == "exception: ValueError: boom"
    assert df.loc["c2", "error"] == "exception: ConnectionError: down"
    assert df.loc["c3", "error"] == "http_status: 429 slow down"  # kept as the system said
    assert calls == {"c1": 1, "c2": 3, "c3": 3, "c4": 1}  # transient ones retried twice
    assert run.overall["errors"] == 3
    assert run.overall["errors_by_kind"] == {"exception": 2, "http_status": 1}


def test_object_with_call_sync_and_async_and_close():
    class Bot:
        name = "my-bot"

        def __init__(self):
            self.closed = 0
            self.timeouts = []

        def call(self, request, timeout):
            self.timeouts.append(timeout)
            return bot(request)

        def close(self):
            self.closed += 1

    class AsyncBot:
        async def call(self, request):
            return bot(request)

    b = Bot()
    run = qe.evaluate(CASES, system=b, timeout=7.5)
    assert run.overall["macro_recall"] == pytest.approx(3 / 4)
    assert b.timeouts == [7.5] * 4 and b.closed == 1
    assert run.config["system"].startswith("object:my-bot#")
    assert qe.evaluate(CASES, system=AsyncBot()).overall == run.overall


def test_a_plain_function_returning_a_coroutine_is_awaited():
    async def abot(request):
        return bot(request)

    run = qe.evaluate(CASES, system=lambda request: abot(request))
    assert run.overall["macro_recall"] == pytest.approx(3 / 4) and run.overall["errors"] == 0


def test_string_specs_work_as_on_the_command_line():
    run = qe.evaluate(SDMX / "suite", system=f"python:{SDMX / 'system.py'}:select")
    assert run.config["system"] == f"python:{SDMX / 'system.py'}:select"
    assert run.overall["total_cases"] == 23


def test_a_non_callable_system_is_a_config_error():
    with pytest.raises(ConfigError, match="system must be a callable"):
        qe.evaluate(CASES, system=42)


# --- inputs -------------------------------------------------------------------------------------
def test_cases_as_dicts_case_objects_and_dataframe_give_the_suite_files_metrics():
    from_path = qe.evaluate(SDMX / "suite", responses=SDMX / "responses.jsonl")
    cases = load_suite(SDMX / "suite").cases
    dicts = [c.model_dump(mode="json", exclude_unset=True) for c in cases]
    for given in (cases, dicts, pd.DataFrame(dicts)):
        run = qe.evaluate(given, responses=SDMX / "responses.jsonl")
        assert run.overall == from_path.overall
        assert run.metrics["group_metrics"] == from_path.metrics["group_metrics"]


def test_dataframe_with_question_and_target_columns():
    frame = pd.DataFrame([
        {"id": 1, "question": "mexico", "target": {"indicator_selection": sel("D", "COUNTRY", MEX)}},
        {"id": 2, "question": "usa", "target": {"indicator_selection": sel("D", "COUNTRY", DEU)}},
    ])
    run = qe.evaluate(frame, system=bot)
    assert list(run.to_pandas()["macro_recall"]) == [1.0, 0.0]
    assert list(run.to_pandas()["id"]) == ["1", "2"]


def test_in_memory_case_errors_name_index_and_field():
    bad = [*CASES[:3], {"id": "c9", "conversation": [
        {"role": "user", "content": "q", "target": {"indicator_selection": [{"dimensions": []}]}}]}]
    with pytest.raises(InputError) as err:
        qe.evaluate(bad, system=bot)
    assert str(err.value) == \
        "cases[3].conversation[0].target.indicator_selection[0].dataset_id: field required"
    with pytest.raises(InputError) as err:
        qe.evaluate([CASES[0], {"id": "c2", "conversation": [{"role": "user"}]}], system=bot)
    assert str(err.value) == "cases[1].conversation[0].content: field required"
    with pytest.raises(InputError, match=r"^cases\[2\]\.id: duplicate case id 'c1' \(first at cases\[0\]\)$"):
        qe.evaluate([CASES[0], CASES[1], CASES[0]], system=bot)
    with pytest.raises(InputError, match=r"^cases\[1\]: a case must be a mapping or a Case, got int$"):
        qe.evaluate([CASES[0], 5], system=bot)
    with pytest.raises(InputError, match=r"^cases\[0\]\.colour: unknown field$"):
        qe.evaluate([{**CASES[0], "colour": "red"}], system=bot)
    with pytest.raises(InputError, match="no cases given"):
        qe.evaluate([], system=bot)


def test_file_errors_and_option_errors_are_the_clis_one_liners(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text("id: a\nconversation:\n- role: user\n  content: q\n  target:\n"
                     "    indicator_selection:\n    - dimensions: []\n")
    with pytest.raises(InputError) as err:
        qe.evaluate(suite, system=bot)
    assert str(err.value) == f"{suite}:7: conversation[0].target.indicator_selection[0].dataset_id: field required"
    with pytest.raises(ConfigError, match="^concurrency: input should be greater than or equal to 1$"):
        qe.evaluate(CASES, system=bot, concurrency=0)
    with pytest.raises(ConfigError, match="^task option include_extra_dimensions: "):
        qe.evaluate(CASES, system=bot, include_extra_dimensions="maybe")
    with pytest.raises(ConfigError, match="^give one of system or responses, not both$"):
        qe.evaluate(CASES, system=bot, responses=SDMX / "responses.jsonl")
    with pytest.raises(ConfigError, match="^unknown task 'nope'"):
        qe.evaluate(CASES, system=bot, task="nope")


def test_in_memory_responses_errors_name_the_line_as_an_index():
    good = {"case_id": "c1", "indicator_selection": []}
    with pytest.raises(InputError) as err:
        qe.evaluate(CASES, responses=[good, {"case_id": "c2", "indicator_selection": [{}]}])
    assert str(err.value) == "responses[1].indicator_selection[0].dataset_id: field required"
    with pytest.raises(InputError, match=r"^responses\[0\]\.case_id: field required$"):
        qe.evaluate(CASES, responses=[{"indicator_selection": []}])
    with pytest.raises(InputError, match=r"^responses\[1\]: expected a mapping, got str$"):
        qe.evaluate(CASES, responses=[good, "x"])
    run = qe.evaluate(CASES, responses=[good])  # the others have no answer: recorded as missing
    assert run.overall["errors_by_kind"] == {"missing": 3}


def test_bad_option_containers_and_ray_with_an_object_are_config_errors():
    with pytest.raises(ConfigError, match="^options must be a mapping of task options, got int$"):
        qe.evaluate(CASES, system=bot, options=5)
    with pytest.raises(ConfigError, match="^executor='ray' needs a system spec string"):
        qe.evaluate(CASES, system=bot, executor="ray")
    with pytest.raises(ConfigError, match="^give one of graph, database, endpoint or source$"):
        qe.evaluate(CASES, system=bot, graph="a.ttl", database="b.db")


def test_options_as_keywords_or_a_dict():
    target = sel("D", "COUNTRY", MEX)
    extra = [*target, *sel("D", "FREQ", ("M", "Monthly"))]
    cases = [{"id": "a", "conversation": [{"role": "user", "content": "q",
                                           "target": {"indicator_selection": target}}]}]
    answer = [{"case_id": "a", "indicator_selection": extra}]
    with_extra = qe.evaluate(cases, responses=answer)
    assert with_extra.overall["macro_precision"] == 0.5  # the FREQ dimension counts (precision 0)
    for run in (qe.evaluate(cases, responses=answer, include_extra_dimensions=False),
                qe.evaluate(cases, responses=answer, options={"include-extra-dimensions": False})):
        assert run.overall["macro_precision"] == 1.0


# --- the Run ------------------------------------------------------------------------------------
def test_to_pandas_and_groups_hold_the_records_and_the_metrics_file():
    run = qe.evaluate(CASES, system=bot)
    df = run.to_pandas()
    assert list(df.columns[:6]) == ["id", "name", "tags", "turn", "status", "error"]
    assert list(df["id"]) == ["c1", "c2", "c3", "c4"]
    assert list(df["macro_recall"]) == [1.0, 1.0, 1.0, 0.0]
    assert df.loc[2, "tags"] == ["latam", "multi"]
    assert df["error"].isna().all() and set(df["status"]) == {"ok"}
    doc = json.loads(next(run.folder.glob("metrics_*.json")).read_text())
    assert run.metrics == doc
    tags = run.groups["tag"]
    assert tags.loc["latam", "cases"] == 2 and tags.loc["latam", "macro_recall"] == 1.0
    assert tags.loc["(no tag)", "macro_recall"] == 0.5
    assert tags.index.name == "tag"


def test_str_and_html_summaries():
    run = qe.evaluate(CASES, system=bot)
    text = str(run)
    assert "macro_recall" in text and "0.7500" in text
    page = run._repr_html_()
    assert "<td>macro_recall</td>" in page and "0.7500" in page
    metrics_file = next(run.folder.glob("metrics_*.json"))
    doc = json.loads(metrics_file.read_text())
    doc["overall_metrics"]["<script>alert(1)</script>"] = 1
    metrics_file.write_text(json.dumps(doc))
    page = qe.load(run.path)._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_html_summary_of_a_repeated_run_shows_the_metrics_repeats_section():
    """c2 is right on every other call (2 of 4 attempts), c4 never: pass rate
    (1 + 0.5 + 1 + 0) / 4 = 0.625; pass@2 of c2 = 1 - C(2,2)/C(4,2) = 5/6, so pass@2 =
    (1 + 5/6 + 1 + 0) / 4 = 0.7083; pass^2 of c2 = 1/6, so pass^2 = (2 + 1/6) / 4 = 0.5417."""
    lock, calls = threading.Lock(), {"usa": 0}

    def flaky(request: dict) -> dict:
        if request["messages"][-1]["content"] == "usa":
            with lock:
                calls["usa"] += 1
                if calls["usa"] % 2:
                    return {"indicator_selection": []}
        return bot(request)

    run = qe.evaluate(CASES, system=flaky, repeats=4, pass_k=[2])
    rep = run.metrics["repeats"]
    assert rep["overall"]["pass_rate"]["mean"] == pytest.approx(0.625)
    assert rep["overall"]["pass@2"]["mean"] == pytest.approx((2 + 5 / 6) / 4)
    assert rep["overall"]["pass^2"]["mean"] == pytest.approx((2 + 1 / 6) / 4)
    page = run._repr_html_()
    assert 'id="repeats"' in page and 'id="flaky"' in page
    for key, text in (("pass_rate", "0.6250"), ("pass@2", "0.7083"), ("pass^2", "0.5417")):
        assert f"<td>{key}</td>" in page and text in page
    flaky_row = page.split('id="flaky"', 1)[1]
    assert "<td>c2</td>" in flaky_row and "<td>c4</td>" not in flaky_row
    # read from the metrics, never recomputed: a changed figure in the file shows as changed
    metrics_file = next(run.folder.glob("metrics_*.json"))
    doc = json.loads(metrics_file.read_text())
    doc["repeats"]["overall"]["pass_rate"]["mean"] = 0.123456
    metrics_file.write_text(json.dumps(doc))
    assert "0.1235" in qe.load(run.path)._repr_html_()


def test_groups_use_the_figures_own_names_as_the_task_declares(tmp_path):
    """The retrieval task declares ``recall_at_k`` an older name of ``recall@{k}``: the
    group tables show ``recall@5`` (as the HTML report), not the legacy name."""
    suite = REPO / "examples" / "retrieval"
    assert main(["run", str(suite / "questions.csv"), "--corpus", str(suite / "corpus.jsonl"),
                 "--out", str(tmp_path), "--k", "5", "--no-report", "-q"]) == 0
    run = qe.load(next(tmp_path.rglob("batch_*.json")))
    frame = run.groups["dataset"]
    assert "recall_at_k" not in frame.columns and "recall@5" in frame.columns
    stored = run.metrics["group_metrics"]["dataset"]
    for member, figures in stored.items():
        legacy = figures.get("recall_at_k", figures.get("recall@5"))
        assert frame.loc[member, "recall@5"] == legacy


def test_empty_group_kinds_are_not_shown():
    """Closed-form cases without concepts: ``concept`` and ``concept_group`` are empty in the
    metrics; neither Run.groups, the console summary nor the notebook view shows them."""
    cases = [{"id": f"c{i}", "conversation": [{"role": "user", "content": f"question {i}?",
              "target": {"answers": [{"name": "n", "value": str(i)}]}}]} for i in range(3)]
    run = qe.evaluate(cases, system=lambda req: {"response": "@n[1]"})
    stored = run.metrics["group_metrics"]
    assert stored["concept"] == {} and stored["concept_group"] == {}
    assert list(run.groups) == ["concept_count"]
    assert run.groups["concept_count"].loc["0", "questions"] == 3
    assert "By number of concepts" not in str(run)
    assert "groups: concept_count (1)" in run._repr_html_()


def test_out_none_is_a_temporary_folder_kept_while_the_run_lives():
    run = qe.evaluate(CASES, system=bot)
    folder = run.folder.parent
    assert folder.name.startswith("queryeval-") and run.path.is_file()
    gc.collect()
    assert run.path.is_file()
    del run
    gc.collect()
    assert not folder.exists()


def test_report_writes_html_and_xlsx_into_a_folder(tmp_path):
    import openpyxl

    run = qe.evaluate(CASES, system=bot)
    written = run.report(tmp_path / "rep")
    names = sorted(p.name for p in written)
    assert names == [f"report_{run.batch_id}.html", f"report_{run.batch_id}.xlsx"]
    assert all(p.parent == tmp_path / "rep" for p in written)
    assert run.batch_id in (tmp_path / "rep" / names[0]).read_text()
    assert openpyxl.load_workbook(tmp_path / "rep" / names[1]).sheetnames


# --- resume and load ------------------------------------------------------------------------------
def _interrupt(run) -> int:
    """Cut the run's results back to its first record and mark it running; returns the number
    of records dropped."""
    results = next(run.folder.glob("results_*.jsonl"))
    lines = results.read_text().splitlines(keepends=True)
    results.write_text(lines[0])
    batch = json.loads(run.path.read_text())
    batch["status"] = "running"
    run.path.write_text(json.dumps(batch))
    return len(lines) - 1


def test_resume_calls_only_the_missing_cases(tmp_path):
    calls = []

    def counting(request):
        calls.append(request["case_id"])
        return bot(request)

    first = qe.evaluate(CASES, system=counting, out=tmp_path / "out")
    expected = first.metrics["overall_metrics"]
    assert _interrupt(first) == 3
    results = next(first.folder.glob("results_*.jsonl"))
    kept = json.loads(results.read_text())["case_id"]  # records come in completion order
    calls.clear()
    with pytest.raises(ConfigError, match="was a Python object of another session; pass it again"):
        qe.resume(first.path)
    again = qe.evaluate(CASES, system=counting, out=tmp_path / "out", resume=True)
    assert sorted(calls) == sorted({"c1", "c2", "c3", "c4"} - {kept})
    assert again.batch_id == first.batch_id and again.overall == expected
    with pytest.raises(ConfigError, match="is a run of other cases"):
        qe.evaluate(CASES[:2], system=counting, out=tmp_path / "out", resume=True)
    with pytest.raises(ConfigError, match="resume=True needs out=FOLDER"):
        qe.evaluate(CASES, system=counting, resume=True)


def test_resume_a_run_of_a_spec_string(tmp_path):
    spec = f"python:{SDMX / 'system.py'}:select"
    first = qe.evaluate(SDMX / "suite", system=spec, out=tmp_path)
    expected = first.overall
    _interrupt(first)
    resumed = qe.resume(tmp_path)
    assert resumed.overall == expected and resumed.status == "complete"


def test_load_reads_a_cli_run_and_compare_matches_the_cli(tmp_path):
    assert main(["run", str(SDMX / "suite"), "--responses", str(SDMX / "responses.jsonl"),
                 "--out", str(tmp_path / "a"), "-q", "--no-report"]) == 0
    (batch,) = (tmp_path / "a").rglob("batch_*.json")
    old = qe.load(batch)
    assert old.overall["macro_recall"] == pytest.approx(0.8478260869565217)
    new = qe.evaluate(SDMX / "suite", system=f"python:{SDMX / 'system.py'}:select",
                      out=tmp_path / "b")
    cmp = qe.compare(old, new, resamples=2000)
    assert main(["compare", str(batch), str(new.path), "--resamples", "2000", "-q",
                 "--json", str(tmp_path / "c.json")]) == 0
    assert cmp.to_dict() == json.loads((tmp_path / "c.json").read_text())
    table = cmp.to_pandas()
    assert set(table.index) == {"macro_precision", "macro_recall"}
    assert table.loc["macro_recall", "mean_a"] == pytest.approx(old.to_pandas()
                                                                  .groupby("id")["macro_recall"].first().mean(), rel=0.1)
    assert cmp.regressions == [m for m in table.index if table.loc[m, "regression"]]
    assert new.compare(old).to_dict() == qe.compare(old, new).to_dict()
    assert "macro_recall" in str(cmp) and "<td>macro_recall</td>" in cmp._repr_html_()


def test_compare_finds_a_regression_and_flips():
    good = qe.evaluate([case(f"g{i}", "mexico", MEX) for i in range(12)], system=bot)

    def worse(request):
        return {"indicator_selection": []}

    bad = qe.evaluate([case(f"g{i}", "mexico", MEX) for i in range(12)], system=worse)
    cmp = qe.compare(good, bad)
    assert cmp.regressions == ["macro_precision", "macro_recall"]
    flips = cmp.flips()
    assert len(flips) == 24 and set(flips["change"]) == {"regressed"}
    assert (flips["delta"] == -1.0).all()
    from queryeval.errors import GateFailure

    with pytest.raises(GateFailure, match="significant regression"):
        cmp.check()
    assert "worse on 2: macro_precision, macro_recall" in cmp._repr_html_()


def test_comparison_html_escapes_metric_and_case_text():
    from queryeval.report.compare import Comparison as Raw
    from queryeval.report.compare import Flip, MetricComparison

    name = "<img src=x onerror=alert(1)>"
    m = MetricComparison(name, 1, 1.0, 0.0, -1.0, -1.0, -1.0, 0.01, "exact", 0.02, p_holm=0.01,
                         regressed=[Flip("c<1>", "<b>", 1.0, 0.0)])
    raw = Raw(task="<t>", run_a={"batch_id": "<a>"}, run_b={"batch_id": "<b>"}, paired=1,
              only_a=[], only_b=[], excluded=[], metrics=[m], alpha=0.05, confidence=0.95,
              resamples=10, seed=0)
    page = qe.Comparison(raw)._repr_html_()
    assert "<img" not in page and "<t>" not in page and "<a>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "&lt;t&gt;" in page
    assert qe.Comparison(raw).regressions == [name]


def test_async_system_returning_nan_is_malformed_on_its_case():
    async def nan_bot(request: dict) -> dict:
        out = bot(request)
        if request["case_id"] == "c2":
            out["indicator_selection"][0]["score"] = float("nan")
        return out

    run = qe.evaluate(CASES, system=nan_bot)
    rows = run.to_pandas().set_index("id")
    assert rows.loc["c2", "status"] == "error"
    assert "NaN is not a finite number" in rows.loc["c2", "error"]
    assert (rows.drop(index="c2")["status"] == "ok").all()


def test_calls_and_check_calls_follow_the_error_rate():
    def half(request: dict) -> dict:
        if request["case_id"] in ("c1", "c2"):
            raise ValueError("model overloaded")
        return bot(request)

    run = qe.evaluate(CASES, system=half, retries=0)
    assert run.calls == {"total": 4, "failed": 2}
    (kind,) = run.error_summary
    assert kind["count"] == 2 and "model overloaded" in kind["first_message"]
    run.check_calls()  # half failed: under the default limit (only all-failed raises)
    with pytest.raises(CallsFailed, match=r"^2 of 4 calls to the system failed \(50\.0%\)"):
        run.check_calls(max_error_rate=0.25)
    down = qe.evaluate(CASES, system="http://127.0.0.1:1/", retries=0, timeout=5)
    with pytest.raises(CallsFailed, match="^all 4 calls to the system failed$"):
        down.check_calls()
    assert down.overall["macro_recall"] == 0  # a failed call never scores as correct


@pytest.mark.parametrize(("metadata", "message"), [
    ({"x": object()}, "cases[1].metadata.x: not a JSON value (object)"),
    ({"x": [1, float("nan")]}, "cases[1].metadata.x[1]: nan is not a finite number"),
    ({"x": {3: "y"}}, "cases[1].metadata.x: key 3 is not text"),
])
def test_in_memory_case_values_a_suite_could_not_hold_are_named(metadata, message):
    """As a suite file's reader refuses NaN (and a JSON file cannot hold an object), an
    in-memory case's value is refused naming its place, never a serializer's traceback and
    never stored as something else (NaN used to become null)."""
    cases = [dict(CASES[0]), {**CASES[1], "metadata": metadata}]
    with pytest.raises(InputError) as err:
        qe.evaluate(cases, system=bot)
    assert str(err.value) == message
