"""The reference's analysis JSON (``--export dabench``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from queryeval.export.dabench import dabench_analysis, write_dabench_analysis
from queryeval.metrics.answers import closed_form_metrics, score_question
from queryeval.suite.dabench import load_cases


@dataclass
class Q:
    concepts: list[str]
    level: str | None = None


def _metrics(missing: str = "skip") -> dict:
    # Q1 [A]: 1/1 right; Q2 [A, B]: 1/3; Q3 [B, C, A]: 1/2; Q4 [D]: no response
    qs = [Q(["A"]), Q(["A", "B"]), Q(["B", "C", "A"]), Q(["D"])]
    labels = [[("x", "1")], [("x", "1"), ("y", "2"), ("z", "3")], [("x", "a"), ("y", "b")],
              [("x", "1")]]
    responses = ["@x[1]", "@x[1] @y[0]", "@x[a] @y[c]", ""]
    scores = [score_question(lab, r, missing=missing) for lab, r in zip(labels, responses, strict=True)]
    return closed_form_metrics(scores, qs)


def test_analysis_structure_and_rounding():
    out = dabench_analysis(_metrics())
    # ABQ 1/3; PSAQ (1 + 1/3 + 1/2)/3 = 11/18 = 0.61111; UASQ 3/6
    assert out == {
        "main_results": {
            "Accuracy by Question": 0.3333,
            "Accuracy Proportional by Sub-Question": 0.6111,
            "Accuracy by Sub-Question": 0.5,
        },
        # A: Q1 Q2 Q3 -> 1/3; B: Q2 Q3 -> 0; C: Q3 -> 0 (D only on a skipped question)
        "concept_accuracy_analysis": {"A": 0.3333, "B": 0.0, "C": 0.0},
        "concept_count_accuracy_analysis": {"1": 1.0, "2": 0.0, "3": 0.0},
        "two_or_more_concepts_accuracy": 0.0,
    }
    assert list(out["main_results"]) == [
        "Accuracy by Question", "Accuracy Proportional by Sub-Question", "Accuracy by Sub-Question"
    ]


def test_analysis_unrounded_and_missing_wrong():
    out = dabench_analysis(_metrics("wrong"), digits=None)
    # N = 4: ABQ 1/4, PSAQ (11/6)/4 = 11/24, UASQ 3/7
    assert out["main_results"] == {
        "Accuracy by Question": 0.25,
        "Accuracy Proportional by Sub-Question": float(Fraction(11, 24)),
        "Accuracy by Sub-Question": 3 / 7,
    }
    assert out["concept_accuracy_analysis"]["D"] == 0.0
    assert out["concept_count_accuracy_analysis"]["1"] == 0.5  # Q1 right, Q4 wrong


def test_analysis_zero_division_like_reference():
    m = closed_form_metrics([score_question([("x", "1")], None, missing="skip")], [Q(["A"])])
    assert dabench_analysis(m) == {
        "main_results": {
            "Accuracy by Question": 0,
            "Accuracy Proportional by Sub-Question": 0,
            "Accuracy by Sub-Question": 0,
        },
        "concept_accuracy_analysis": {},
        "concept_count_accuracy_analysis": {},
        "two_or_more_concepts_accuracy": None,
    }


def test_write_is_json_indent_4(tmp_path: Path):
    p = write_dabench_analysis(tmp_path / "out" / "x_evaluation_analysis.json", _metrics())
    text = p.read_text()
    assert json.loads(text) == dabench_analysis(_metrics())
    assert text.startswith('{\n    "main_results": {\n        "Accuracy by Question": 0.3333')
    assert [f.name for f in p.parent.iterdir()] == [p.name]  # no temp file left behind


def test_perfect_current_set(shared_data: Path):
    d = shared_data / "dabench" / "current"
    cases = load_cases(d / "da-dev-questions.jsonl", d / "da-dev-labels.jsonl")
    text = {c.id: " ".join(f"@{n}[{v}]" for n, v in c.answers) for c in cases}
    m = closed_form_metrics([score_question(c.answers, text[c.id]) for c in cases], cases)
    out = dabench_analysis(m)
    assert set(out["main_results"].values()) == {1.0}
    assert list(out["concept_count_accuracy_analysis"]) == ["1", "2", "3", "4"]
    assert out["two_or_more_concepts_accuracy"] == 1.0
    # first concept seen in labels order (question 0: Summary Statistics) comes first
    assert next(iter(out["concept_accuracy_analysis"])) == "Summary Statistics"
