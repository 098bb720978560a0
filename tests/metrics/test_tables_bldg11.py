"""The seed's BuildingQA example (seed 003, section 2) on the public bldg11 graph: the six
queries run on pyoxigraph (no inference) and the figures REFERENCE.md records."""

from __future__ import annotations

import pytest

from queryeval.metrics.sparql import (
    get_arity_matching_f1,
    get_entity_and_row_matching_f1,
    get_exact_match_f1,
)
from queryeval.metrics.tables import table_scores

GOLD = """
    PREFIX brick: <https://brickschema.org/schema/Brick#>
    SELECT DISTINCT ?eqp ?sensor WHERE {
        ?eqp    a                       brick:Air_Handling_Unit .
        ?vav    a                       brick:VAV .
        ?sensor a                       brick:Zone_Air_Temperature_Sensor .
        ?eqp    brick:feeds             ?vav .
        ?vav    brick:hasPoint          ?sensor .
    }
"""
PRED = {
    1: """
    PREFIX brick: <https://brickschema.org/schema/Brick#>
    SELECT DISTINCT ?ahu ?s  WHERE {
        ?ahu    a        brick:Air_Handling_Unit .
        ?s      a        brick:Zone_Air_Temperature_Sensor .
    }
""",
    2: """
    PREFIX brick: <https://brickschema.org/schema/Brick#>
    SELECT DISTINCT ?s ?ahu   WHERE {
        ?ahu    a        brick:Air_Handling_Unit .
        ?s      a        brick:Zone_Air_Temperature_Sensor .
    }
""",
    3: """
    PREFIX brick: <https://brickschema.org/schema/Brick#>
    SELECT DISTINCT ?eqp ?vav ?sensor WHERE {
        ?eqp    a                       brick:Air_Handling_Unit .
        ?vav    a                       brick:VAV .
        ?sensor a                       brick:Zone_Air_Temperature_Sensor .
        ?eqp    brick:feeds             ?vav .
        ?vav    brick:hasPoint          ?sensor .
    }
""",
    4: """
    PREFIX brick: <https://brickschema.org/schema/Brick#>
    SELECT DISTINCT ?s   WHERE {
        ?ahu    a        brick:Air_Handling_Unit .
        ?s      a        brick:Zone_Air_Temperature_Sensor .
    }
""",
    5: """
    PREFIX brick: <https://brickschema.org/schema/Brick#>
    SELECT DISTINCT ?e ?s WHERE {
        ?e    a                       brick:Air_Handling_Unit .
        ?vav    a                       brick:VAV .
        ?s a                       brick:Zone_Air_Temperature_Sensor .
        ?e    brick:feeds             ?vav .
        ?vav    brick:hasPoint          ?s .
    }
""",
}


def _sparql_json(store, query: str) -> dict:
    """Solutions as a SPARQL endpoint would serialise them: IRIs as their string, literals
    as their lexical value; an unbound variable is absent from its binding."""
    solutions = store.query(query)
    names = [v.value for v in solutions.variables]
    bindings = []
    for solution in solutions:
        row = {}
        for name in names:
            term = solution[name]
            if term is not None:
                row[name] = {"value": term.value}
        bindings.append(row)
    return {"head": {"vars": names}, "results": {"bindings": bindings}}


@pytest.fixture(scope="module")
def results(shared_data):
    ox = pytest.importorskip("pyoxigraph")
    store = ox.Store()
    store.load(path=str(shared_data / "buildingqa" / "bldg11.ttl"), format=ox.RdfFormat.TURTLE)
    out = {"gold": _sparql_json(store, GOLD)}
    for i, query in PRED.items():
        out[i] = _sparql_json(store, query)
    return out


def _rows(result: dict) -> list:
    return result["results"]["bindings"]


def test_row_counts(results):
    counts = [len(_rows(results[k])) for k in ("gold", 1, 2, 3, 4, 5)]
    assert counts == [377, 4268, 4268, 377, 388, 377]


def test_compat_figures(results):
    gold = _rows(results["gold"])
    r1 = get_entity_and_row_matching_f1(gold, _rows(results[1]))
    r2 = get_entity_and_row_matching_f1(gold, _rows(results[2]))
    for r in (r1, r2):
        assert r["entity_set_f1"] == pytest.approx(0.9445, abs=5e-5)
        assert r["row_matching_f1"] == pytest.approx(0.1623, abs=5e-5)
    # q3 has the gold's columns plus ?vav: the extra column is dropped -> perfect
    assert get_entity_and_row_matching_f1(gold, _rows(results[3])) == {
        "entity_set_f1": 1.0, "row_matching_f1": 1.0}
    assert get_entity_and_row_matching_f1(gold, _rows(results[4])) == {
        "entity_set_f1": 0.0, "row_matching_f1": 0.0}
    exact = [get_exact_match_f1(gold, _rows(results[i])) for i in range(1, 6)]
    assert exact[0] == pytest.approx(0.1623, abs=5e-5)
    assert exact[1:] == [0.0, 0.0, 0.0, 1.0]
    assert get_arity_matching_f1(PRED[1], GOLD) == 1.0
    assert get_arity_matching_f1(PRED[3], GOLD) == pytest.approx(0.8)
    assert get_arity_matching_f1(PRED[4], GOLD) == pytest.approx(2 / 3)
    # row F1 = 2·tp/(377+4268): tp is 377 -> every gold row is among q1's rows
    assert r1["row_matching_f1"] == pytest.approx(2 * 377 / (377 + 4268), abs=1e-15)


def test_native_api_agrees_on_iri_results(results):
    """IRIs only (no literals, no unbound cells): the clean rules give the same figures, and
    arity comes from the parsed queries."""
    for i in range(1, 6):
        clean = table_scores(results["gold"], results[i], pred_query=PRED[i], gold_query=GOLD)
        compat = get_entity_and_row_matching_f1(_rows(results["gold"]), _rows(results[i]))
        assert clean.exact
        assert clean.entity_set_f1 == compat["entity_set_f1"]
        assert clean.row_matching_f1 == compat["row_matching_f1"]
        assert clean.exact_match_f1 == get_exact_match_f1(_rows(results["gold"]), _rows(results[i]))
        assert clean.arity_f1 == get_arity_matching_f1(PRED[i], GOLD)
    assert table_scores(results["gold"], results[2]).mapping == ("ahu", "s")
    assert table_scores(results["gold"], results[3]).mapping == ("eqp", "sensor")
