"""What the tests of testsuite sparql share with other test files: ``BRICK``, ``GOLD``, ``GRAPH``, ``answers`` (moved here from test_testsuite_sparql.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyoxigraph as ox

GRAPH = Path(__file__).resolve().parents[2] / "examples" / "sparql" / "building.ttl"


BRICK = "https://brickschema.org/schema/Brick#"


GOLD = "SELECT ?ahu WHERE { ?ahu a brick:Air_Handling_Unit }"


def answers(store: ox.Store, query: str) -> Counter:
    res = store.query(query, prefixes={"brick": BRICK})
    names = [v.value for v in res.variables]
    return Counter(tuple(str(s[n]) for n in names) for s in res)
