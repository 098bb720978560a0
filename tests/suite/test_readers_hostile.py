"""Hostile suite and input files through the real CLI: each is exit 2 and one line on stderr
naming the file (and line), never a segfault, a hang, a read until memory is gone, or a run
whose log writer crashes afterwards.

Cases that could crash or block the interpreter on a regression (deep YAML: libyaml's C
composer segfaults; a FIFO: ``open`` blocks) run the CLI in a subprocess with a timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from queryeval.cli.app import main
from queryeval.errors import InputError
from queryeval.io.jsonl import parse_json_line

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SELECTION_SUITE = EXAMPLES / "sdmx" / "suite"
SELECTION_RESPONSES = EXAMPLES / "sdmx" / "responses.jsonl"
RETRIEVAL_QUESTIONS = EXAMPLES / "retrieval" / "questions.csv"
RETRIEVAL_CORPUS = EXAMPLES / "retrieval" / "corpus.jsonl"
FIELDS_EVALUATION = EXAMPLES / "fields" / "evaluation.csv"
FIELDS_DATA = EXAMPLES / "fields" / "ingredients.csv"


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``queryeval ARGS`` in a subprocess running the source this test imported."""
    import queryeval

    source = str(Path(queryeval.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [source, *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-m", "queryeval", *args], capture_output=True,
                          text=True, timeout=timeout, check=False, env=env, cwd=REPO)


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith("error: ")
    return lines[0]


def run_main(capsys, *args: str) -> str:
    """The in-process CLI (for inputs that cannot hang or crash it): its one stderr line."""
    code = main(list(args))
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


# ------------------------------------------------------------------ 1. deep YAML


@pytest.mark.parametrize("text", [
    "[" * 30_000 + "]" * 30_000 + "\n",                      # segfaulted libyaml's composer
    "{a: " * 15_000 + "1" + "}" * 15_000 + "\n",
    "id: x\nmetadata: " + "[" * 30_000 + "]" * 30_000 + "\n",  # deep inside a case: its line
], ids=["flow-lists", "flow-maps", "inside-a-case"])
def test_deep_yaml_is_refused_before_it_is_composed(tmp_path, text):
    """Our behaviour, whichever layer stops it first (our event count, or PyYAML >= 6.0.4's
    own depth limit of 1,000, whose wording is not ours to assert): no crash, exit 2, one
    line naming the file and the line."""
    suite = tmp_path / "deep.yaml"
    suite.write_text(text)
    line = one_error_line(cli("validate", str(suite)))
    where = 2 if text.startswith("id:") else 1
    assert line.startswith(f"error: {suite}:{where}: invalid YAML: ")


@pytest.mark.parametrize("levels", [101, 500, 999])
@pytest.mark.parametrize("prefix", ["", "id: x\nmetadata: "], ids=["top", "inside-a-case"])
def test_nesting_below_pyyamls_own_limit_gets_our_message(tmp_path, levels, prefix):
    """Deeper than our 100 levels but within PyYAML's own limit (1,000 since 6.0.4; none
    before): our message, on every PyYAML version."""
    suite = tmp_path / "deep.yaml"
    suite.write_text(prefix + "[" * levels + "]" * levels + "\n")
    line = one_error_line(cli("validate", str(suite)))
    where = 2 if prefix else 1
    assert line.startswith(f"error: {suite}:{where}: invalid YAML: nesting too deep (more than "
                           "100 levels)")


def test_nesting_limit_is_exactly_100_levels(tmp_path):
    from queryeval.suite.yamlsrc import MAX_DEPTH, read_yaml_documents

    assert MAX_DEPTH == 100
    case = "id: c\nconversation: [{role: user, content: q}]\nmetadata: "
    ok = tmp_path / "ok.yaml"
    ok.write_text(case + "[" * 99 + "]" * 99 + "\n")  # the document mapping is level 1
    (doc,) = read_yaml_documents(ok)
    deep = doc.data["metadata"]
    for _ in range(98):
        deep = deep[0]
    assert deep == []
    bad = tmp_path / "bad.yaml"
    bad.write_text(case + "[" * 100 + "]" * 100 + "\n")
    with pytest.raises(InputError, match="nesting too deep") as ei:
        list(read_yaml_documents(bad))
    assert ei.value.line == 3


# ------------------------------------------------------------------ 2. FIFOs and devices


def _fifo(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


def _dabench_questions(tmp_path: Path) -> Path:
    q = tmp_path / "questions.jsonl"
    q.write_text(json.dumps({"id": 0, "question": "q?", "concepts": ["Summary Statistics"],
                             "constraints": "c", "format": "@mean[v]", "file_name": "t.csv"}) + "\n")
    return q


def _qrels(tmp_path: Path) -> Path:
    qrels = tmp_path / "test.qrels"
    qrels.write_text("q1 0 d1 1\n")
    return qrels


# (what, file name, command given the hostile path and tmp_path)
INPUTS = [
    ("suite-yaml", "suite.yaml", lambda p, t: ["validate", str(p)]),
    ("suite-jsonl", "suite.jsonl", lambda p, t: ["validate", str(p)]),
    ("suite-csv", "suite.csv", lambda p, t: ["validate", str(p)]),
    ("suite-json", "qa.json", lambda p, t: ["validate", str(p)]),
    ("labels", "labels.jsonl", lambda p, t: [
        "run", str(_dabench_questions(t)), "--labels", str(p), "--responses",
        str(SELECTION_RESPONSES), "--out", str(t / "out")]),
    ("responses-jsonl", "responses.jsonl", lambda p, t: [
        "run", str(SELECTION_SUITE), "--responses", str(p), "--out", str(t / "out")]),
    ("responses-csv", "responses.csv", lambda p, t: [
        "run", str(SELECTION_SUITE), "--responses", str(p), "--out", str(t / "out")]),
    ("corpus", "corpus.jsonl", lambda p, t: [
        "run", str(RETRIEVAL_QUESTIONS), "--corpus", str(p), "--out", str(t / "out")]),
    ("data", "data.csv", lambda p, t: ["tokens", str(p), "--field", "item"]),
    ("tokens", "text.txt", lambda p, t: ["tokens", str(p)]),
    ("trec-run", "test.run", lambda p, t: ["trec", str(_qrels(t)), str(p), "-m", "ndcg@10"]),
]


@pytest.mark.parametrize(("what", "name", "command"), INPUTS, ids=[i[0] for i in INPUTS])
def test_a_fifo_is_refused_without_blocking(tmp_path, what, name, command):
    fifo = _fifo(tmp_path, name)
    line = one_error_line(cli(*command(fifo, tmp_path), timeout=60))
    assert line == f"error: {fifo}: is a FIFO (named pipe), not a regular file; give a file"


@pytest.mark.parametrize(("what", "name", "command"), INPUTS, ids=[i[0] for i in INPUTS])
def test_dev_zero_is_refused_without_reading(tmp_path, what, name, command):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    link = tmp_path / name
    link.symlink_to("/dev/zero")  # the name gives the reader; the target is endless
    line = one_error_line(cli(*command(link, tmp_path), timeout=60))
    # the path as given (made absolute, symlinks kept), for every kind of input
    assert line == f"error: {link}: is a character device, not a regular file; give a file"


def test_dev_urandom_as_the_suite_itself(capsys):
    assert run_main(capsys, "validate", "/dev/urandom") == \
        "error: /dev/urandom: is a character device, not a regular file; give a file"


def test_size_limits_per_kind(tmp_path, monkeypatch):
    from queryeval.io import files

    assert files.SIZE_LIMITS["suite"] == 1 << 30 and files.SIZE_LIMITS["tokens"] == 1 << 30
    big = tmp_path / "big.yaml"
    with big.open("wb") as fh:  # sparse: 2 GiB of nothing, never read
        fh.truncate((2 << 30) + 1)
    with pytest.raises(InputError) as ei:
        files.read_input_bytes(big, "suite")
    assert ei.value.message == "file is 2 GiB, more than the 1 GiB limit for a suite file"
    files.check_input(big, "responses")  # a streamed kind allows it


# ------------------------------------------------------------------ 3. non-finite numbers


CASE = {"id": "c1", "conversation": [{"role": "user", "content": "q",
                                      "target": {"answers": [{"name": "a", "value": "1"}]}}]}


@pytest.mark.parametrize(("raw", "shown"), [
    ("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity"), ("1e999", "1e999"),
])
def test_jsonl_suite_refuses_non_finite_numbers_in_validate_and_run(tmp_path, capsys, raw, shown):
    suite = tmp_path / "s.jsonl"
    text = json.dumps({**CASE, "metadata": {"w": [1, "__X__"]}}).replace('"__X__"', raw)
    suite.write_text(json.dumps({**CASE, "id": "c0"}) + "\n" + text + "\n")
    expected = (f"error: {suite}:2: metadata.w[1]: not a finite number: {shown} "
                "(NaN and Infinity are not allowed in a suite)")
    assert run_main(capsys, "validate", str(suite)) == expected
    responses = tmp_path / "r.jsonl"
    responses.write_text('{"case_id": "c1", "output": "a=1"}\n')
    assert run_main(capsys, "run", str(suite), "--responses", str(responses),
                    "--out", str(tmp_path / "out")) == expected
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("raw", [".nan", ".inf", "-.Inf", ".NaN"])
def test_yaml_suite_refuses_non_finite_numbers(tmp_path, capsys, raw):
    suite = tmp_path / "s.yaml"
    suite.write_text("id: c1\nmetadata:\n  weight: " + raw + "\nconversation:\n- role: user\n"
                     "  content: q\n  target: {answers: [{name: a, value: '1'}]}\n")
    assert run_main(capsys, "validate", str(suite)) == (
        f"error: {suite}:3: metadata.weight: not a finite number: {raw} "
        "(.nan and .inf are not allowed in a suite)")


def test_jsonl_suite_refuses_duplicate_keys(tmp_path, capsys):
    suite = tmp_path / "s.jsonl"
    suite.write_text('{"id": "c1", "id": "c2", "conversation": [{"role": "user", "content": "q"}]}\n')
    assert run_main(capsys, "validate", str(suite)) == f"error: {suite}:1: duplicate key 'id'"


def test_recorded_responses_still_parse_non_finite_and_duplicates():
    """Recorded outputs are not a suite: their parsing is unchanged (the task decides)."""
    value = parse_json_line('{"a": NaN, "a": 2, "b": 1e999}', path=Path("r.jsonl"), line=1)
    assert value["a"] == 2 and value["b"] == float("inf")
    with pytest.raises(InputError, match="r.jsonl:1: b: not a finite number: 1e999"):
        parse_json_line('{"b": 1e999}', path=Path("r.jsonl"), line=1, strict=True)


# ------------------------------------------------------------------ 4. encodings, empty, xlsx


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-8-sig"])
def test_csv_suite_with_a_byte_order_mark_is_decoded(tmp_path, capsys, encoding):
    suite = tmp_path / "evaluation.csv"
    bom = {"utf-16-le": "\ufeff", "utf-16-be": "\ufeff"}.get(encoding, "")
    suite.write_bytes((bom + "Question,item\nQué frutas?,Limón;Naranja\n").encode(encoding))
    from queryeval.suite import load_suite

    (case,) = load_suite(suite).cases
    assert case.conversation[0].content == "Qué frutas?"
    assert case.conversation[0].target.fields == {"item": ["Limón", "Naranja"]}


def test_latin1_csv_names_the_byte_and_how_to_convert(tmp_path, capsys):
    suite = tmp_path / "evaluation.csv"
    suite.write_bytes("Question,item\nok?,a\nQué?,b\n".encode("latin-1"))
    assert run_main(capsys, "validate", str(suite)) == (
        f"error: {suite}:3: file is not valid UTF-8: byte 0xe9 at offset 22; convert it to "
        "UTF-8 first, e.g. iconv -f latin1 -t utf-8 FILE > FILE.utf8")


def test_latin1_yaml_and_jsonl_name_the_offset(tmp_path, capsys):
    yaml_suite = tmp_path / "s.yaml"
    yaml_suite.write_bytes("id: c1\nname: café\n".encode("latin-1"))
    assert run_main(capsys, "validate", str(yaml_suite)).startswith(
        f"error: {yaml_suite}:2: file is not valid UTF-8: byte 0xe9 at offset 16; ")
    jsonl_suite = tmp_path / "s.jsonl"
    jsonl_suite.write_bytes('{"id": "caf\xe9"}\n'.encode("latin-1"))
    assert "iconv -f latin1 -t utf-8" in run_main(capsys, "validate", str(jsonl_suite))


def test_empty_jsonl_suite_says_it_is_empty(tmp_path, capsys):
    suite = tmp_path / "s.jsonl"
    suite.write_text("\n  \n")
    assert run_main(capsys, "validate", str(suite)) == (
        f"error: {suite}: empty file: a JSONL suite needs one case (a JSON object with a "
        "'conversation') per line")


def _xlsx_with_sheet_xml(path: Path, sheet_bytes: int) -> None:
    """A workbook whose one sheet's XML is ``sheet_bytes`` long (one row of many cells),
    deflated: a few hundred KB on disk."""
    from openpyxl import Workbook

    wb = Workbook()
    wb.active.append(["Question", "item"])
    wb.save(path)
    with zipfile.ZipFile(path) as zf:
        members = {i.filename: zf.read(i.filename) for i in zf.infolist()}
    head = b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
    cell = b'<row r="2"><c t="inlineStr"><is><t>x</t></is></c></row>'
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            if name != "xl/worksheets/sheet1.xml":
                zf.writestr(name, data)
        with zf.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as fh:
            fh.write(head)
            block = cell * (1 << 14)
            for _ in range(sheet_bytes // len(block) + 1):
                fh.write(block)
            fh.write(b"</sheetData></worksheet>")


def test_xlsx_expanding_beyond_the_limit_is_refused_before_loading(tmp_path, capsys,
                                                                 monkeypatch):
    import queryeval.suite.fields as fields_mod

    monkeypatch.setattr(fields_mod, "XLSX_MAX_UNCOMPRESSED", 4 << 20)
    book = tmp_path / "evaluation.xlsx"
    _xlsx_with_sheet_xml(book, 5 << 20)
    assert book.stat().st_size < 1 << 20
    line = run_main(capsys, "validate", str(book))
    assert line.startswith(f"error: {book}: workbook expands to 5 MiB of XML, more than the "
                           "4 MiB limit; save the sheet as CSV")


def test_xlsx_cell_cap(tmp_path, capsys, monkeypatch):
    from openpyxl import Workbook

    import queryeval.suite.fields as fields_mod

    monkeypatch.setattr(fields_mod, "XLSX_MAX_CELLS", 10)
    book = tmp_path / "evaluation.xlsx"
    wb = Workbook()
    for row in [["Question", "item"], ["q1", "a"], ["q2", "b"], ["q3", "c"], ["q4", "d"],
                ["q5", "e"], ["q6", "f"]]:
        wb.active.append(row)
    wb.save(book)
    assert run_main(capsys, "validate", str(book)) == \
        f"error: {book}:6: sheet has more than 10 cells; save it as CSV"


@pytest.mark.slow
def test_real_xlsx_bomb_is_refused_at_the_default_limit(tmp_path):
    book = tmp_path / "evaluation.xlsx"
    _xlsx_with_sheet_xml(book, 300 << 20)
    assert book.stat().st_size < 3 << 20
    line = one_error_line(cli("validate", str(book), timeout=120))
    assert "workbook expands to 300 MiB of XML, more than the 32 MiB limit" in line


# ------------------------------------------------------------------ 5. errors naming the problem


def test_retrieval_csv_missing_a_column(tmp_path, capsys):
    suite = tmp_path / "q.csv"
    suite.write_text("question,answer,dataset,chunk_id,content_hash\nq,a,s,c,\n")
    assert run_main(capsys, "validate", str(suite)) == (
        f"error: {suite}:1: missing column document_name (a retrieval questions CSV needs "
        "question, answer, document_name, dataset, chunk_id (content_hash optional))")
    # content_hash is optional since issue 26: chunk ids name the relevant chunks
    suite.write_text("question,answer,document_name,dataset,chunk_id\nq,a,d,s,c\n")
    assert main(["validate", str(suite)]) == 0


def test_retrieval_csv_near_miss_header(tmp_path, capsys):
    suite = tmp_path / "q.csv"
    suite.write_text("question,answer,document_name,dataset,chunk_id,contenthash\nq,a,d,s,c,x\n")
    assert run_main(capsys, "validate", str(suite)).endswith(
        "missing column content_hash (a retrieval questions CSV needs question, answer, "
        "document_name, dataset, chunk_id, content_hash); did you mean 'contenthash' for "
        "'content_hash'?")


@pytest.mark.parametrize("header", ["Questoin", "question", "QUESTION"])
def test_fields_csv_with_a_misspelt_question_header(tmp_path, capsys, header):
    suite = tmp_path / "evaluation.csv"
    suite.write_text(f"{header},item\nq,a\n")
    assert run_main(capsys, "validate", str(suite)) == (
        f"error: {suite}:1: missing column Question (a fields evaluation table needs Question "
        f"and one ground-truth column per field); did you mean {header!r} for 'Question'?")


@pytest.mark.parametrize("name", ["suite.txt", "suite.csv"])
def test_unknown_suite_format_lists_every_format(tmp_path, capsys, name):
    suite = tmp_path / name
    suite.write_text("a,b\n1,2\n")
    line = run_main(capsys, "validate", str(suite))
    for form in (".yaml/.yml", "folder", ".jsonl of cases", "--labels", "BuildingQA .json",
                 "retrieval questions .csv", "fields evaluation table .csv/.xlsx"):
        assert form in line


def test_yaml_top_level_key_typo_names_it_at_its_line(tmp_path, capsys):
    suite = tmp_path / "s.yaml"
    suite.write_text("id: c1\nconversaton:\n- role: user\n  content: hi\n")
    assert run_main(capsys, "validate", str(suite)) == \
        f"error: {suite}:2: conversaton: unknown field, did you mean 'conversation'?"


def test_nested_yaml_key_typo_and_other_errors_still_counted(tmp_path, capsys):
    suite = tmp_path / "s.yaml"
    suite.write_text("id: c1\nconversation:\n- role: user\n  content: hi\n  targt:\n"
                     "    answers: []\n- role: robot\n  content: x\n")
    assert run_main(capsys, "validate", str(suite)) == (
        f"error: {suite}:5: conversation[0].targt: unknown field, did you mean 'target'? "
        "(and 1 more error)")


def test_jsonl_key_typo(tmp_path, capsys):
    suite = tmp_path / "s.jsonl"
    suite.write_text('{"id": "c1", "conversation": [{"role": "user", "contnet": "q"}]}\n')
    assert run_main(capsys, "validate", str(suite)) == \
        f"error: {suite}:1: conversation[0].contnet: unknown field, did you mean 'content'?"


def test_k_that_is_no_integer(tmp_path, capsys):
    assert run_main(capsys, "run", str(RETRIEVAL_QUESTIONS), "--corpus", str(RETRIEVAL_CORPUS),
                    "--k", "5,abc", "--out", str(tmp_path / "o")) == \
        "error: task option k: expected comma-separated integers, got '5,abc'"


def test_option_of_another_task_names_that_task(tmp_path, capsys):
    assert run_main(capsys, "run", str(SELECTION_SUITE), "--responses", str(SELECTION_RESPONSES),
                    "--k", "5", "--out", str(tmp_path / "o")) == \
        ("error: task option k applies to the retrieval task only (this run's task is "
         "indicator_selection)")


def test_unknown_option_suggests_the_closest(tmp_path, capsys):
    assert run_main(capsys, "run", str(SELECTION_SUITE), "--responses", str(SELECTION_RESPONSES),
                    "--option", "include_extra_dimension=false", "--out", str(tmp_path / "o")) \
        == ("error: task option include_extra_dimension: unknown option; did you mean "
            "'include_extra_dimensions'? (options of the indicator_selection task: "
            "include_extra_dimensions, on_error)")


def test_option_of_the_wrong_type(tmp_path, capsys):
    assert run_main(capsys, "run", str(RETRIEVAL_QUESTIONS), "--corpus", str(RETRIEVAL_CORPUS),
                    "--option", "random_seed=x", "--out", str(tmp_path / "o")) == \
        "error: task option random_seed: expected an integer, got 'x'"


def test_encoding_error_offset_across_read_pieces(tmp_path):
    """A bad byte right after a character cut at the 1 MiB read boundary: exact offset, line."""
    from queryeval.io.files import encoding_error

    path = tmp_path / "t.csv"
    data = b"a\n" * 10 + b"x" * ((1 << 20) - 21) + b"\xc3" + b"\xff\nmore\n"
    path.write_bytes(data)
    err = encoding_error(path)
    assert (err.line, data.index(b"\xc3")) == (11, (1 << 20) - 1)
    assert err.message.startswith(f"file is not valid UTF-8: byte 0xc3 at offset {(1 << 20) - 1};")


def test_utf16_jsonl_suite_is_refused_with_the_conversion(tmp_path, capsys):
    suite = tmp_path / "s.jsonl"
    suite.write_bytes(json.dumps(CASE).encode("utf-16"))
    assert run_main(capsys, "validate", str(suite)) == (
        f"error: {suite}:1: file is UTF-16 (it starts with that byte-order mark); JSON Lines "
        "must be UTF-8: convert it, e.g. iconv -f utf-16 -t utf-8 FILE > FILE.utf8")


def test_unknown_task_suggests_the_closest(tmp_path, capsys):
    assert run_main(capsys, "run", str(SELECTION_SUITE), "--responses", str(SELECTION_RESPONSES),
                    "--task", "retreival", "--out", str(tmp_path / "o")) == (
        "error: unknown task 'retreival'; did you mean 'retrieval'? (known tasks: answers, "
        "fields, freeform, indicator_selection, query, retrieval)")


def test_buildingqa_json_and_dabench_labels_are_suites_too(tmp_path, capsys):
    qa = tmp_path / "qa.json"
    qa.write_text('[{"building_id": "b.ttl", "queries": [{"query_id": "q1", "sparql_query": '
                  '"SELECT * {?s ?p ?o}", "questions": [{"question_number": Infinity, '
                  '"text": "t"}]}]}]')
    assert run_main(capsys, "validate", str(qa)) == (
        f"error: {qa}: [0].queries[0].questions[0].question_number: not a finite number: "
        "Infinity (NaN and Infinity are not allowed in a suite)")
    qa.write_text('[{"building_id": "b.ttl", "building_id": "c.ttl", "queries": []}]')
    assert run_main(capsys, "validate", str(qa)) == f"error: {qa}: duplicate key 'building_id'"
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": 0, "common_answers": [["v", "1"]], "id": 1}\n')
    assert run_main(capsys, "run", str(_dabench_questions(tmp_path)), "--labels", str(labels),
                    "--responses", str(SELECTION_RESPONSES), "--out", str(tmp_path / "o")) == \
        f"error: {labels}:1: duplicate key 'id'"


def test_tuning_file_that_is_a_fifo_is_refused_without_reading(tmp_path):
    """``--tuning`` goes through the same regular-file check as every other input."""
    import subprocess
    import sys

    fifo = tmp_path / "tune.json"
    os.mkfifo(fifo)
    code = ("from queryeval.errors import InputError\n"
            "from queryeval.tasks.fields.task import _load_tuning\n"
            f"try:\n    _load_tuning({str(fifo)!r})\n"
            "except InputError as err:\n    print(err)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.stdout.strip() == f"{fifo}: is a FIFO (named pipe), not a regular file; give a file"


# ------------------------------------------------------------------ numbers no float holds
# One reader (queryeval.io.numbers) for every number from outside: a recorded output holding
# one is a malformed case (the run goes on); a run file holding one is one line, exit 2.

HUGE = "9" * 400
HUGE_REASON = "an integer of 400 digits is beyond the range of a float (about 1.8e308)"


def _retrieval_run(out: Path, responses: Path) -> int:
    return main(["run", str(RETRIEVAL_QUESTIONS), "--corpus", str(RETRIEVAL_CORPUS),
                 "--responses", str(responses), "--k", "3", "--out", str(out), "-q",
                 "--no-report"])


def _main_batch(out: Path) -> Path:
    (batch,) = [p for p in out.rglob("batch_*.json")
                if "derived_from" not in json.loads(p.read_text())]
    return batch


@pytest.mark.parametrize("sign", ["", "-"])
def test_recorded_score_beyond_float_range_is_malformed_on_its_case(tmp_path, capsys, sign):
    lines = (EXAMPLES / "retrieval" / "responses.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    bad = lines[0].replace('"score": 0.3195', f'"score": {sign}{HUGE}', 1)
    assert bad != lines[0]
    responses = tmp_path / "r.jsonl"
    responses.write_text("\n".join([bad, *lines[1:]]) + "\n")
    assert _retrieval_run(tmp_path / "out", responses) in (0, 3)
    batch = _main_batch(tmp_path / "out")
    records = [json.loads(x) for x in batch.with_name(
        batch.name.replace("batch_", "results_").replace(".json", ".jsonl")).read_text().splitlines()]
    errors = {r["case_id"]: r["error"] for r in records if r["status"] == "error"}
    assert errors == {first["qa_pair_id"]: {
        "kind": "malformed",
        "message": f"line 1 of r.jsonl: retrieved_chunks[0].score: {HUGE_REASON}"}}
    assert len(records) == len(lines)  # every other case was scored


def _two_retrieval_runs(tmp_path: Path) -> tuple[Path, Path]:
    responses = EXAMPLES / "retrieval" / "responses.jsonl"
    assert _retrieval_run(tmp_path / "a", responses) == 0
    assert _retrieval_run(tmp_path / "b", responses) == 0
    return _main_batch(tmp_path / "a"), _main_batch(tmp_path / "b")


@pytest.mark.parametrize(("raw", "reason"), [(HUGE, HUGE_REASON), ("-" + HUGE, HUGE_REASON)])
def test_run_file_number_no_float_holds_is_one_line_for_compare_and_report(
        tmp_path, capsys, raw, reason):
    a, b = _two_retrieval_runs(tmp_path)
    results = b.with_name(b.name.replace("batch_", "results_").replace(".json", ".jsonl"))
    text = results.read_text()
    start = text.index('"scores": {"recall@3": ') + len('"scores": {"recall@3": ')
    end = min(text.index(",", start), text.index("}", start))
    results.write_text(text[:start] + raw + text[end:])
    expected = (f"error: {results}:1: scores.recall@3: corrupt result line: {reason}")
    assert run_main(capsys, "compare", str(a), str(b)) == expected
    assert run_main(capsys, "report", str(b)) == expected


def test_batch_file_number_no_float_holds_is_one_line(tmp_path, capsys):
    a, b = _two_retrieval_runs(tmp_path)
    doc = json.loads(b.read_text())
    doc["evaluation_config"]["concurrency"] = "__X__"
    b.write_text(json.dumps(doc).replace('"__X__"', HUGE))
    assert run_main(capsys, "report", str(b)) == (
        f"error: {b}: evaluation_config.concurrency: cannot read run log file: {HUGE_REASON}")


@pytest.mark.parametrize("fmt", ["jsonl", "yaml"])
def test_suite_integer_beyond_float_range_is_one_line(tmp_path, capsys, fmt):
    if fmt == "jsonl":
        suite = tmp_path / "s.jsonl"
        suite.write_text(json.dumps({**CASE, "metadata": {"w": [1, "__X__"]}})
                         .replace('"__X__"', HUGE) + "\n")
        where = "1: metadata.w[1]"
    else:
        suite = tmp_path / "s.yaml"
        suite.write_text(f"id: c1\nmetadata:\n  weight: {HUGE}\nconversation:\n- role: user\n"
                         "  content: q\n  target: {answers: [{name: a, value: '1'}]}\n")
        where = "3: metadata.weight"
    assert run_main(capsys, "validate", str(suite)) == f"error: {suite}:{where}: {HUGE_REASON}"


def test_one_reader_finds_the_first_bad_number_and_keeps_the_rest():
    from queryeval.io.numbers import NumberError, read_json

    ok = f'{{"a": [1, 2.5, {"9" * 308}], "b": "{"9" * 400}", "c": 1e308, "d": -1e-999}}'
    assert read_json(ok) == {"a": [1, 2.5, int("9" * 308)], "b": "9" * 400, "c": 1e308, "d": -0.0}
    assert read_json(ok.encode()) == read_json(ok)
    with pytest.raises(NumberError) as info:
        read_json(f'{{"a": {{"b": [0, {HUGE}]}}, "c": NaN}}')
    assert (info.value.field, info.value.reason, info.value.integer) == ("a.b[1]", HUGE_REASON, True)
    with pytest.raises(NumberError, match=r"^c: not a finite number: NaN$"):
        read_json(f'{{"a": {{"b": [0, {HUGE}]}}, "c": NaN}}', huge="inf")
    assert read_json(f'[-{HUGE}, {HUGE}, NaN]', finite=False, huge="inf")[:2] == [
        float("-inf"), float("inf")]
    assert read_json(f'-{HUGE}', finite=False, huge="inf") == float("-inf")
    for encoding in ("utf-8", "utf-16", "utf-32-le"):  # bytes are decoded as json.loads does
        with pytest.raises(NumberError, match=r"^a: an integer of 400 digits"):
            read_json(f'{{"a": {HUGE}}}'.encode(encoding), finite=False)
        assert read_json('{"a": [1, 2.5]}'.encode(encoding)) == {"a": [1, 2.5]}
