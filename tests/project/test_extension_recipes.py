"""The four recipes of CONTRIBUTING.md, followed as written: add a task, a suite format, a
system and a metric, each a tiny one, and check it reaches every surface (the run model, the
metrics JSON, the results CSV, the HTML report, gates: ``matrix_checks.check_consumers``).
A recipe that no longer works as written fails here."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

import queryeval as qe
from helpers.ci_lab import cli
from helpers.matrix_checks import check_consumers
from queryeval.metrics import registry as metric_registry
from queryeval.metrics.protocol import Metric, ZeroDivision, ratio
from queryeval.registry import FORMATS, SYSTEMS, TASKS
from queryeval.suite.models import Case
from queryeval.tasks.accum import Tally, Values
from queryeval.tasks.base import Task, TurnOutcome


# --- recipe "add a metric": a function, ground truth first, declared and registered -------
def keyword_recall(keywords: list[str], response: str | None) -> float:
    """Share of ``keywords`` that ``response`` names as words (case-insensitive); no response
    (a failed call) scores 0; no keywords: 1 (nothing to find)."""
    if not response:
        return 1.0 if not keywords else 0.0
    found = sum(1 for k in keywords
                if re.search(rf"\b{re.escape(k.lower())}\b", response.lower()) is not None)
    return ratio(found, len(keywords), zero_division=1.0)


KEYWORD_RECALL = Metric(
    "keyword_recall", family="recipe", fn=keyword_recall, inputs="keywords", bounds=(0.0, 1.0),
    higher_is_better=True, zero_division=ZeroDivision(gold=1.0, pred=0.0, both=1.0),
    order_invariant=False, swap="typed", perfect=lambda keywords: " ".join(keywords))


# --- recipe "add a task": a Task subclass, registered -------------------------------------
class KeywordTask(Task):
    """Scores a free-text reply by the recall of the keywords its case names as ground truth,
    under the task's own target key: ``target: {keyword_recall: [...]}``."""

    name = "keyword_recall"
    target_model = list[str]
    csv_columns = ["case_id", "name", "status", "response", "keyword_recall", "error"]

    def parse_output(self, raw: Any) -> str:
        text = raw.get("response") if isinstance(raw, dict) else raw
        if not isinstance(text, str):
            raise ValueError("expected {'response': TEXT}")
        return text

    def read_recorded_line(self, obj: dict) -> tuple[str, int | None, Any]:
        return str(obj["case_id"]), obj.get("turn"), self.parse_output(obj)

    def score_case(self, case: Case, outcomes: list[TurnOutcome]) -> dict:
        outcome = outcomes[0]
        record = self.base_record(case, outcomes)
        record.update(keywords=list(self.target_of(case)),
                      response=outcome.output, error=outcome.error)
        return self.rescore_record(record)

    def rescore_record(self, record: dict) -> dict:
        return {**record, "scores": {
            "keyword_recall": keyword_recall(record["keywords"], record["response"])}}

    def aggregate(self, records: Iterable[dict]) -> dict:
        tally, recall = Tally(self), Values()
        for r in tally.counted(records):
            recall.add(r["scores"]["keyword_recall"])
        return {"overall_metrics": {"cases": tally.total, "scored_cases": tally.counted_n,
                                    "keyword_recall": recall.mean(), **tally.error_summary()},
                "group_metrics": {}}

    def csv_rows(self, record: dict) -> Iterable[dict]:
        error = record.get("error")
        yield {"case_id": record["case_id"], "name": record.get("name"),
               "status": record["status"], "response": record.get("response"),
               "keyword_recall": record["scores"]["keyword_recall"],
               "error": f"{error['kind']}: {error['message']}" if error else None}


# --- recipe "add a system": a Python function -----------------------------------------------
SYSTEM = '''
def answer(request):
    """The system under test: the request's messages in, {"response": TEXT} out."""
    question = request["messages"][-1]["content"]
    if "fail" in question:
        raise RuntimeError("backend down")
    return {"response": "France: Paris" if "France" in question else "I do not know"}
'''

CASES = [  # id -> question, keywords; the system's answer and the hand-computed recall
    ("fr", "Capital of France?", ["France", "Paris"]),      # both named: 1
    ("de", "Capital of Germany?", ["Germany", "Berlin"]),   # neither: 0
    ("fr2", "France and Lyon?", ["Paris", "Lyon"]),          # Paris only: 0.5
    ("down", "please fail", ["x"]),                          # the call fails: 0
]
RECALL = {"fr": 1.0, "de": 0.0, "fr2": 0.5, "down": 0.0}


@pytest.fixture
def registry():
    """A private copy of the registry (tasks, formats, systems)."""
    with TASKS.isolated(), FORMATS.isolated(), SYSTEMS.isolated():
        yield TASKS


def write_keyword_lab(root: Path) -> Path:
    (root / "system.py").write_text(SYSTEM, encoding="utf-8")
    with open(root / "cases.jsonl", "w", encoding="utf-8") as fh:
        for cid, question, keywords in CASES:
            fh.write(json.dumps({"id": cid, "conversation": [
                {"role": "user", "content": question,
                 "target": {"keyword_recall": keywords}}]}) + "\n")
    return root


def test_metric_recipe_bounds_perfect_and_empty():
    """The recipe's metric registered and held to what it declares: bounds, the perfect
    prediction, the three empty cases (a missing response is ``None`` or ``""``)."""
    metric_registry.register(KEYWORD_RECALL)
    try:
        metric = metric_registry.get("keyword_recall")
        assert metric is KEYWORD_RECALL and metric.best == 1.0
        assert metric(["a", "b"], "ab") == 0.0                  # words, not substrings
        assert metric(["a", "b"], "only a") == 0.5
        assert metric(["b", "a"], "only a") == metric(["a", "b"], "only a")
        for gold in (["a", "b"], ["Paris"], ["x", "y", "z"]):
            assert metric(gold, metric.perfect(gold)) == metric.best   # perfect
            assert metric.bounds[0] <= metric(gold, "y and a") <= metric.bounds[1]
        zd = metric.zero_division
        assert metric([], "anything") == zd.gold == 1.0
        assert metric(["a"], None) == metric(["a"], "") == zd.pred == 0.0
        assert metric([], None) == metric([], "") == zd.both == 1.0
    finally:
        metric_registry.unregister("keyword_recall")


def test_task_system_and_metric_recipes_reach_every_surface(registry, tmp_path):
    lab = write_keyword_lab(tmp_path)
    qe.register_task(KeywordTask)
    run = qe.evaluate(str(lab / "cases.jsonl"), system=f"python:{lab / 'system.py'}:answer",
                      task="keyword_recall", out=tmp_path / "runs", reports=True, retries=0,
                      backoff=0.0)
    assert run.overall["errors"] == 1 and run.overall["cases"] == 4
    assert check_consumers(run, "keyword_recall", RECALL) == pytest.approx(1.5 / 4)
    # on_error=skip leaves the failed case out of the mean
    skip = qe.evaluate(str(lab / "cases.jsonl"), system=f"python:{lab / 'system.py'}:answer",
                       task="keyword_recall", out=tmp_path / "skip", reports=True, retries=0,
                       backoff=0.0, on_error="skip")
    assert check_consumers(skip, "keyword_recall", RECALL,
                           counted=["fr", "de", "fr2"]) == pytest.approx(0.5)


def test_system_recipe_from_the_command_line(registry, tmp_path, monkeypatch):
    """The same Python system through ``queryeval run --system python:FILE:FUNCTION``, the
    task found by its entry point (recipe step 4's other way)."""
    lab = write_keyword_lab(tmp_path)
    install(tmp_path, "keyword_plugin", "from test_extension_recipes import KeywordTask\n",
            {"queryeval.tasks": {"keyword_recall": "keyword_plugin:KeywordTask"}}, monkeypatch)
    assert "keyword_recall" in registry.names()
    res = cli(["run", lab / "cases.jsonl", "--task", "keyword_recall", "--system",
               f"python:{lab / 'system.py'}:answer", "--out", tmp_path / "runs", "--retries",
               "0", "-q"])
    assert res.exit_code == 0, res.output
    run = qe.load(next((tmp_path / "runs").rglob("batch_*.json")))
    assert run.results.vector("keyword_recall") == pytest.approx(RECALL)


# --- recipe "add a suite format": a SuiteFormat, registered -----------------------------------
PAIRS_MODULE = '''
"""A suite format: {"prompt", "completion"} pairs, one JSON object a line."""
import json
from pathlib import Path

from queryeval.errors import InputError
from queryeval.suite.common import Suite, hash_files
from queryeval.suite.loader import SuiteFormat
from queryeval.suite.models import Case


def claims(path, labels):
    with open(path, encoding="utf-8") as fh:
        first = json.loads(fh.readline() or "{}")
    return isinstance(first, dict) and {"prompt", "completion"} <= set(first)


def load(path, *, labels, corpus):
    cases, origin = [], {}
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            row = json.loads(line)
            if not isinstance(row.get("completion"), str):
                raise InputError("expected a text", path=path, line=line_no, field="completion")
            cases.append(Case.model_validate({"id": str(row.get("id", line_no)), "conversation": [
                {"role": "user", "content": row["prompt"],
                 "target": {"reference": {"answer": row["completion"]}}}]}))
            origin[cases[-1].id] = (str(path), line_no)
    return Suite(cases=cases, sources=[Path(path)], hash=hash_files([Path(path)]), origin=origin)


PAIRS = SuiteFormat("pairs", "prompt/completion pairs", load, suffixes=(".jsonl",),
                    claims=claims)
'''


def install(root: Path, module: str, source: str, groups: dict[str, dict[str, str]],
            monkeypatch) -> None:
    """``module`` and a distribution declaring ``groups`` (entry-point group -> name ->
    ``module:attr``) on ``sys.path``, as ``pip install`` of a plug-in would leave them."""
    (root / f"{module}.py").write_text(source, encoding="utf-8")
    dist = root / f"{module}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{n} = {v}\n" for n, v in names.items())
        for group, names in groups.items()))
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delitem(__import__("sys").modules, module, raising=False)


def write_pairs(root: Path) -> Path:
    suite = root / "pairs.jsonl"
    suite.write_text("".join(json.dumps({"id": i, "prompt": q, "completion": a}) + "\n" for i, q, a in [
        ("one", "What is 2+2?", "4"), ("two", "Capital of France?", "Paris")]), encoding="utf-8")
    (root / "bot.py").write_text(
        "def answer(request):\n    return {'response': '4' if '2+2' in "
        "request['messages'][-1]['content'] else 'Lyon'}\n", encoding="utf-8")
    return suite


@pytest.mark.parametrize("how", ["entry_point", "register_format"])
def test_format_recipe_prompt_completion_pairs(registry, monkeypatch, tmp_path, how):
    """A new suite format (``{"prompt", "completion"}`` pairs in a .jsonl) added as the recipe
    says, by an entry point of ``queryeval.formats`` or by ``register_format``: asked before
    the built-in JSONL reader (which would refuse these lines), its cases scored by the
    freeform task the ``reference`` targets name; both registrations read the same suite."""
    install(tmp_path, "pairs_fmt", PAIRS_MODULE, {"queryeval.formats": {"pairs": "pairs_fmt:PAIRS"}}
            if how == "entry_point" else {}, monkeypatch)
    if how == "register_format":
        import pairs_fmt

        qe.register_format(pairs_fmt.PAIRS)
    assert "pairs" in FORMATS.names() and FORMATS.get("pairs").description == "prompt/completion pairs"
    suite = write_pairs(tmp_path)
    from queryeval.suite.loader import load_suite

    loaded = load_suite(suite)
    assert [c.id for c in loaded.cases] == ["one", "two"]
    run = qe.evaluate(str(suite), system=f"python:{tmp_path / 'bot.py'}:answer",
                      out=tmp_path / "runs")
    assert {c.case_id: c.verdict for c in run.results.cases} == {"one": "pass", "two": "fail"}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"prompt": "q", "completion": 4}) + "\n", encoding="utf-8")
    res = cli(["validate", bad])  # the format's own error: one line naming file, line, field
    assert res.exit_code == 2 and "bad.jsonl:1: completion: expected a text" in res.output


def test_an_unknown_suffix_lists_the_registered_formats(registry, monkeypatch, tmp_path):
    install(tmp_path, "pairs_fmt", PAIRS_MODULE.replace('suffixes=(".jsonl",)',
                                                        'suffixes=(".pairs",)'),
            {"queryeval.formats": {"pairs": "pairs_fmt:PAIRS",
                                   "broken": "no_such_module_xyz:FMT"}}, monkeypatch)
    (tmp_path / "x.unknown").write_text("{}\n")
    from queryeval.errors import InputError
    from queryeval.suite.loader import load_suite

    with pytest.raises(InputError, match=r"supported: .*; prompt/completion pairs \(\.pairs\)$"):
        load_suite(tmp_path / "x.unknown")
    (tmp_path / "q.pairs").write_text(json.dumps({"prompt": "q", "completion": "a"}) + "\n")
    assert [c.id for c in load_suite(tmp_path / "q.pairs").cases] == ["1"]  # broken: skipped


# --- recipe "add a kind of system": build(spec, ...) registered by its scheme ----------------
ECHO_MODULE = '''
"""A kind of system: ``--system echo:TEXT`` answers every request with TEXT."""
from queryeval.systems.base import System


class EchoSystem(System):
    def __init__(self, text):
        self.text = text
        self.name = f"echo:{text}"

    def call(self, request, timeout):
        return {"response": self.text}


def build(spec, *, isolate, concurrency):
    return EchoSystem(spec.partition(":")[2])
'''


@pytest.mark.parametrize("how", ["entry_point", "register_system"])
def test_system_kind_recipe_echo(registry, monkeypatch, tmp_path, how):
    """A new kind of system adapter, ``echo:TEXT``, from an entry point of
    ``queryeval.systems`` or ``register_system``: the same run from the command line."""
    install(tmp_path, "echo_sys", ECHO_MODULE, {"queryeval.systems": {"echo": "echo_sys:build"}}
            if how == "entry_point" else {}, monkeypatch)
    if how == "register_system":
        import echo_sys

        qe.register_system("echo", echo_sys.build)
    suite = tmp_path / "cases.jsonl"
    suite.write_text("".join(json.dumps({"id": i, "conversation": [{
        "role": "user", "content": q, "target": {"reference": {"answer": a}}}]}) + "\n"
        for i, q, a in [("one", "What is 2+2?", "4"), ("two", "Capital of France?", "Paris")]))
    res = cli(["run", suite, "--system", "echo:4", "--out", tmp_path / "runs", "-q",
               "--no-report"])
    assert res.exit_code == 0, res.output
    run = qe.load(next((tmp_path / "runs").rglob("batch_*.json")))
    assert {c.case_id: c.verdict for c in run.results.cases} == {"one": "pass", "two": "fail"}
    assert run.batch["evaluation_config"]["system"] == "echo:4"
