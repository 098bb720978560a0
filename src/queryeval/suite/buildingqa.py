"""BuildingQA's QA JSON (seed 003): ``[{building_id, queries: [{query_id, sparql_query,
questions: [{question_number, text, source}]}]}]`` -> one text-to-SPARQL case per question.

The case id is ``<building>/<query_id>/<question_number>`` (building = the graph file's stem,
as BuildingQA's prediction files name it), so predictions for several buildings can share
one file. The graph is the ``building_id`` file beside the QA JSON.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from queryeval.errors import InputError
from queryeval.io.jsonl import LONE_SURROGATE, lone_surrogate
from queryeval.suite.common import Suite, hash_files
from queryeval.suite.models import Case
from queryeval.suite.yamlsrc import format_loc


class _Question(BaseModel):
    model_config = ConfigDict(extra="ignore")
    question_number: int | str
    text: str = Field(min_length=1)
    source: str = ""


class _Query(BaseModel):
    model_config = ConfigDict(extra="ignore")
    query_id: str
    sparql_query: str = Field(min_length=1)
    description: str = ""
    questions: list[_Question]


class _Building(BaseModel):
    model_config = ConfigDict(extra="ignore")
    building_id: str
    queries: list[_Query]


def case_id(building: str, query_id: str, question_number: int | str) -> str:
    return f"{building}/{query_id}/{question_number}"


def read_buildingqa(path: str | Path) -> Suite:
    from queryeval.io.files import decode_text, read_input_bytes
    from queryeval.io.jsonl import load_json_document

    path = Path(path)
    text = decode_text(read_input_bytes(path, "suite"), path)
    data = load_json_document(text, path=path)
    if lone_surrogate(text, data):
        raise InputError(LONE_SURROGATE, path=path)
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise InputError("expected a list of buildings", path=path)
    cases: list[Case] = []
    origin: dict[str, tuple[str, int]] = {}
    graphs = []
    for i, raw in enumerate(data):
        try:
            building = _Building.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            raise InputError(err["msg"][:1].lower() + err["msg"][1:], path=path,
                             record=str(i), field=format_loc((i, *err["loc"]))) from None
        graph = (path.parent / building.building_id).resolve()
        graphs.append(graph)
        stem = Path(building.building_id).stem
        for q in building.queries:
            for question in q.questions:
                cid = case_id(stem, q.query_id, question.question_number)
                if cid in origin:
                    raise InputError(f"duplicate question {cid}", path=path, record=str(i))
                origin[cid] = (str(path), 0)
                cases.append(Case(
                    id=cid, name=question.text[:80], tags=[question.source] if question.source else [],
                    cluster=stem,  # questions on one building's graph
                    metadata={"building": stem, "query_id": q.query_id,
                              "question_number": question.question_number,
                              "question_source": question.source},
                    conversation=[{"role": "user", "content": question.text, "target": {
                        "query": {"gold": q.sparql_query, "language": "sparql", "source": str(graph)}}}],
                ))
    if not cases:
        raise InputError("no questions", path=path)
    return Suite(cases=cases, sources=[path], hash=hash_files([path]), origin=origin)
