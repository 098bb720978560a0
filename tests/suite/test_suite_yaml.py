"""Suite loading: the three layouts, and every bad input as one line with file, line, field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from queryeval.errors import InputError
from queryeval.suite import load_suite
from queryeval.suite.models import case_json_schema

MEX_CASE = """\
id: c48d7624-d376-48ca-b2d8-386999befb45
name: could_you_give_me_the_population_numbers_for_mexico
tags:
- imf
- weo
comments: ''
conversation:
- role: user
  content: Could you give me the population numbers for Mexico?
  target:
    indicator_selection:
    - dataset_id: IMF.RES:WEO
      dimensions:
      - dimension_name: INDICATOR
        values:
        - id: LP
          name: Population, Persons for countries / Index for country groups
      - dimension_name: COUNTRY
        values:
        - id: MEX
          name: Mexico
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def test_seed_example_case_loads(tmp_path):
    suite = load_suite(write(tmp_path, "mex.yaml", MEX_CASE))
    (case,) = suite.cases
    assert case.id == "c48d7624-d376-48ca-b2d8-386999befb45"
    assert case.tags == ["imf", "weo"]
    target = case.conversation[0].target.indicator_selection
    assert target[0].dimensions[1].values[0].id == "MEX"
    assert case.scored_turns() == [0]
    assert suite.task_kinds() == {"indicator_selection"}
    assert suite.hash.startswith("sha256:")


def test_multi_document_list_document_and_folder(tmp_path):
    two = MEX_CASE + "---\n" + MEX_CASE.replace("c48d7624", "00000002")
    write(tmp_path, "cases/a.yaml", two)
    listed = "- " + MEX_CASE.replace("c48d7624", "00000003").replace("\n", "\n  ").rstrip() + "\n"
    write(tmp_path, "cases/sub/b.yml", listed)
    write(tmp_path, "cases/notes.txt", "ignored")
    suite = load_suite(tmp_path / "cases")
    assert [c.id[:8] for c in suite.cases] == ["c48d7624", "00000002", "00000003"]
    assert len(suite.sources) == 2


def test_missing_field_names_file_line_and_field(tmp_path):
    # drop the id of the second COUNTRY-dimension value: line 20 is "- name: Mexico"
    bad = MEX_CASE.replace("        - id: MEX\n          name: Mexico", "        - name: Mexico")
    p = write(tmp_path, "cases/mex.yaml", bad)
    with pytest.raises(InputError) as err:
        load_suite(p)
    assert str(err.value) == (
        f"{p}:20: conversation[0].target.indicator_selection[0].dimensions[1].values[0].id: "
        "field required"
    )
    assert err.value.line == 20


def test_wrong_type_and_unknown_field(tmp_path):
    p = write(tmp_path, "a.yaml", MEX_CASE.replace("- role: user", "- role: robot"))
    with pytest.raises(InputError, match=r"a.yaml:8: conversation\[0\].role: input should be"):
        load_suite(p)
    p = write(tmp_path, "b.yaml", MEX_CASE.replace("comments: ''", "comment: ''"))
    with pytest.raises(InputError, match=r"b.yaml:6: comment: unknown field"):
        load_suite(p)


def test_invalid_yaml_reports_line(tmp_path):
    p = write(tmp_path, "c.yaml", "id: x\nconversation: [\n  - role: user\n")
    with pytest.raises(InputError, match=r"c.yaml:\d+: invalid YAML"):
        load_suite(p)


def test_duplicate_key_is_an_error(tmp_path):
    p = write(tmp_path, "d.yaml", MEX_CASE.replace("comments: ''", "comments: ''\nname: again"))
    with pytest.raises(InputError) as err:
        load_suite(p)
    assert str(err.value) == f"{p}:7: name: duplicate key 'name'"


def test_duplicate_case_ids_across_files(tmp_path):
    write(tmp_path, "s/a.yaml", MEX_CASE)
    b = write(tmp_path, "s/b.yaml", "# comment\n" + MEX_CASE)
    with pytest.raises(InputError) as err:
        load_suite(tmp_path / "s")
    msg = str(err.value)
    assert msg.startswith(f"{b}:2: id: duplicate case id 'c48d7624-d376-48ca-b2d8-386999befb45'")
    assert "a.yaml:1" in msg


def test_target_only_on_user_turns_and_needs_a_user_turn(tmp_path):
    p = write(tmp_path, "e.yaml", MEX_CASE.replace("- role: user", "- role: assistant"))
    with pytest.raises(InputError, match=r"e.yaml:8: conversation\[0\]: only user turns"):
        load_suite(p)


def test_empty_and_non_mapping_files(tmp_path):
    with pytest.raises(InputError, match="suite has no cases"):
        load_suite(write(tmp_path, "empty.yaml", "# nothing\n"))
    with pytest.raises(InputError, match=r"scalar.yaml:1: a case must be a mapping"):
        load_suite(write(tmp_path, "scalar.yaml", "just text\n"))
    with pytest.raises(InputError, match="no such file"):
        load_suite(tmp_path / "missing.yaml")
    with pytest.raises(InputError, match="unknown suite format"):
        load_suite(write(tmp_path, "x.toml", ""))


def test_bom_and_crlf_are_accepted_invalid_utf8_is_not(tmp_path):
    p = tmp_path / "bom.yaml"
    p.write_bytes(b"\xef\xbb\xbf" + MEX_CASE.replace("\n", "\r\n").encode())
    assert load_suite(p).cases[0].name.startswith("could_you")
    q = tmp_path / "bad.yaml"
    q.write_bytes(b"id: x\nname: \xff\xfe\n")
    with pytest.raises(InputError, match=r"bad.yaml:2: file is not valid UTF-8"):
        load_suite(q)


def test_numbers_become_strings_and_nulls_become_empty(tmp_path):
    text = "id: 42\nname:\ntags:\ncomments:\nconversation:\n- role: user\n  content: hi\n  target: {}\n"
    (case,) = load_suite(write(tmp_path, "n.yaml", text)).cases
    assert (case.id, case.name, case.tags, case.comments) == ("42", "", [], "")
    assert case.scored_turns() == [0] and case.task_kinds() == set()


def test_json_schema_describes_the_case():
    schema = case_json_schema()
    assert schema["required"] == ["id", "conversation"]
    assert schema["additionalProperties"] is False
    assert "indicator_selection" in schema["$defs"]["Target"]["properties"]
    json.dumps(schema)  # serialisable


def test_shipped_schema_file_is_current():
    """examples/case.schema.json (referenced by the examples' yaml-language-server line)
    must equal what `queryeval schema` prints today."""
    shipped = json.loads((Path(__file__).resolve().parents[2] / "examples" / "case.schema.json").read_text())
    assert shipped == case_json_schema()
    assert set(shipped["$defs"]["Target"]["properties"]) == {
        "indicator_selection", "answers", "retrieval", "query", "fields", "reference"}


def test_retrieval_target_identifies_its_chunks():
    """A retrieval target names its chunk by content_hash or chunk_id, or lists several
    relevant chunks; one that identifies nothing is refused, naming what it needs."""
    from pydantic import ValidationError

    from queryeval.suite.models import RetrievalTarget

    assert RetrievalTarget(chunk_id="c1").content_hash == ""
    t = RetrievalTarget(relevant=[{"chunk_id": "c1"}, {"content_hash": "A" * 32, "relevance": 2}])
    assert [(r.chunk_id, r.relevance) for r in t.relevant] == [("c1", 1), ("", 2)]
    with pytest.raises(ValidationError, match="content_hash, chunk_id or relevant"):
        RetrievalTarget(answer="x")
    with pytest.raises(ValidationError, match="chunk_id or a content_hash"):
        RetrievalTarget(relevant=[{"relevance": 1}])
    with pytest.raises(ValidationError):
        RetrievalTarget(content_hash="not-md5")
