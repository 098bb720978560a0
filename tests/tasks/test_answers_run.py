"""Seed 001 through the runner: DABench native files and suite YAML, both missing modes,
both match modes, a system that gets the question and its table path, the reference export,
the reformat step against a loopback fake OpenAI server, and the xlsx."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import openpyxl
import pytest

from queryeval.cli.app import main

SUITE = """\
id: q1
metadata: {concepts: [Summary Statistics], level: easy, format: "@a[x] @b[y]", file_name: t1.csv}
conversation:
- {role: user, content: Two values?, target: {answers: [{name: a, value: "1"}, {name: b, value: "2"}]}}
---
id: q2
metadata: {concepts: [Summary Statistics, Correlation Analysis], level: hard, format: "@c[x]", file_name: t2.csv}
conversation:
- {role: user, content: One value?, target: {answers: {c: "5"}}}
---
id: q3
metadata: {concepts: [Correlation Analysis], level: easy, format: "@d[] @e[] @f[]", file_name: t1.csv}
conversation:
- {role: user, content: Three words?, target: {answers: {d: x, e: y, f: z}}}
---
id: q4
metadata: {concepts: [Outlier Detection], level: hard, format: "@g[n]", file_name: t3.csv}
conversation:
- {role: user, content: Count?, target: {answers: {g: "10"}}}
"""

RESPONSES = [
    {"id": "q1", "response": "a is @a[1] and b is @b[3]"},  # 1 of 2
    {"id": "q2", "response": "@c[5.0000001]"},  # numeric match (|diff| < 1e-6), strict miss
    {"id": "q3", "response": "@d[x] @e[y] @f[z]"},  # 3 of 3
    {"id": "q4", "response": ""},  # empty: missing
]


def files(out: Path) -> dict:
    (batch,) = out.rglob("batch_*.json")
    bid = batch.stem.removeprefix("batch_")
    return {k: batch.parent / f"{k}_{bid}.{ext}" for k, ext in
            (("results", "jsonl"), ("metrics", "json"), ("report", "xlsx"), ("dabench", "json"),
             ("batch", "json"))}


@pytest.fixture
def suite(tmp_path):
    p = tmp_path / "suite.yaml"
    p.write_text(SUITE)
    r = tmp_path / "responses.jsonl"
    r.write_text("".join(json.dumps(x) + "\n" for x in RESPONSES))
    return p, r


def run(tmp_path, suite, responses, *extra) -> dict:
    out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
    assert main(["run", str(suite), "--responses", str(responses), "--out", str(out), "-q", *extra]) == 0
    return files(out)


def overall(f) -> dict:
    return json.loads(f["metrics"].read_text())["overall_metrics"]


def test_hand_computed_metrics_differ_and_follow_the_modes(tmp_path, suite):
    s, r = suite
    f = run(tmp_path, s, r)
    o = overall(f)
    # missing=wrong: PSAQ = (1/2 + 1 + 1 + 0)/4, ABQ = 2/4, UASQ = (1+1+3+0)/(2+1+3+1)
    assert o["psaq"] == pytest.approx(0.625)
    assert o["abq"] == 0.5
    assert o["uasq"] == pytest.approx(5 / 7)
    assert (o["questions"], o["answered"], o["missing"], o["subquestions"]) == (4, 3, 1, 7)
    groups = json.loads(f["metrics"].read_text())["group_metrics"]
    assert groups["concept"]["Summary Statistics"]["abq"] == 0.5
    assert groups["concept"]["Correlation Analysis"]["abq"] == 1.0
    assert groups["concept"]["Outlier Detection"]["abq"] == 0.0
    assert groups["concept_group"]["1"]["abq"] == pytest.approx(1 / 3)
    assert groups["concept_group"][">1"]["abq"] == 1.0
    assert groups["level"]["easy"]["psaq"] == pytest.approx(0.75)
    # missing=skip (the reference): q4 leaves every denominator
    o = overall(run(tmp_path, s, r, "--missing", "skip"))
    assert o["psaq"] == pytest.approx(2.5 / 3) and o["abq"] == pytest.approx(2 / 3)
    assert o["uasq"] == pytest.approx(5 / 6) and o["questions"] == 3 and o["missing"] == 1
    # match=strict: "5.0000001" != "5"
    o = overall(run(tmp_path, s, r, "--match", "strict"))
    assert o["psaq"] == pytest.approx(0.375) and o["abq"] == 0.25 and o["uasq"] == pytest.approx(4 / 7)


def test_per_case_results_hold_expected_and_extracted(tmp_path, suite):
    s, r = suite
    f = run(tmp_path, s, r)
    recs = {x["case_id"]: x for x in map(json.loads, f["results"].read_text().splitlines())}
    assert recs["q1"]["subquestions"] == [
        {"name": "a", "expected": "1", "extracted": "1", "matched": True},
        {"name": "b", "expected": "2", "extracted": "3", "matched": False},
    ]
    assert recs["q4"]["answered"] is False and recs["q4"]["scores"]["proportion_correct"] == 0.0
    wb = openpyxl.load_workbook(f["report"])
    assert wb.sheetnames == ["Overview", "Statistics"]
    ov = wb["Overview"]
    assert ov["A2"].value == "q1" and ov["F2"].value == 0.5 and ov["F2"].number_format == "0.00%"
    assert "✗ @b: expected [2], got [3]" in ov["E2"].value
    assert ov["I5"].value == "missing (scored 0)"
    st = wb["Statistics"]
    cells = [tuple(row) for row in st.iter_rows(values_only=True)]
    assert cells[0][0] == "Closed-form metrics"
    assert cells[1][:3] == ("PSAQ", "ABQ", "UASQ")
    assert cells[2][0] == pytest.approx(0.625)
    i = [r[0] for r in cells].index("ABQ by number of concepts")
    assert cells[i + 1][:3] == ("1 concept", ">1 concepts", "Overall")
    assert cells[i + 2][:3] == (pytest.approx(1 / 3), 1.0, 0.5)


def test_missing_recorded_line_counts_as_missing_not_as_an_error(tmp_path, suite):
    s, r = suite
    r.write_text("".join(json.dumps(x) + "\n" for x in RESPONSES[:3]))
    o = overall(run(tmp_path, s, r))
    assert o["missing"] == 1 and o["errors"] == 0 and o["abq"] == 0.5


def test_system_receives_question_constraints_format_and_table_path(tmp_path, suite):
    s, _ = suite
    tables = tmp_path / "tables"
    tables.mkdir()
    mod = tmp_path / "sys.py"
    mod.write_text(
        "import json\nSEEN = []\n"
        "def answer(req):\n"
        "    SEEN.append(req)\n"
        "    with open(%r, 'a') as fh: fh.write(json.dumps(req) + '\\n')\n"
        "    return {'response': '@a[1] @b[2] @c[5] @d[x] @e[y] @f[z] @g[10]'}\n"
        % str(tmp_path / "seen.jsonl"))
    out = tmp_path / "o"
    assert main(["run", str(s), "--system", f"python:{mod}:answer", "--tables", str(tables),
                 "--out", str(out), "-q"]) == 0
    assert overall(files(out))["abq"] == 1.0
    seen = {x["case_id"]: x for x in map(json.loads, (tmp_path / "seen.jsonl").read_text().splitlines())}
    q1 = seen["q1"]
    assert q1["task"] == "answers" and q1["question"] == "Two values?"
    assert q1["format"] == "@a[x] @b[y]" and q1["file_name"] == "t1.csv"
    assert q1["table_path"] == str((tables / "t1.csv").resolve())


def test_dabench_export_matches_the_reference_structure(tmp_path, suite):
    s, r = suite
    f = run(tmp_path, s, r, "--export", "dabench", "--missing", "skip")
    doc = json.loads(f["dabench"].read_text())
    assert doc["main_results"] == {"Accuracy by Question": round(2 / 3, 4),
                                   "Accuracy Proportional by Sub-Question": round(2.5 / 3, 4),
                                   "Accuracy by Sub-Question": round(5 / 6, 4)}
    assert doc["concept_accuracy_analysis"] == {"Summary Statistics": 0.5, "Correlation Analysis": 1.0}
    assert doc["two_or_more_concepts_accuracy"] == 1.0


@pytest.mark.parametrize("era", ["current", "seed-era"])
def test_labels_as_responses_score_one_on_the_public_data(tmp_path, shared_data, era):
    d = shared_data / "dabench" / era
    responses = tmp_path / "perfect.jsonl"
    with responses.open("w") as fh:
        for line in (d / "da-dev-labels.jsonl").read_text().splitlines():
            lab = json.loads(line)
            text = "Answer: " + " ".join(f"@{n}[{v}]" for n, v in lab["common_answers"])
            fh.write(json.dumps({"id": lab["id"], "response": text}) + "\n")
    out = tmp_path / "o"
    assert main(["run", str(d / "da-dev-questions.jsonl"), "--labels", str(d / "da-dev-labels.jsonl"),
                 "--responses", str(responses), "--out", str(out), "-q", "--no-report"]) == 0
    o = overall(files(out))
    assert (o["psaq"], o["abq"], o["uasq"]) == (1.0, 1.0, 1.0)
    assert o["questions"] == {"current": 257, "seed-era": 396}[era]


class FakeOpenAI:
    """A loopback OpenAI-compatible chat-completions server that rewrites to @name[value]."""

    def __init__(self):
        self.calls = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.calls += 1
                original = body["messages"][1]["content"]
                content = {"a=1, b=2": "@a[1] @b[2]"}.get(original, "@x[0]")
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_reformat_step_runs_and_caches(tmp_path, suite, monkeypatch):
    s, _ = suite
    r = tmp_path / "free.jsonl"
    r.write_text(json.dumps({"id": "q1", "response": "a=1, b=2"}) + "\n")
    monkeypatch.chdir(tmp_path)
    fake = FakeOpenAI()
    try:
        args = ["--reformat", "--reformat-model", "fake", "--reformat-base-url", fake.url,
                "--reformat-key-env", ""]
        f = run(tmp_path, s, r, *args)
        recs = {x["case_id"]: x for x in map(json.loads, f["results"].read_text().splitlines())}
        assert recs["q1"]["reformatted"] == "@a[1] @b[2]"
        assert recs["q1"]["scores"]["all_correct"] == 1.0
        assert fake.calls == 1  # only q1 had a response
        run(tmp_path, s, r, *args)
        assert fake.calls == 1  # second run served from the cache
    finally:
        fake.close()


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_compat_infiagent_takes_the_first_non_empty_response(tmp_path, suite, fmt, capsys):
    """InfiAgent's evaluator: first non-empty response per id, unknown ids ignored, missing
    answers skipped. By default a repeated id is refused, naming the line."""
    import csv as csvmod

    s, _ = suite
    rows = [
        {"id": "q1", "response": ""},  # empty: the next q1 line is used
        {"id": "q1", "response": "@a[1] @b[2]"},  # 2 of 2
        {"id": "q1", "response": "@a[9] @b[9]"},  # not the first non-empty: ignored
        {"id": "q2", "response": "@c[5]"},  # right, and first
        {"id": "q2", "response": "@c[7]"},
        {"id": "q3", "response": "@d[x] @e[y] @f[z]"},
        {"id": "q4", "response": ""},  # missing: skipped
        {"id": "zz", "response": "@a[1]"},  # unknown id: ignored
    ]
    r = tmp_path / f"dup.{fmt}"
    if fmt == "jsonl":
        r.write_text("".join(json.dumps(x) + "\n" for x in rows))
        second_q1 = 2
    else:
        with r.open("w", newline="") as fh:
            w = csvmod.DictWriter(fh, ["id", "response"])
            w.writeheader()
            w.writerows(rows)
        second_q1 = 3
    for extra in (("--option", "compat=infiagent"), ("--compat", "infiagent")):
        o = overall(run(tmp_path, s, r, *extra))
        assert (o["psaq"], o["abq"], o["uasq"]) == (1.0, 1.0, 1.0)
        assert o["questions"] == 3 and o["missing"] == 1
    capsys.readouterr()
    assert main(["run", str(s), "--responses", str(r), "--out", str(tmp_path / "x"), "-q"]) == 2
    err = capsys.readouterr().err
    assert f":{second_q1}:" in err and "duplicate response for case 'q1'" in err


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_tables_folder_that_is_not_there_is_refused_before_any_call(tmp_path, suite, kind,
                                                                        capsys):
    """--tables names the folder the system is sent table paths under; nothing else opens it,
    so a mistyped folder used to run on silently, every request naming a file that is not
    there."""
    s, _ = suite
    tables = tmp_path / "no-such-tables"
    if kind == "file":
        tables.write_text("a\n1\n")
    mod = tmp_path / "sys.py"
    mod.write_text("def answer(req):\n    raise AssertionError('called')\n")
    out = tmp_path / "o"
    capsys.readouterr()
    assert main(["run", str(s), "--system", f"python:{mod}:answer", "--tables", str(tables),
                 "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "Traceback" not in err
    assert "--tables" in err and "no-such-tables" in err and "not a folder" in err
    assert not list(out.rglob("batch_*.json"))


def _infiagent_figures(labels: list[dict], responses: list[dict]) -> tuple[float, float, float]:
    """The oracle: InfiAgent's examples/DA-Agent/eval_closed_form.py transcribed
    (evaluate_responses, then evaluate_accuracy_by_question, ..._proportional_by_sub_question_
    adjusted and ..._by_sub_question), returned as (PSAQ, ABQ, UASQ)."""
    import re

    def is_equal(response, label):
        if response == label:
            return True
        try:
            return abs(float(response) - float(label)) < 1e-6
        except Exception:  # noqa: BLE001 - the reference's bare except
            return False

    results = []
    for label in labels:
        answers = {a[0]: a[1] for a in label["common_answers"]}
        resp = next((r for r in responses if "id" in r and r["response"] and r["id"] == label["id"]),
                    None)
        if resp:
            got = dict(re.findall(r"@(\w+)\[(.*?)\]", resp["response"]))
            results.append({n: is_equal(got.get(n), answers[n]) for n in answers})
    if not results:
        return 0.0, 0.0, 0.0
    abq = round(sum(all(r.values()) for r in results) / len(results), 4)
    uasq = round(sum(sum(r.values()) for r in results) / sum(len(r) for r in results), 4)
    psaq = round(sum(sum(r.values()) / len(r) for r in results) / len(results), 4)
    return psaq, abq, uasq


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_compat_infiagent_counts_string_ids_missing_as_infiagent_does(tmp_path, shared_data,
                                                                      fmt, capsys):
    """InfiAgent matches ``resp["id"] == label_id`` with the labels' integer ids, so a response
    whose id is the string "5" is never used (the reference scores a file of string ids
    0.00% on all three figures). queryeval used to key both as "5" and score them."""
    import csv as csvmod

    d = shared_data / "dabench" / "current"
    labels = [json.loads(x) for x in (d / "da-dev-labels.jsonl").read_text().splitlines() if x]
    rows = []
    for i, lab in enumerate(labels):
        pairs = lab["common_answers"]
        right = " ".join(f"@{n}[{v}]" for n, v in pairs)
        wrong = " ".join(f"@{n}[{v}x]" if j == 0 else f"@{n}[{v}]" for j, (n, v) in enumerate(pairs))
        if i % 4 == 0:  # a string id only: missing for InfiAgent
            rows.append({"id": str(lab["id"]), "response": right})
        elif i % 4 == 1:  # a string id first, then the integer id with a wrong answer
            rows += [{"id": str(lab["id"]), "response": right}, {"id": lab["id"], "response": wrong}]
        else:
            rows.append({"id": lab["id"], "response": right if i % 4 == 2 else wrong})
    want = _infiagent_figures(labels, rows)
    assert 0 < want[1] < 1  # the pairs leave both kinds of verdict
    r = tmp_path / f"responses.{fmt}"
    if fmt == "jsonl":
        r.write_text("".join(json.dumps(x) + "\n" for x in rows))
    else:  # a CSV cell is text: an integer's digits are read as the integer id
        with r.open("w", newline="") as fh:
            w = csvmod.DictWriter(fh, ["id", "response"])
            w.writeheader()
            w.writerows(rows)
    out = tmp_path / "o"
    capsys.readouterr()
    assert main(["run", str(d / "da-dev-questions.jsonl"), "--labels", str(d / "da-dev-labels.jsonl"),
                 "--responses", str(r), "--compat", "infiagent", "--out", str(out),
                 "--no-report"]) == 0
    o = overall(files(out))
    if fmt == "csv":  # every id cell is an integer's text: all are read as integer ids
        strings_only = [{**x, "id": int(x["id"])} for x in rows]
        want = _infiagent_figures(labels, strings_only)
    assert (round(o["psaq"], 4), round(o["abq"], 4), round(o["uasq"], 4)) == want
    err = capsys.readouterr().err
    n_string = sum(isinstance(x["id"], str) for x in rows)
    if fmt == "jsonl":
        assert f"{n_string} response(s) have a string id" in " ".join(err.split())
    else:
        assert "string id" not in err


def test_compat_infiagent_scores_nothing_when_every_id_is_a_string(tmp_path, shared_data):
    """The issue's file: every id a string -> InfiAgent's 0.00% on all three figures."""
    d = shared_data / "dabench" / "current"
    labels = [json.loads(x) for x in (d / "da-dev-labels.jsonl").read_text().splitlines() if x]
    rows = [{"id": str(lab["id"]), "response": " ".join(f"@{n}[{v}]" for n, v in lab["common_answers"])}
            for lab in labels]
    assert _infiagent_figures(labels, rows) == (0.0, 0.0, 0.0)
    r = tmp_path / "r.jsonl"
    r.write_text("".join(json.dumps(x) + "\n" for x in rows))
    args = [str(d / "da-dev-questions.jsonl"), "--labels", str(d / "da-dev-labels.jsonl"),
            "--responses", str(r), "--no-report", "-q"]
    args.remove("--no-report")
    assert main(["run", *args, "--compat", "infiagent", "--export", "dabench",
                 "--out", str(tmp_path / "a")]) == 0
    o = overall(files(tmp_path / "a"))
    assert o["answered"] == 0 and o["missing"] == len(labels)
    assert o["psaq"] is None  # our figures: no question scored, no value
    doc = json.loads(files(tmp_path / "a")["dabench"].read_text())  # the reference's file
    assert doc["main_results"] == {"Accuracy by Question": 0,
                                   "Accuracy Proportional by Sub-Question": 0,
                                   "Accuracy by Sub-Question": 0}
    args.append("--no-report")
    assert main(["run", *args, "--out", str(tmp_path / "b")]) == 0  # our default: "5" is 5
    assert overall(files(tmp_path / "b"))["abq"] == 1.0
