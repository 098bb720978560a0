"""DABench readers: the public dev sets (perfect responses score 1.0) and error reporting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from queryeval.errors import InputError
from queryeval.metrics.answers import closed_form_metrics, score_question
from queryeval.suite.dabench import (
    join_cases,
    load_cases,
    read_labels,
    read_questions,
    read_responses,
    responses_by_id,
    unlabeled_question_ids,
)

# counts from REFERENCE.md (questions, label pairs) plus what last-duplicate-wins leaves
# (question 734 repeats two names: 7 pairs -> 2 sub-questions)
DATASETS = {
    "current": {"questions": 257, "label_pairs": 461, "subquestions": 456, "levels": True},
    "seed-era": {"questions": 396, "label_pairs": 700, "subquestions": 695, "levels": False},
}


@pytest.mark.parametrize("name", sorted(DATASETS))
@pytest.mark.parametrize("match", ["numeric", "strict"])
@pytest.mark.parametrize("missing", ["wrong", "skip"])
def test_responses_built_from_labels_score_one(shared_data: Path, name, match, missing, tmp_path):
    d = shared_data / "dabench" / name
    labels = read_labels(d / "da-dev-labels.jsonl")
    cases = load_cases(d / "da-dev-questions.jsonl", d / "da-dev-labels.jsonl")
    want = DATASETS[name]
    assert len(cases) == want["questions"]
    assert sum(len(lab.common_answers) for lab in labels) == want["label_pairs"]
    assert sum(c.label_pairs for c in cases) == want["label_pairs"]
    # a responses file written the way a user would, every label pair in file order, so
    # the repeated names of question 734 exercise last-wins on both sides
    rpath = tmp_path / "responses.jsonl"
    with rpath.open("w") as fh:
        for lab in labels:
            text = "Answers:\n" + "\n".join(f"@{n}[{v}]" for n, v in lab.common_answers)
            fh.write(json.dumps({"id": int(lab.id), "response": text}) + "\n")
    resp = responses_by_id(read_responses(rpath), [c.id for c in cases], path=rpath)
    scores = [score_question(c.answers, resp[c.id], match=match, missing=missing) for c in cases]
    m = closed_form_metrics(scores, cases)
    assert (m["psaq"], m["abq"], m["uasq"]) == (1.0, 1.0, 1.0)
    assert (m["questions"], m["answered"], m["missing"]) == (want["questions"], want["questions"], 0)
    assert m["subquestions"] == want["subquestions"]
    assert all(g["abq"] == 1.0 and g["psaq"] == 1.0 for g in m["by_concept"].values())
    assert set(m["by_concept_group"]) == {"1", ">1"}
    assert ("by_level" in m) is want["levels"]
    if want["levels"]:
        assert set(m["by_level"]) == {"easy", "medium", "hard"}
        assert sum(g["questions"] for g in m["by_level"].values()) == want["questions"]


def test_current_concept_counts_match_data(shared_data: Path):
    d = shared_data / "dabench" / "current"
    cases = load_cases(d / "da-dev-questions.jsonl", d / "da-dev-labels.jsonl")
    scores = [score_question(c.answers, "") for c in cases]  # all missing -> all wrong
    m = closed_form_metrics(scores, cases)
    assert {k: g["questions"] for k, g in m["by_concept_count"].items()} == {
        "1": 150, "2": 97, "3": 9, "4": 1
    }
    assert m["by_concept_group"][">1"]["questions"] == 107
    assert (m["abq"], m["psaq"], m["uasq"], m["missing"]) == (0.0, 0.0, 0.0, 257)
    # question 734: last value of each repeated name
    q734 = next(c for c in cases if c.id == "734")
    assert q734.answers == [("correlation_coefficient", "0.56"),
                            ("correlation_significance", "non-significant")]
    assert q734.label_pairs == 7


# --------------------------------------------------------------------------- readers


def _write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


Q0 = {"id": 0, "question": "q?", "concepts": ["Summary Statistics"], "constraints": "c",
      "format": "@mean[v]", "file_name": "t.csv"}


def _q(**kw) -> str:
    return json.dumps({**Q0, **kw})


def test_read_questions_ids_as_str_blank_lines_and_optional_level(tmp_path):
    p = _write(tmp_path, "q.jsonl", [_q(), "", "   ", _q(id="x7", level="hard", extra=1)])
    qs = read_questions(p)
    assert [(q.id, q.level, q.line) for q in qs] == [("0", None, 1), ("x7", "hard", 4)]


@pytest.mark.parametrize(
    ("lines", "line", "field", "message"),
    [
        ([_q(), "{not json"], 2, None, "invalid JSON"),
        ([_q(), "[1, 2]"], 2, None, "expected a JSON object, got list"),
        ([_q(), "", _q(id=0)], 3, "id", "duplicate id '0' (first on line 1)"),
        ([_q(), _q(id="0")], 2, "id", "duplicate id '0'"),  # 0 and "0" are one id
        ([_q(id=True)], 1, "id", "id must be an integer or a string, got bool"),
        ([_q(id=1.5)], 1, "id", "got float"),
        ([_q(concepts="Summary Statistics")], 1, "concepts", "valid list"),
        ([_q(concepts=["A", 3])], 1, "concepts[1]", "valid string"),
        ([json.dumps({k: v for k, v in Q0.items() if k != "format"})], 1, "format",
         "field required"),
        ([_q(level=2)], 1, "level", "valid string"),
    ],
)
def test_read_questions_errors(tmp_path, lines, line, field, message):
    p = _write(tmp_path, "q.jsonl", lines)
    with pytest.raises(InputError) as ei:
        read_questions(p)
    err = ei.value
    assert (err.path, err.line, err.field) == (str(p), line, field)
    assert message in err.message
    assert str(err).startswith(f"{p}:{line}: ")


@pytest.mark.parametrize(
    ("label", "field", "message"),
    [
        ({"id": 0, "common_answers": []}, "common_answers", "at least 1 item"),
        ({"id": 0, "common_answers": [["a", "1", "x"]]}, "common_answers[0]", "at most 2 items"),
        ({"id": 0, "common_answers": [["a", 1]]}, "common_answers[0][1]", "valid string"),
        ({"id": 0, "common_answers": [["mean-fare", "1"]]}, "common_answers",
         "not made of word characters"),
        ({"id": 0}, "common_answers", "field required"),
    ],
)
def test_read_labels_errors(tmp_path, label, field, message):
    p = _write(tmp_path, "l.jsonl", [json.dumps({"id": 9, "common_answers": [["a", "1"]]}),
                                     json.dumps(label)])
    with pytest.raises(InputError) as ei:
        read_labels(p)
    assert (ei.value.line, ei.value.field) == (2, field)
    assert message in ei.value.message


def test_label_for_unknown_question_names_its_line(tmp_path):
    qp = _write(tmp_path, "q.jsonl", [_q()])
    lp = _write(tmp_path, "l.jsonl", [json.dumps({"id": 0, "common_answers": [["mean", "1"]]}),
                                      "",
                                      json.dumps({"id": 5, "common_answers": [["mean", "1"]]})])
    with pytest.raises(InputError) as ei:
        load_cases(qp, lp)
    assert (ei.value.path, ei.value.line, ei.value.field) == (str(lp), 3, "id")
    assert "unknown question id '5'" in ei.value.message


def test_join_keeps_labels_order_and_reports_unlabeled(tmp_path):
    qp = _write(tmp_path, "q.jsonl", [_q(id=1), _q(id=2), _q(id=3)])
    lp = _write(tmp_path, "l.jsonl", [json.dumps({"id": 3, "common_answers": [["a", "1"]]}),
                                      json.dumps({"id": 1, "common_answers": [["a", "x"],
                                                                              ["a", "y"]]})])
    qs, ls = read_questions(qp), read_labels(lp)
    cases = join_cases(qs, ls, labels_path=lp)
    assert [(c.id, c.answers, c.label_pairs) for c in cases] == [
        ("3", [("a", "1")], 1), ("1", [("a", "y")], 2)
    ]
    assert unlabeled_question_ids(qs, ls) == ["2"]


def test_read_responses_and_align(tmp_path):
    rp = _write(tmp_path, "r.jsonl", [json.dumps({"id": 1, "response": "@a[1]", "model": "m"}),
                                      json.dumps({"id": "2", "response": None}),
                                      json.dumps({"id": 3, "response": ""})])
    rs = read_responses(rp)
    assert responses_by_id(rs, ["1", "2", "3", "4"], path=rp) == {
        "1": "@a[1]", "2": None, "3": "", "4": None
    }
    with pytest.raises(InputError) as ei:
        responses_by_id(rs, ["1", "2"], path=rp)
    assert (ei.value.line, ei.value.field) == (3, "id")
    assert "unknown question id '3'" in ei.value.message
    assert responses_by_id(rs, ["1"], path=rp, allow_unknown=True) == {"1": "@a[1]"}


@pytest.mark.parametrize(
    ("record", "field", "message"),
    [
        ({"id": 1}, "response", "field required"),
        ({"id": 1, "response": 42}, "response", "valid string"),
        ({"response": "x"}, "id", "field required"),
    ],
)
def test_read_responses_errors(tmp_path, record, field, message):
    rp = _write(tmp_path, "r.jsonl", [json.dumps(record)])
    with pytest.raises(InputError) as ei:
        read_responses(rp)
    assert (ei.value.line, ei.value.field) == (1, field)
    assert message in ei.value.message


def test_missing_file_and_bad_encoding(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_questions(tmp_path / "nope.jsonl")
    p = tmp_path / "latin1.jsonl"
    p.write_bytes(_q().encode() + b"\n" + b'{"id": 1, "question": "caf\xe9"}\n')
    with pytest.raises(InputError) as ei:
        read_questions(p)
    assert ei.value.line == 2 and "not valid UTF-8" in ei.value.message


def test_bom_is_accepted(tmp_path):
    p = tmp_path / "bom.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + _q().encode() + b"\n")
    assert [q.id for q in read_questions(p)] == ["0"]


def test_duplicate_ids_refused_or_first_non_empty(tmp_path):
    """InfiAgent takes the first non-empty response per id (a generator over the list)."""
    rp = _write(tmp_path, "r.jsonl", [json.dumps({"id": 1, "response": ""}),
                                      json.dumps({"id": 1, "response": "@a[1]"}),
                                      json.dumps({"id": 1, "response": "@a[2]"}),
                                      json.dumps({"id": 2, "response": None})])
    with pytest.raises(InputError, match="duplicate id '1'") as ei:
        read_responses(rp)
    assert ei.value.line == 2
    rs = read_responses(rp, allow_duplicates=True)
    assert responses_by_id(rs, ["1", "2"], path=rp, first_non_empty=True) == {
        "1": "@a[1]", "2": None}
