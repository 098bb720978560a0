"""Hostile text in every output a user opens: xlsx reports (no formula cells, no crash on
control characters), CSV files (formula triggers neutralised, numbers kept), the console
(rich markup literal, no escape sequence reaches the terminal), for every task kind."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import openpyxl
import pytest
from openpyxl import Workbook
from rich.console import Console

from queryeval.cli.app import main
from queryeval.io.safetext import (
    CSV_RAW_ENV,
    console_plain,
    console_text,
    csv_cell,
    csv_uncell,
    xlsx_text,
)

REPO = Path(__file__).resolve().parents[2]
CONTROLS = [chr(i) for i in range(32)] + ["\x7f"]
FORMULAS = ['=HYPERLINK("http://x/?"&B2,"x")', "=cmd|' /C calc'!A0", "+1+2", "-2+3",
            "@SUM(A1:A9)", "=== turn 0"]
MARKUP = ["[/x]", "[link=http://evil]x[/link]", "[bold red]loud"]
ESCAPES = ["e\x1b]8;;http://evil\x1b\\y\x1b]8;;\x1b\\", "w\x1b[2J\x1b[31mred", "c\x9b2J"]
#: Every hostile name a test suite uses (ids, names, tags, dimensions, datasets, ...).
HOSTILE = FORMULAS + MARKUP + ESCAPES + ["ctl" + "".join(CONTROLS)]


def expected_visible(text: str) -> str:
    """Hand-written form of the documented escape: \\xNN for C0 (but tab/LF/CR), DEL, C1."""
    out = []
    for ch in text:
        cp = ord(ch)
        bad = (cp < 32 and ch not in "\t\n\r") or 0x7f <= cp <= 0x9f
        out.append(f"\\x{cp:02x}" if bad else ch)
    return "".join(out)


def xlsx_texts(path: Path) -> list[str]:
    """Every cell's text; fails on a formula cell."""
    wb = openpyxl.load_workbook(path)
    texts = []
    for ws in wb:
        for row in ws.iter_rows():
            for c in row:
                assert c.data_type != "f", f"{path.name}!{ws.title}!{c.coordinate} is a formula: {c.value!r}"
                if isinstance(c.value, str):
                    texts.append(c.value)
    return texts


def assert_in_cells(texts: list[str], wanted: list[str]) -> None:
    blob = "\n".join(texts)
    for w in wanted:
        assert expected_visible(w) in blob, w


def only(folder: Path, pattern: str) -> Path:
    (path,) = folder.rglob(pattern)
    return path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# --- the sanitisers ---------------------------------------------------------------------------
def test_xlsx_text_escapes_exactly_what_a_cell_cannot_hold():
    for ch in CONTROLS:
        want = ch if ch in "\t\n\r" else f"\\x{ord(ch):02x}"
        assert xlsx_text(f"a{ch}b") == f"a{want}b"
    assert xlsx_text("\ud800x\udfff") == "\\ud800x\\udfff"
    assert xlsx_text("\ufffe\uffff\ufffd") == "\\ufffe\\uffff\ufffd"
    assert xlsx_text("\x85\x9b") == "\\x85\\x9b"
    assert xlsx_text("=1+1 é 😀 \\x1b") == "=1+1 é 😀 \\x1b"  # text and backslashes untouched


def test_csv_cell_neutralises_formulas_keeps_numbers_and_round_trips():
    assert csv_cell(-0.5) == -0.5 and csv_cell(3) == 3 and csv_cell(None) == ""
    assert csv_cell(True) == "True"
    for number_text in ("-0.5", "+3", "-1e-5", "-.5"):
        assert csv_cell(number_text) == number_text
    cases = {"=1+1": "'=1+1", "+1+2": "'+1+2", "-2+3": "'-2+3", "@SUM(A1)": "'@SUM(A1)",
             "\t=1": "'\t=1", "\r=1": "'\r=1", "＝1+1": "'＝1+1", "'=1": "''=1", "''+x": "'''+x",
             "'quoted'": "'quoted'", "plain": "plain", "": "", "a=b": "a=b", " =1": " =1"}
    for raw, cell in cases.items():
        assert csv_cell(raw) == cell, raw
        assert csv_uncell(cell) == raw, raw
        assert csv_cell(raw, raw=True) == raw


def test_console_text_is_literal_and_holds_no_control_character():
    buf = io.StringIO()
    con = Console(file=buf, width=200, force_terminal=True, color_system="truecolor")
    for s in HOSTILE:
        con.print(console_text(s))
    out = buf.getvalue()
    for s in MARKUP:
        assert s in out
    assert "e\\x1b]8;;http://evil\\x1b\\y" in out and "c\\x9b2J" in out
    assert "\x1b]8" not in out and "\x1b[2J" not in out and "\x9b" not in out
    assert console_plain("a\u202eb\x00\n") == "a\\u202eb\\x00\n"


def test_put_writes_every_value_kind(tmp_path):
    from queryeval.report.xlsx import EXCEL_CELL_LIMIT, put, save

    wb = Workbook()
    ws = wb.active
    values = [*HOSTILE, *(f"x{c}y" for c in CONTROLS), "\ud800", "\ufffe", "a" * 40_000,
              {"k": "=v"}, ["=a"], -0.5, 7, True, None]
    for i, v in enumerate(values, start=1):
        put(ws, i, 1, v)
    save(wb, tmp_path / "t.xlsx")
    back = openpyxl.load_workbook(tmp_path / "t.xlsx").active
    for i, v in enumerate(values, start=1):
        c = back.cell(row=i, column=1)
        if v is None or isinstance(v, (int, float)):
            assert c.value == v and c.data_type in ("n", "b")
            continue
        assert c.data_type == "s", (v, c.data_type)
        text = str(v)
        if len(text) > EXCEL_CELL_LIMIT:
            assert len(c.value) <= EXCEL_CELL_LIMIT and c.value.endswith("in the results JSONL)")
        elif text in ("\ud800", "\ufffe"):
            assert c.value == f"\\u{ord(text):04x}"
        else:
            assert c.value == expected_visible(text)


def test_put_keeps_every_kind_of_number_a_number(tmp_path):
    from decimal import Decimal
    from fractions import Fraction

    import numpy as np

    from queryeval.report.xlsx import put, save

    wb = Workbook()
    values = [Decimal("-1.5"), Fraction(1, 4), np.int64(-3), np.float64(0.5), -0.5]
    for i, v in enumerate(values, start=1):
        put(wb.active, i, 1, v)
    save(wb, tmp_path / "n.xlsx")
    back = openpyxl.load_workbook(tmp_path / "n.xlsx").active
    assert [(c.value, c.data_type) for (c,) in back.iter_rows()] == [
        (-1.5, "n"), (0.25, "n"), (-3, "n"), (0.5, "n"), (-0.5, "n")]


# --- every xlsx report -----------------------------------------------------------------------
def _selection(ds: str, dim: str, vid: str) -> list[dict]:
    return [{"dataset_id": ds, "dimensions": [{"dimension_name": dim,
                                               "values": [{"id": vid, "name": vid}]}]}]


#: Formula-only names (no control character, so an old writer cannot fail on those first),
#: then every hostile name.
NAME_SETS = pytest.mark.parametrize("names", [FORMULAS, HOSTILE], ids=["formulas", "all"])


def write_selection_suite(tmp_path: Path, names: list[str] = HOSTILE) -> tuple[Path, Path]:
    """A two-turn indicator_selection suite whose every name is hostile, and its responses."""
    cases, responses = [], []
    for h in names:
        cases.append({"id": h, "name": h, "tags": [h], "conversation": [
            {"role": "user", "content": h, "target": {"indicator_selection": _selection(h, h, h)}},
            {"role": "assistant", "content": h},
            {"role": "user", "content": h, "target": {"indicator_selection": _selection(h, h, h)}}]})
        responses.append({"case_id": h, "turn": 0, "indicator_selection": _selection(h, h, "x" + h)})
        responses.append({"case_id": h, "turn": 2, "indicator_selection": _selection(h, h, h)})
    tmp_path.mkdir(parents=True, exist_ok=True)
    return (write_jsonl(tmp_path / "sel.jsonl", cases),
            write_jsonl(tmp_path / "sel-resp.jsonl", responses))


def selection_run(tmp_path: Path, *extra: str, names: list[str] = HOSTILE) -> Path:
    """Run :func:`write_selection_suite`'s suite; returns the output folder."""
    suite, resp = write_selection_suite(tmp_path, names)
    out = tmp_path / "sel-out"
    assert main(["run", str(suite), "--responses", str(resp), "--out", str(out), "-q", "-c", "1",
                 *extra]) == 0
    return out


@NAME_SETS
def test_selection_report_has_no_formula_and_keeps_every_name(tmp_path, names):
    out = selection_run(tmp_path, names=names)
    texts = xlsx_texts(only(out, "report_*.xlsx"))
    assert_in_cells(texts, names)
    wb = openpyxl.load_workbook(only(out, "report_*.xlsx"))
    details = [c.value for c in wb["Overview"]["F"][1:]]
    assert details[0].startswith('=== turn 0: =HYPERLINK("http://x/?"&B2,"x")\n')


@NAME_SETS
def test_answers_report_has_no_formula(tmp_path, names):
    cases = [{"id": h, "name": h, "metadata": {"concepts": [h], "level": h, "format": "@a[x]"},
              "conversation": [{"role": "user", "content": h, "target": {"answers": {"a": h}}}]}
             for h in names]
    suite = write_jsonl(tmp_path / "ans.jsonl", cases)
    resp = write_jsonl(tmp_path / "ans-resp.jsonl",
                       [{"id": h, "response": f"{h} @a[{h}]"} for h in names])
    assert main(["run", str(suite), "--responses", str(resp), "--out", str(tmp_path / "o"),
                 "-q", "--export", "dabench"]) == 0
    texts = xlsx_texts(only(tmp_path / "o", "report_*.xlsx"))
    assert_in_cells(texts, names)
    analysis = json.loads(only(tmp_path / "o", "dabench_*.json").read_text())
    assert set(analysis["concept_accuracy_analysis"]) == set(names)  # JSON keeps text exactly


@NAME_SETS
def test_query_report_has_no_formula(tmp_path, names):
    shutil.copy(REPO / "examples" / "sparql" / "building.ttl", tmp_path / "building.ttl")
    gold = "SELECT ?ahu WHERE { ?ahu a brick:Air_Handling_Unit }"
    cases = [{"id": h, "name": h, "tags": [h], "conversation": [
        {"role": "user", "content": h, "target": {"query": {"source": "building.ttl", "gold": gold}}}]}
        for h in names]
    suite = write_jsonl(tmp_path / "q.jsonl", cases)
    resp = write_jsonl(tmp_path / "q-resp.jsonl", [{"case_id": h, "query": h} for h in names])
    assert main(["run", str(suite), "--responses", str(resp), "--out", str(tmp_path / "o"), "-q"]) == 0
    texts = xlsx_texts(only(tmp_path / "o", "report_*.xlsx"))
    assert_in_cells(texts, names)


@NAME_SETS
def test_fields_report_has_no_formula(tmp_path, names):
    cases = [{"id": h, "conversation": [
        {"role": "user", "content": h, "target": {"fields": {"item": [h, "b"]}}}]} for h in names]
    suite = write_jsonl(tmp_path / "f.jsonl", cases)
    resp = write_jsonl(tmp_path / "f-resp.jsonl",
                       [{"case_id": h, "fields": {"item": ["=z", h]}} for h in names])
    assert main(["run", str(suite), "--responses", str(resp), "--out", str(tmp_path / "o"), "-q",
                 "--option", "n=2"]) == 0
    texts = xlsx_texts(only(tmp_path / "o", "report_*.xlsx"))
    assert_in_cells(texts, [*names, "=z"])


@NAME_SETS
def test_repeats_sheet_of_flaky_hostile_cases_goes_through_the_safe_writer(tmp_path, names):
    """Issue 24 item 5: a flaky case id holding a control character or ESC crashed the run's
    reports (the Repeats sheet bypassed :func:`queryeval.report.xlsx.put`), and so did
    ``queryeval report``. Every case here is flaky: repeat 0 right, repeat 1 wrong."""
    suite, _ = write_selection_suite(tmp_path, names)
    resp = write_jsonl(tmp_path / "rep.jsonl", [
        {"case_id": h, "turn": t, "repeat": r,
         "indicator_selection": _selection(h, h, h if r == 0 else "x" + h)}
        for h in names for t in (0, 2) for r in (0, 1)])
    out = tmp_path / "o"
    assert main(["run", str(suite), "--responses", str(resp), "--repeats", "2", "--out", str(out),
                 "-q", "-c", "1"]) == 0
    assert only(out, "report_*.html").stat().st_size > 0
    for again in (False, True):
        if again:  # queryeval report writes the same sheet again
            only(out, "report_*.html").unlink()
            assert main(["report", str(only(out, "batch_*.json"))]) == 0
            assert only(out, "report_*.html").stat().st_size > 0
        wb = openpyxl.load_workbook(only(out, "report_*.xlsx"))
        rows = [[c.value for c in row] for row in wb["Repeats"].iter_rows()]
        start = next(i for i, r in enumerate(rows) if r[0] == "flaky case") + 1
        assert [r[:3] for r in rows[start:]] == [[expected_visible(h), 0.5, "PF"] for h in names]
        assert all(c.data_type != "f" for row in wb["Repeats"].iter_rows() for c in row)


def test_only_the_safe_writer_sets_a_cell():
    """Every xlsx cell of every report is set by ``report.xlsx.put`` (issue 24 item 5: the
    Repeats sheet used ``ws.append``): no other module of the package calls a worksheet's
    ``append`` or ``cell(..., value=...)`` or assigns a cell's ``value``."""
    import ast

    import queryeval

    package = Path(queryeval.__file__).resolve().parent
    found = []
    for path in sorted(package.rglob("*.py")):
        if path == package / "report" / "xlsx.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                    (node.func.attr == "append" and isinstance(node.func.value, ast.Name)
                     and node.func.value.id in ("ws", "sheet", "worksheet"))
                    or (node.func.attr == "cell" and any(k.arg == "value" for k in node.keywords))):
                found.append(f"{path.relative_to(package)}:{node.lineno}")
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Attribute) and t.attr == "value"
                    and isinstance(t.value, (ast.Name, ast.Subscript, ast.Call)) for t in node.targets):
                found.append(f"{path.relative_to(package)}:{node.lineno}")
    assert found == []


def test_put_writes_numbers_no_float_holds_as_text(tmp_path):
    """A number a spreadsheet cannot hold (NaN, infinity, an integer beyond the float range)
    is written as text: the file opens, and no cell shows a wrong number."""
    from queryeval.report.xlsx import put, save

    wb = Workbook()
    values = [10**400, -(10**400), float("nan"), float("inf"), -float("inf"), 10**300, 1e308]
    for i, v in enumerate(values, start=1):
        put(wb.active, i, 1, v)
    save(wb, tmp_path / "h.xlsx")
    back = openpyxl.load_workbook(tmp_path / "h.xlsx").active
    assert [(c.value, c.data_type) for (c,) in back.iter_rows()] == [
        ("1" + "0" * 400, "s"), ("-1" + "0" * 400, "s"), ("nan", "s"), ("inf", "s"),
        ("-inf", "s"), (1e300, "n"), (1e308, "n")]


def test_compare_xlsx_and_console_are_literal(tmp_path):
    from queryeval.report.compare import compare_runs
    from queryeval.report.compare_output import console_renderables, write_xlsx

    a = selection_run(tmp_path / "a")
    b = selection_run(tmp_path / "b")
    # make B differ on every case so that every case is a flipped case
    for path in b.rglob("results_*.jsonl"):
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        for r in lines:
            r["scores"]["macro_recall"] = 0.0
        write_jsonl(path, lines)
    comp = compare_runs(only(a, "batch_*.json"), only(b, "batch_*.json"), resamples=50)
    recall = comp.metric("macro_recall")
    assert {f.case_id for f in recall.regressed} == set(HOSTILE)
    texts = xlsx_texts(write_xlsx(comp, tmp_path / "c.xlsx"))
    assert_in_cells(texts, HOSTILE)
    buf = io.StringIO()
    con = Console(file=buf, width=400, force_terminal=True)
    for r in console_renderables(comp, details=True, max_flips=100):
        con.print(r)
    out = buf.getvalue()
    assert "[/x] [/x]" in out and "[link=http://evil]x[/link] [link=http://evil]x[/link]" in out
    assert "\x1b]8" not in out and "\x1b[2J" not in out and "\x9b" not in out


def test_tune_outputs_are_literal(tmp_path):
    from fractions import Fraction

    from queryeval.report.tuning import render_table, write_csv, write_xlsx
    from queryeval.tune.pipeline import TuneResult, TuneRow
    from queryeval.tune.problem import Objective

    rows = [TuneRow(h, 2, h, 0.5, 1, 10) for h in HOSTILE]
    result = TuneResult(rows, 2, Objective(1, Fraction(1, 2), 10), None, True, 3,
                        {h: {h: -0.5} for h in HOSTILE}, notes=("=note",))
    write_xlsx(result, tmp_path / "t.xlsx")
    assert_in_cells(xlsx_texts(tmp_path / "t.xlsx"), [*HOSTILE, "=note"])
    write_csv(result, tmp_path / "t.csv")
    got = list(csv.reader((tmp_path / "t.csv").open(encoding="utf-8", newline="")))
    assert [csv_uncell(r[0]) for r in got[1:]] == HOSTILE
    assert got[1][:3] == ["'" + HOSTILE[0], "2", "'" + HOSTILE[0]]
    buf = io.StringIO()
    Console(file=buf, width=400, force_terminal=True).print(render_table(result))
    assert "[/x]" in buf.getvalue() and "\x1b]8" not in buf.getvalue()


# --- CSV run logs -----------------------------------------------------------------------------
def test_results_csv_neutralises_text_keeps_numbers_and_orders_by_escaped_ids(tmp_path):
    from queryeval.run.log import RunLog
    from queryeval.run.records import csv_order

    log = RunLog.create(tmp_path, {"task": "x"}, dated=False)
    rows = [{"id": "=a", "v": -0.5, "t": "-0.5", "s": "-2+3", "n": None},
            {"id": "@b", "v": 2, "t": "+x", "s": "'=q", "n": "ok"},
            {"id": "plain", "v": 1e-9, "t": "\t=1", "s": "x", "n": "=1"}]
    log.write_csv(["id", "v", "t", "s", "n"], rows)
    got = list(csv.reader(log.paths.results_csv.open(encoding="utf-8", newline="")))
    assert got == [["id", "v", "t", "s", "n"],
                   ["'=a", "-0.5", "-0.5", "'-2+3", ""],
                   ["'@b", "2", "'+x", "''=q", "ok"],
                   ["plain", "1e-09", "'\t=1", "x", "'=1"]]
    order = csv_order(log.paths.results_csv)
    assert [order.get(i) for i in ("=a", "@b", "plain")] == [0, 1, 2]


def test_results_csv_raw_switch(tmp_path, monkeypatch):
    from queryeval.run.log import RunLog

    log = RunLog.create(tmp_path, {"task": "x"}, dated=False)
    monkeypatch.setenv(CSV_RAW_ENV, "1")
    log.write_csv(["id", "v"], [{"id": "=a", "v": -1}])
    assert log.paths.results_csv.read_text(encoding="utf-8").splitlines() == ["id,v", "=a,-1"]
    log.write_csv(["id"], [{"id": "=a"}], raw=False)  # an explicit choice wins
    assert log.paths.results_csv.read_text(encoding="utf-8").splitlines() == ["id", "'=a"]


def test_run_csv_round_trips_to_the_records(tmp_path):
    out = selection_run(tmp_path)
    rows = list(csv.DictReader(only(out, "results_*.csv").open(encoding="utf-8", newline="")))
    records = [json.loads(x) for x in only(out, "results_*.jsonl").read_text().splitlines()]
    assert [csv_uncell(r["case_id"]) for r in rows[::2]] == [r["case_id"] for r in records]
    assert [csv_uncell(r["name"]) for r in rows[::2]] == HOSTILE
    for r in rows:
        for key in ("case_id", "name", "dataset_id", "dimension"):
            assert r[key][:1] not in "=+-@\t\r" or r[key] == "", (key, r[key])
        assert float(r["precision"]) in (0.0, 1.0)


def test_retrieval_csv_neutralises_dataset_and_document(tmp_path):
    import hashlib

    text = "Chunk text."
    md5 = hashlib.md5(text.encode()).hexdigest()
    write_jsonl(tmp_path / "corpus.jsonl", [{"chunk_id": "=c1", "content": text,
                                             "document_name": "=doc", "dataset": "@ds"}])
    with (tmp_path / "q.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["question", "answer", "document_name", "dataset", "chunk_id", "content_hash"])
        w.writerow(["=HYPERLINK(\"http://x\")", "+a", "=doc", "@ds", "=c1", md5])
    assert main(["run", str(tmp_path / "q.csv"), "--corpus", str(tmp_path / "corpus.jsonl"),
                 "--k", "1", "--out", str(tmp_path / "o"), "-q"]) == 0
    (row,) = csv.DictReader(only(tmp_path / "o", "results_*.csv").open(encoding="utf-8", newline=""))
    neutral = [v for v in row.values() if v.lstrip("'")[:1] in ("=", "+", "@")]
    assert neutral and all(v.startswith("'") for v in neutral), row
    assert row["question"] == "'=HYPERLINK(\"http://x\")"


# --- the console, end to end -------------------------------------------------------------------
def cli(*args: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "src"), "COLUMNS": "300"}
    return subprocess.run([sys.executable, "-m", "queryeval", *args], capture_output=True,
                          timeout=120, check=False, env=env)


@pytest.mark.parametrize("gate, code", [("macro_recall=0.1", 0), ("macro_recall=0.9", 1)])
def test_cli_summary_prints_names_literally_and_still_gates(tmp_path, gate, code):
    suite, resp = write_selection_suite(tmp_path)
    res = cli("run", str(suite), "--responses", str(resp),
              "--out", str(tmp_path / "cli"), "--no-report", "--fail-under", gate)
    out, err = res.stdout.decode("utf-8"), res.stderr.decode("utf-8")
    assert res.returncode == code, err
    assert "Traceback" not in err
    for name in MARKUP:
        assert name in out  # the dimension table shows each name as written
    assert "'e\\x1b]8;;http://evil\\x1b\\\\y" in out  # a name: one line, its repr
    assert b"\x1b" not in res.stdout and b"\x1b" not in res.stderr
    assert "\x9b" not in out
    assert ("gates passed" in out) == (code == 0)
    if code:
        assert "macro_recall" in err


def test_cli_error_line_shows_controls(tmp_path):
    """A bad file in a suite folder, named with an OSC 8 hyperlink: the error line names it
    with the controls shown, not sent."""
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "a\x1b]8;;https:evil\x1b\\.yaml").write_text("id: x\nconversation: 5\n")
    res = cli("validate", str(folder))
    err = res.stderr.decode("utf-8")
    assert res.returncode == 2 and "Traceback" not in err
    assert "a\\x1b]8;;https:evil\\x1b\\.yaml:2: conversation:" in err
    assert b"\x1b" not in res.stderr


def test_cli_trec_per_query_ids_are_literal(tmp_path):
    (tmp_path / "qrels").write_text("[/x] 0 d1 1\n")
    (tmp_path / "run").write_text("[/x] Q0 d1 1 1.0 t\n")
    res = cli("trec", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "ndcg@10",
              "--per-query")
    assert res.returncode == 0, res.stderr
    assert "[/x]" in res.stdout.decode()


def test_cli_rescore_prints_a_hostile_source_batch_id_with_controls_shown(tmp_path):
    """A run log from elsewhere whose batch id holds an OSC 8 hyperlink."""
    out = selection_run(tmp_path, "--no-report", names=FORMULAS)
    batch = only(out, "batch_*.json")
    old_id = json.loads(batch.read_text())["batch_id"]
    new_id = "r\x1b[2J\x1b]8;;https:evil\x07"  # a batch id holds no backslash
    for path in list(batch.parent.iterdir()):
        path.rename(path.with_name(path.name.replace(old_id, new_id)))
    new_batch = batch.with_name(f"batch_{new_id}.json")
    doc = json.loads(new_batch.read_text())
    new_batch.write_text(json.dumps({**doc, "batch_id": new_id}))
    res = cli("rescore", str(new_batch), "--out", str(tmp_path / "re"), "--no-report")
    assert res.returncode == 0, res.stderr
    assert b"\x1b" not in res.stdout and b"\x1b" not in res.stderr
    assert "re-scored r\\x1b[2J\\x1b]8;;https:evil\\x07 (changed options: none)" in res.stdout.decode()


def test_compare_sheet_titles_from_hostile_metric_names_save(tmp_path):
    from queryeval.report.compare_output import _sheet_title
    from queryeval.report.xlsx import save

    used: set[str] = set()
    titles = [_sheet_title(n, used) for n in ("'a\x1b[b]:c'", "\x00", "=x", "=x")]
    assert titles == ["a_x1b_b__c", "_x00", "=x", "=x~2"]
    wb = Workbook()
    for t in titles:
        wb.create_sheet(t)
    save(wb, tmp_path / "s.xlsx")
    assert openpyxl.load_workbook(tmp_path / "s.xlsx").sheetnames[1:] == titles


def test_page_title_shows_control_characters_as_visible_escapes():
    """A suite or run name in the HTML page's <title> (the browser tab) keeps no raw control
    character: ESC, NUL and C1 are shown as the console shows them."""
    from queryeval.report.html_page import page

    head = page("suite \x1b[2J\x00<b>\x85", "").split("</title>")[0]
    assert "\\x1b[2J" in head and "\\x00" in head and "\\x85" in head and "&lt;b&gt;" in head
    assert not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in head.split("<title>")[1])
