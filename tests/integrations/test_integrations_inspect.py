"""The inspect_ai scorer: inspect_ai runs two-sample tasks offline with its mock model
(``mockllm/model``), and the scores are the queryeval verdicts and figures: an answers task,
and a text-to-SQL task scored by its table metrics on a sqlite file."""

from __future__ import annotations

import json
import sqlite3

import pytest

pytest.importorskip("inspect_ai")
from inspect_ai import Task, eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402
from inspect_ai.solver import generate  # noqa: E402

from queryeval.integrations.inspect import queryeval_scorer  # noqa: E402


def mock(text: str) -> ModelOutput:
    """A mock completion with its usage given (else the mock counts tokens with tiktoken's
    o200k_base, whose file tiktoken downloads: this test stays offline)."""
    out = ModelOutput.from_content("mockllm/model", text)
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return out


def run(samples, outputs, tmp_path, **scorer_args):
    model = get_model("mockllm/model", custom_outputs=[mock(o) for o in outputs])
    task = Task(dataset=samples, solver=generate(), scorer=queryeval_scorer(**scorer_args))
    (log,) = eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none",
                  max_samples=1, max_connections=1)
    assert log.status == "success", log.error
    return log


def scores(log) -> dict:
    return {s.id: next(iter(s.scores.values())) for s in log.samples}


def test_answers_task_two_samples(tmp_path):
    answer = '{"answers": [{"name": "n", "value": "%s"}]}'
    samples = [Sample(id="s1", input="question 1?", target=answer % "1"),
               Sample(id="s2", input="question 2?", target=answer % "2")]
    # the same completion for both (the mock's outputs are taken in call order)
    log = run(samples, ["@n[1]", "@n[1]"], tmp_path)
    got = scores(log)
    assert got["s1"].value == 1.0 and got["s1"].metadata["verdict"] == "pass"
    assert got["s2"].value == 0.0 and got["s2"].metadata["verdict"] == "fail"
    assert got["s2"].explanation == 'expected {"n": "2"}, got {"n": "1"}'
    assert got["s2"].metadata["metrics"]["all_correct"] == 0.0
    (metrics,) = log.results.scores
    assert metrics.metrics["accuracy"].value == pytest.approx(0.5)


@pytest.fixture
def shop(tmp_path):
    db = tmp_path / "shop.sqlite"
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE items (id INTEGER, name TEXT, price REAL);"
                      "INSERT INTO items VALUES (1, 'salt', 0.5), (2, 'pepper', 0.9),"
                      " (3, 'saffron', 12.0);")
    con.commit()
    con.close()
    return db


def test_sql_table_metrics(tmp_path, shop):
    def target(gold):
        return json.dumps({"query": {"source": str(shop), "gold": gold}})

    samples = [Sample(id="cheap", input="Items under 1?",
                      target=target("SELECT name FROM items WHERE price < 1")),
               Sample(id="dear", input="Items over 1?",
                      target=target("SELECT name FROM items WHERE price > 1"))]
    sql = "SELECT name FROM items WHERE price < 1"
    log = run(samples, [sql, sql], tmp_path)
    got = scores(log)
    assert (got["cheap"].value, got["dear"].value) == (1.0, 0.0)
    # table metrics, hand-computed: {salt, pepper} against {saffron}: no row matches
    assert got["cheap"].metadata["metrics"]["row_matching_f1"] == 1.0
    assert got["dear"].metadata["metrics"]["row_matching_f1"] == 0.0
    # scored by a per-case figure instead of the verdict
    log = run(samples, [sql, sql], tmp_path, metric="row_matching_f1")
    assert {k: v.value for k, v in scores(log).items()} == {"cheap": 1.0, "dear": 0.0}


def test_whole_case_in_metadata(tmp_path):
    case = {"id": "c7", "conversation": [{"role": "user", "content": "question 7?",
                                           "target": {"answers": [{"name": "n", "value": "7"}]}}]}
    samples = [Sample(id="a", input="question 7?", metadata={"queryeval_case": case}),
               Sample(id="b", input="question 7?", metadata={"queryeval_case": case})]
    log = run(samples, ["@n[7]", "@n[7]"], tmp_path)
    assert {k: v.value for k, v in scores(log).items()} == {"a": 1.0, "b": 1.0}


def test_sparql_table_metrics(tmp_path):
    """SPARQL on the example graph (read, not copied): the AHUs by another variable name
    match the gold's table; a query for the VAVs does not."""
    from pathlib import Path

    graph = Path(__file__).resolve().parents[2] / "examples" / "sparql" / "building.ttl"
    target = json.dumps({"query": {"source": str(graph),
                                   "gold": "SELECT ?ahu WHERE { ?ahu a brick:Air_Handling_Unit }"}})
    samples = [Sample(id="ahus", input="Which air handling units?", target=target),
               Sample(id="ahus-again", input="Which air handling units?", target=target)]
    right = ("PREFIX brick: <https://brickschema.org/schema/Brick#>\n"
             "SELECT ?x WHERE { ?x a brick:Air_Handling_Unit }")
    wrong = ("PREFIX brick: <https://brickschema.org/schema/Brick#>\n"
             "SELECT ?x WHERE { ?x a brick:VAV }")
    log = run(samples[:1], [right], tmp_path)
    assert scores(log)["ahus"].value == 1.0
    assert scores(log)["ahus"].metadata["metrics"]["row_matching_f1"] == 1.0
    log = run(samples[1:], [wrong], tmp_path)
    got = scores(log)["ahus-again"]
    assert got.value == 0.0 and got.metadata["metrics"]["row_matching_f1"] == 0.0
