"""Seed 003 through the runner: the shipped SPARQL example with hand-checked figures, the
seed's bldg11 queries, BuildingQA's QA JSON and predictions CSV, SQL on sqlite with a
hostile prediction, and a Python system returning queries."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest

from helpers.query_task import make_shop_db, run_records  # noqa: E402,F401
from queryeval.cli.app import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "sparql"


def test_shipped_sparql_example(tmp_path):
    out = tmp_path / "o"
    assert main(["run", str(EXAMPLE / "suite.yaml"), "--responses", str(EXAMPLE / "predictions.jsonl"),
                 "--out", str(out), "-q"]) == 0
    metrics, recs = run_records(out)
    s = {cid: r["scores"] for cid, r in recs.items()}
    # other variable name, same rows and column order: perfect
    assert s["ahus"]["exact_match_f1"] == 1.0 and s["ahus"]["perfect_match"] == 1.0
    # columns swapped: the mapping search finds every row, positional exact match finds none
    assert (s["ahu-feeds-vav"]["row_matching_f1"], s["ahu-feeds-vav"]["exact_match_f1"]) == (1.0, 0.0)
    # missing feeds constraint: 2 AHUs x 5 sensors = 10 rows, 5 of them gold -> P 1/2, R 1
    assert s["zone-temps"]["row_matching_f1"] == pytest.approx(2 / 3)
    assert s["zone-temps"]["entity_set_f1"] == 1.0
    # an extra column is dropped by the mapping (row F1 1) but arity is 2*2/(2+3)
    assert s["occupancy"]["arity_f1"] == pytest.approx(0.8) and s["occupancy"]["row_matching_f1"] == 1.0
    assert s["occupancy"]["exact_match_f1"] == 0.0
    # fewer predicted columns than gold: 0 entity and row F1, arity 2*1/(1+2)
    assert s["supply-air"]["arity_f1"] == pytest.approx(2 / 3) and s["supply-air"]["entity_set_f1"] == 0.0
    # an update is refused before execution; a syntax error is recorded
    assert recs["dampers-ahu1"]["predicted_execution"]["status"] == "refused"
    assert "DELETE" in recs["dampers-ahu1"]["predicted_execution"]["reason"]
    assert recs["zones-of-vavs"]["predicted_execution"]["status"] == "failed"
    assert s["zones-of-vavs"]["syntax_ok"] == 0.0 and s["count-vavs"]["perfect_match"] == 1.0
    o = metrics["overall_metrics"]
    assert o["cases"] == 8 and o["perfect_match"] == 0.25 and o["syntax_ok"] == 0.75
    assert o["row_matching_f1"] == pytest.approx((1 + 1 + 2 / 3 + 1 + 1 + 0 + 0 + 0) / 8)
    assert recs["ahus"]["gold_execution"]["rows"] == 2


SEED_GOLD = """PREFIX brick: <https://brickschema.org/schema/Brick#>
SELECT DISTINCT ?eqp ?sensor WHERE {
    ?eqp a brick:Air_Handling_Unit . ?vav a brick:VAV . ?sensor a brick:Zone_Air_Temperature_Sensor .
    ?eqp brick:feeds ?vav . ?vav brick:hasPoint ?sensor . }"""
SEED_PRED = {
    "q1": "PREFIX brick: <https://brickschema.org/schema/Brick#>\nSELECT DISTINCT ?ahu ?s WHERE { ?ahu a brick:Air_Handling_Unit . ?s a brick:Zone_Air_Temperature_Sensor . }",
    "q2": "PREFIX brick: <https://brickschema.org/schema/Brick#>\nSELECT DISTINCT ?s ?ahu WHERE { ?ahu a brick:Air_Handling_Unit . ?s a brick:Zone_Air_Temperature_Sensor . }",
    "q3": SEED_GOLD.replace("?eqp ?sensor WHERE", "?eqp ?vav ?sensor WHERE"),
    "q4": "PREFIX brick: <https://brickschema.org/schema/Brick#>\nSELECT DISTINCT ?s WHERE { ?ahu a brick:Air_Handling_Unit . ?s a brick:Zone_Air_Temperature_Sensor . }",
    "q5": SEED_GOLD.replace("?eqp", "?e").replace("?sensor", "?s"),
}


@pytest.mark.slow
def test_seed_queries_on_bldg11_reproduce_the_reference(tmp_path, shared_data):
    graph = shared_data / "buildingqa" / "bldg11.ttl"
    suite = tmp_path / "s.yaml"
    suite.write_text("".join(
        "---\n" + json.dumps({"id": q, "conversation": [{"role": "user", "content": q, "target": {
            "query": {"gold": SEED_GOLD}}}]}) + "\n" for q in SEED_PRED))
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"case_id": q, "query": t}) + "\n" for q, t in SEED_PRED.items()))
    out = tmp_path / "o"
    assert main(["run", str(suite), "--responses", str(preds), "--graph", str(graph), "--rules", "buildingqa",
                 "--out", str(out), "-q", "--no-report", "--option", f"store_dir={tmp_path / 'store'}"]) == 0
    _, recs = run_records(out)
    rows = [recs[q]["predicted_execution"]["rows"] for q in SEED_PRED]
    assert recs["q1"]["gold_execution"]["rows"] == 377 and rows == [4268, 4268, 377, 388, 377]
    s = {q: recs[q]["scores"] for q in SEED_PRED}
    assert round(s["q1"]["entity_set_f1"], 4) == round(s["q2"]["entity_set_f1"], 4) == 0.9445
    assert round(s["q1"]["row_matching_f1"], 4) == round(s["q2"]["row_matching_f1"], 4) == 0.1623
    assert round(s["q1"]["exact_match_f1"], 4) == 0.1623 and s["q5"]["exact_match_f1"] == 1.0
    assert s["q3"]["arity_f1"] == pytest.approx(0.8) and round(s["q4"]["arity_f1"], 4) == 0.6667


def test_buildingqa_json_and_predictions_csv(tmp_path):
    (tmp_path / "tiny.ttl").write_text(
        "@prefix brick: <https://brickschema.org/schema/Brick#> .\n@prefix ex: <http://ex.org/> .\n"
        "ex:a a brick:VAV . ex:b a brick:VAV . ex:c a brick:AHU .\n")
    qa = [{"building_id": "tiny.ttl", "queries": [
        {"query_id": "Q_1", "sparql_query": "SELECT ?v WHERE { ?v a brick:VAV }",
         "questions": [{"question_number": 1, "text": "VAVs?", "source": "human"},
                       {"question_number": 2, "text": "Which VAV boxes?", "source": "LLM_1"}]}]}]
    (tmp_path / "tiny_qa.json").write_text(json.dumps(qa))
    with (tmp_path / "preds.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["query_id", "question_number", "building", "generated_sparql"])
        w.writerow(["Q_1", "1", "tiny", "SELECT ?x WHERE { ?x a brick:VAV }"])
        w.writerow(["Q_1", "2", "tiny", "SELECT ?x WHERE { ?x a ?t }"])
        w.writerow(["Q_1", "1", "other_building", "SELECT 1"])  # another building: ignored
    out = tmp_path / "o"
    assert main(["run", str(tmp_path / "tiny_qa.json"), "--responses", str(tmp_path / "preds.csv"),
                 "--out", str(out), "-q"]) == 0
    metrics, recs = run_records(out)
    assert set(recs) == {"tiny/Q_1/1", "tiny/Q_1/2"}
    assert recs["tiny/Q_1/1"]["scores"]["perfect_match"] == 1.0
    # 3 typed nodes: rows a, b (gold) + c: P 2/3, R 1 -> 0.8
    assert recs["tiny/Q_1/2"]["scores"]["row_matching_f1"] == pytest.approx(0.8)
    assert metrics["group_metrics"]["question_source"]["LLM_1"]["cases"] == 1


def test_sql_on_sqlite_with_a_hostile_prediction(tmp_path):
    db = make_shop_db(tmp_path / "shop.sqlite")
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    suite = tmp_path / "s.yaml"
    suite.write_text(
        "id: cheap\nconversation:\n- role: user\n  content: cheap items\n  target:\n    query:\n"
        "      gold: SELECT name FROM items WHERE price < 1\n---\n"
        "id: all\nconversation:\n- role: user\n  content: all items and prices\n  target:\n    query:\n"
        "      gold: SELECT name, price FROM items\n")
    mod = tmp_path / "sys.py"
    mod.write_text(
        "def answer(req):\n"
        "    assert req['language'] == 'sql'\n"
        "    if req['case_id'] == 'cheap':\n"
        "        return {'query': 'SELECT name FROM items WHERE price <= 0.5'}\n"
        "    return {'query': 'SELECT name, price FROM items; DROP TABLE items'}\n")
    out = tmp_path / "o"
    assert main(["run", str(suite), "--system", f"python:{mod}:answer", "--database", str(db),
                 "--out", str(out), "-q"]) == 0
    _, recs = run_records(out)
    # carrot only (onion 0.4 <= 0.5 too): pred {carrot, onion} = gold -> perfect
    assert recs["cheap"]["scores"]["perfect_match"] == 1.0
    assert recs["all"]["predicted_execution"]["status"] == "refused"
    assert recs["all"]["scores"]["row_matching_f1"] == 0.0
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_missing_graph_fails_before_the_run_starts(tmp_path, capsys):
    suite = tmp_path / "s.yaml"
    suite.write_text("id: x\nconversation:\n- role: user\n  content: q\n  target:\n    query: {gold: SELECT 1}\n")
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"case_id": "x", "query": "SELECT 1"}) + "\n")
    out = tmp_path / "o"
    assert main(["run", str(suite), "--responses", str(preds), "--graph", str(tmp_path / "nope.ttl"),
                 "--out", str(out), "-q"]) == 2
    assert "nope.ttl" in capsys.readouterr().err
    assert not out.exists()


def test_missing_source_is_a_clear_error(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text("id: x\nconversation:\n- role: user\n  content: q\n  target:\n    query: {gold: SELECT 1}\n")
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"case_id": "x", "query": "SELECT 1"}) + "\n")
    code = main(["run", str(suite), "--responses", str(preds), "--out", str(tmp_path / "o"), "-q"])
    assert code == 2
