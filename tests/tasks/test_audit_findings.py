"""The suite health check's findings (``queryeval audit``, ``qe.audit``; tasks/audit.py):
the findings model and its JSON, and each kind on a small suite whose answer is worked out
by hand."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

import queryeval as qe
from queryeval.cli.app import main
from queryeval.tasks.audit import _CorpusView, jaccard, shingles
from queryeval.tasks.query.audit import volatile_functions


def _db(path: Path, rows: list[tuple[int, str]]) -> Path:
    con = sqlite3.connect(path)
    con.executescript("DROP TABLE IF EXISTS t; CREATE TABLE t(x INTEGER, name TEXT);")
    con.executemany("INSERT INTO t VALUES (?, ?)", rows)
    con.commit()
    con.close()
    return path


def _query_suite(path: Path, cases: list[tuple[str, str, str]]) -> Path:
    path.write_text("".join(
        f"---\nid: {cid}\nconversation:\n- role: user\n  content: {json.dumps(question)}\n"
        f"  target:\n    query:\n      gold: {json.dumps(gold)}\n"
        for cid, question, gold in cases), encoding="utf-8")
    return path


QUERY_CASES = [
    ("fine", "Which x are there?", "SELECT x FROM t ORDER BY x"),
    ("broken", "Broken?", "SELEC x FROM t"),
    ("nothing", "Any x over nine?", "SELECT x FROM t WHERE x > 9"),
    ("today", "What is today?", "SELECT x, CURRENT_DATE AS d FROM t"),
    ("same-a", "How many rows?", "SELECT count(*) FROM t"),
    ("same-b", "how many   rows", "SELECT count(x) FROM t"),  # same result, other text
    ("clash-a", "Largest x?", "SELECT max(x) FROM t"),
    ("clash-b", "largest x?", "SELECT min(x) FROM t"),
]


@pytest.fixture
def query_suite(tmp_path: Path) -> tuple[Path, Path]:
    db = _db(tmp_path / "t.sqlite", [(1, "a"), (2, "b"), (3, "c")])
    return _query_suite(tmp_path / "s.yaml", QUERY_CASES), db


def test_query_findings_by_kind_and_the_summary(query_suite, tmp_path, capsys):
    suite, db = query_suite
    out = tmp_path / "a.json"
    assert main(["audit", str(suite), "--database", str(db), "--json", str(out)]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert set(doc) == {"findings", "summary", "golds"}
    kinds = {(f["case_id"], f["kind"]) for f in doc["findings"]}
    assert kinds == {
        ("broken", "gold_fails"), ("nothing", "empty_gold"), ("today", "gold_not_perfect"),
        ("same-a", "duplicates"), ("same-b", "duplicates"),
        ("clash-a", "conflicting_duplicates"), ("clash-b", "conflicting_duplicates")}
    for f in doc["findings"]:
        assert set(f) == {"case_id", "kind", "severity", "evidence", "fix"} and f["fix"]
    today = next(f for f in doc["findings"] if f["case_id"] == "today")
    assert today["evidence"]["reads"] == ["CURRENTDATE"]
    clash = next(f for f in doc["findings"] if f["case_id"] == "clash-a")
    assert clash["evidence"]["different_gold"] == ["clash-b"]
    s = doc["summary"]
    # 7 of 8 cases flagged; defects: broken, nothing, today, clash-a, clash-b (duplicates warn)
    assert (s["cases"], s["cases_with_finding"], s["cases_with_defect"]) == (8, 7, 5)
    assert s["share"] == pytest.approx(7 / 8)
    assert s["by_kind"]["duplicates"] == {"cases": 2, "share": 0.25, "severity": "warning"}
    assert s["by_kind"]["gold_fails"]["cases"] == 1
    text = " ".join(capsys.readouterr().out.split())
    assert "Suite health: 7 of 8 cases (87.5%) have a finding, 5 a defect" in text
    # --fail-on-broken: a case has a defect
    assert main(["audit", str(suite), "--database", str(db), "--fail-on-broken"]) == 1
    # the Python API returns the same findings and summary
    report = qe.audit(suite, source=db)
    assert {(f.case_id, f.kind) for f in report.findings} == kinds
    assert {k: v for k, v in report.summary.items() if k != "seconds"} == {
        k: v for k, v in s.items() if k != "seconds"}


@pytest.mark.parametrize(("query", "language", "reads"), [
    ("SELECT x FROM t ORDER BY RANDOM() LIMIT 1", "sql", ["RANDOM"]),
    ("SELECT date('now')", "sql", ["DATE('now')"]),
    ("SELECT x FROM t WHERE 'now' = name", "sql", []),  # a string compared is not the clock
    ("SELECT ?s WHERE { ?s ?p ?o } ORDER BY RAND() LIMIT 1", "sparql", ["RAND"]),
    ('SELECT ?s WHERE { ?s ?p "NOW()" }', "sparql", []),
])
def test_golds_that_read_the_clock_or_a_random_number(query, language, reads):
    assert volatile_functions(query, language, "sqlite" if language == "sql" else None) == reads


def test_pin_then_drift_when_the_data_changes(query_suite, tmp_path):
    suite, db = query_suite
    report = qe.audit(suite, source=db, pin=True)
    pins = json.loads((tmp_path / "s.yaml.pins.json").read_text(encoding="utf-8"))["pins"]
    assert report.summary["pinned"].endswith("s.yaml.pins.json")
    assert pins["broken"] == [None] and len(pins["fine"][0]) == 64
    assert not report.by_kind("gold_drift")
    _db(db, [(1, "a"), (2, "b"), (4, "d")])  # 3 became 4
    drifted = {f.case_id for f in qe.audit(suite, source=db).by_kind("gold_drift")}
    # fine (x), today (x), clash-a (max) change; counts and min do not
    assert drifted == {"fine", "today", "clash-a"}


def test_platinum_is_the_cases_with_no_finding_and_loads_as_a_suite(query_suite, tmp_path):
    from queryeval.suite import load_suite

    suite, db = query_suite
    for name in ("p.yaml", "p.jsonl"):
        report = qe.audit(suite, source=db, write_platinum=tmp_path / name)
        assert report.summary["platinum"]["cases"] == 1
        cases = list(load_suite(tmp_path / name).iter_cases())
        assert [c.id for c in cases] == ["fine"]
        assert cases[0].conversation[0].target.query.gold == "SELECT x FROM t ORDER BY x"


def test_consensus_failure_and_not_discriminating_from_runs(query_suite, tmp_path):
    suite, db = query_suite
    suite = _query_suite(tmp_path / "s2.yaml", [QUERY_CASES[0], QUERY_CASES[6],
                                                ("third", "Smallest x?", "SELECT min(x) FROM t"),
                                                ("fourth", "Last name?", "SELECT max(name) FROM t")])
    nothing = "SELECT x FROM t WHERE x > 99"  # both runs find nothing: no shared answer
    runs = []
    for i, preds in enumerate([
            {"fine": "SELECT x FROM t ORDER BY x", "clash-a": "SELECT 2",
             "third": "SELECT 7", "fourth": nothing},
            {"fine": "SELECT x FROM t ORDER BY 1", "clash-a": "SELECT 1 + 1",  # same result
             "third": "SELECT 8", "fourth": nothing}]):
        responses = tmp_path / f"r{i}.jsonl"
        responses.write_text("".join(json.dumps({"case_id": k, "query": v}) + "\n"
                                     for k, v in preds.items()), encoding="utf-8")
        out = tmp_path / f"run{i}"
        assert main(["run", str(suite), "--database", str(db), "--responses", str(responses),
                     "--out", str(out), "-q", "--no-report"]) == 0
        runs.append(next(out.rglob("batch_*.json")))
    out = tmp_path / "a.json"
    assert main(["audit", str(suite), "--database", str(db), "--json", str(out),
                 *[a for r in runs for a in ("--runs", str(r))]]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    kinds = {(f["case_id"], f["kind"], f["severity"]) for f in doc["findings"]}
    # clash-a: both runs return 2 (max is 3): consensus; third: 7 and 8, wrong differently;
    # fourth: both return no rows, which is no answer to agree on
    assert kinds == {("fine", "not_discriminating", "note"),
                     ("clash-a", "consensus_failure", "warning")}
    assert doc["summary"]["notes"] == {"not_discriminating": 1}
    assert doc["summary"]["cases_with_finding"] == 1  # a note is not a finding against a case
    assert main(["audit", str(suite), "--database", str(db), "--runs", str(runs[0])]) == 2


def test_answers_labels_read_back_as_a_response(tmp_path):
    questions = tmp_path / "q.jsonl"
    labels = tmp_path / "l.jsonl"
    rows = [(0, [["mean", "2.5"]]), (1, [["pair", "a]b"]]), (2, [["blank", " "]]),
            (3, [["mean", "2.5"]])]
    questions.write_text("".join(json.dumps({
        "id": i, "question": f"question {i}" if i != 3 else "question 0",
        "concepts": ["x"], "constraints": "", "format": "@x[v]", "file_name": "f.csv",
        "level": "easy"}) + "\n" for i, _ in rows), encoding="utf-8")
    labels.write_text("".join(json.dumps({"id": i, "common_answers": a}) + "\n"
                              for i, a in rows), encoding="utf-8")
    report = qe.audit(questions, labels=labels)
    kinds = {(f.case_id, f.kind) for f in report.findings}
    assert kinds == {("1", "gold_fails"), ("2", "empty_gold"), ("0", "duplicates"),
                     ("3", "duplicates")}
    assert report.by_kind("empty_gold")[0].severity == "warning"  # @blank[] scores as itself
    assert report.summary["cases_with_defect"] == 1
    assert report.summary["by_kind"]["empty_gold"]["severity"] == "warning"
    fails = report.by_kind("gold_fails")[0]
    assert fails.evidence["read_back"] == {"pair": "a"}


def test_freeform_empty_reference_and_a_sound_one(tmp_path):
    suite = tmp_path / "c.jsonl"
    suite.write_text("".join(json.dumps({"id": cid, "conversation": [
        {"role": "user", "content": q, "target": {"reference": {"answer": a}}}]}) + "\n"
        for cid, q, a in [("ok", "Capital of France?", "Paris"), ("blank", "Why?", "  ")]),
        encoding="utf-8")
    report = qe.audit(suite)
    assert [(f.case_id, f.kind) for f in report.findings] == [("blank", "empty_gold")]


def test_retrieval_missing_and_ambiguous_chunks(tmp_path):
    base = "the card works at grocery stores and farmers markets across the whole county today"
    words = base.split()
    # 14 words: 12 shingles of 3 words; one word more adds one: 12 shared of 13 = 0.923
    near = " ".join([*words, "now"])
    # word 8 replaced: the 3 shingles holding it differ, 9 shared of 15 = 0.6
    far = " ".join([*words[:7], "banks", *words[8:]])
    corpus = tmp_path / "corpus.jsonl"
    chunks = {"rel": base, "copy": "  The CARD works at grocery stores and farmers markets "
              "across the whole county today ", "near": near, "far": far, "other": "x y z"}
    corpus.write_text("".join(json.dumps({"chunk_id": k, "content": v}) + "\n"
                              for k, v in chunks.items()), encoding="utf-8")
    suite = tmp_path / "s.yaml"
    suite.write_text(
        "---\nid: q1\nconversation:\n- role: user\n  content: Where does the card work?\n"
        "  target:\n    retrieval:\n      relevant: [{chunk_id: rel}]\n"
        "---\nid: q2\nconversation:\n- role: user\n  content: What else?\n"
        "  target:\n    retrieval:\n      relevant: [{chunk_id: gone}, {chunk_id: other}]\n"
        "---\nid: q3\nconversation:\n- role: user\n  content: Both?\n"
        "  target:\n    retrieval:\n      relevant: [{chunk_id: rel}, {chunk_id: copy}, "
        "{chunk_id: near}, {chunk_id: far}]\n", encoding="utf-8")
    report = qe.audit(suite, corpus=corpus)
    kinds = {(f.case_id, f.kind) for f in report.findings}
    assert kinds == {("q1", "ambiguous_relevance"), ("q2", "empty_gold")}
    pairs = report.by_kind("ambiguous_relevance")[0].evidence["pairs"]
    assert {(p["other"], p["match"]) for p in pairs} == {("copy", "exact"), ("near", "near")}
    assert next(p for p in pairs if p["match"] == "near")["jaccard"] == pytest.approx(
        12 / 13, abs=1e-4)
    assert report.by_kind("empty_gold")[0].evidence["missing_from_corpus"] == [
        {"chunk_id": "gone", "content_hash": ""}]
    # without the corpus nothing about chunks can be proved
    assert qe.audit(suite).findings == []


def test_near_chunks_match_a_brute_force_jaccard():
    rng = random.Random(5)
    vocab = ["a", "b", "c", "d"]
    texts = []
    for _ in range(60):
        words = [rng.choice(vocab) for _ in range(rng.randint(3, 9))]
        texts.append(" ".join(words))
        if rng.random() < 0.5:  # a near copy
            copy = list(words)
            copy[rng.randrange(len(copy))] = rng.choice(vocab)
            texts.append(" ".join(copy))

    class Chunk:
        def __init__(self, i: int, text: str) -> None:
            self.chunk_id, self.content = f"c{i}", text

    view = _CorpusView([Chunk(i, t) for i, t in enumerate(texts)])
    sets = [shingles(t) for t in texts]
    for i in range(len(texts)):
        brute = {j for j in range(len(texts)) if j != i and sets[i]
                 and jaccard(sets[i], sets[j]) >= 0.9}
        assert {j for j, _ in view.near(i)} == brute


def test_a_gold_several_cases_share_runs_once(tmp_path, monkeypatch):
    from queryeval.tasks.query.task import QueryTask

    db = _db(tmp_path / "t.sqlite", [(1, "a"), (2, "b")])
    suite = _query_suite(tmp_path / "s.yaml", [
        ("p1", "Which x?", "SELECT x FROM t ORDER BY x"),
        ("p2", "List the x values", "SELECT x FROM t ORDER BY x"),
        ("p3", "Name them", "SELECT name FROM t ORDER BY name")])
    calls: list[str] = []
    real = QueryTask._execute

    def counting(self, source, query, engine=None):
        calls.append(query)
        return real(self, source, query, engine)

    monkeypatch.setattr(QueryTask, "_execute", counting)
    report = qe.audit(suite, source=db)
    # two distinct golds, each run twice (no LIMIT: no tie check)
    assert len(calls) == 4
    assert [g["case_id"] for g in report.golds] == ["p1", "p2", "p3"]
    assert report.golds[0]["fingerprint"] == report.golds[1]["fingerprint"]
    assert report.findings == []


def test_a_bad_pins_file_is_one_line_naming_it(query_suite, tmp_path, capsys):
    suite, db = query_suite
    (tmp_path / "s.yaml.pins.json").write_text('{"pins": {"fine": "abc"}}', encoding="utf-8")
    assert main(["audit", str(suite), "--database", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "s.yaml.pins.json" in err and "pins" in err


def test_the_health_page_escapes_and_counts(tmp_path):
    db = _db(tmp_path / "t.sqlite", [(1, "a")])
    suite = _query_suite(tmp_path / "s.yaml", [
        ("<b>x</b>", "Which?", "SELECT x FROM t WHERE x > 9"), ("ok", "Other?", "SELECT x FROM t")])
    page = tmp_path / "h.html"
    assert main(["audit", str(suite), "--database", str(db), "--html", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert "&lt;b&gt;x&lt;/b&gt;" in text and "<b>x</b>" not in text
    assert "1 of 2 cases (50.0%) have a finding, 1 a defect" in text
    assert "<td>empty_gold</td>" in text
