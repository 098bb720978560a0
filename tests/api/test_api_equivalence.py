"""``qe.evaluate`` on a suite gives the same metrics document as ``queryeval run`` on the same
inputs, for all five task kinds (the shipped examples; a small answers suite built here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import queryeval as qe
from queryeval.cli.app import main

EX = Path(__file__).resolve().parents[2] / "examples"
HEADER = ("log_schema", "batch_id", "timestamp")

ANSWERS_SUITE = """\
id: q1
conversation:
- {role: user, content: Two values?, target: {answers: [{name: a, value: "1"}, {name: b, value: "2"}]}}
---
id: q2
conversation:
- {role: user, content: One value?, target: {answers: {c: "5"}}}
---
id: q3
tags: [words]
conversation:
- {role: user, content: Three words?, target: {answers: {d: x, e: y, f: z}}}
"""
ANSWERS = [{"id": "q1", "response": "@a[1] @b[3]"}, {"id": "q2", "response": "@c[5.0000001]"},
           {"id": "q3", "response": "@d[x] @e[y] @f[z]"}]


def _metrics(batch: Path) -> dict:
    bid = batch.stem.removeprefix("batch_")
    doc = json.loads((batch.parent / f"metrics_{bid}.json").read_text())
    return {k: v for k, v in doc.items() if k not in HEADER}


def _cli(tmp_path: Path, args: list[str]) -> list[dict]:
    """Run the CLI; the metrics of its batch, then of its derived batches (by options)."""
    out = tmp_path / "cli"
    assert main(["run", *args, "--out", str(out), "-q", "--no-report"]) == 0
    batches = {p: json.loads(p.read_text()) for p in out.rglob("batch_*.json")}
    (parent,) = [p for p, d in batches.items() if "derived_from" not in d]
    derived = batches[parent].get("derived_batches", {})
    return [_metrics(parent)] + [_metrics(parent.with_name(f"batch_{bid}.json"))
                                 for _, bid in sorted(derived.items())]


def _api(run) -> list[dict]:
    derived = run.batch.get("derived_batches", {})
    return [_metrics(run.path)] + [_metrics(run.folder / f"batch_{bid}.json")
                                   for _, bid in sorted(derived.items())]


def _check(api: list[dict], cli: list[dict]) -> None:
    assert len(api) == len(cli)
    for a, c in zip(api, cli, strict=True):
        for doc in (a, c):  # latencies are measured, not computed
            for figures in doc.get("overall_metrics", {}), *doc.get("dataset_metrics", {}).values():
                for key in [k for k in figures if "time_ms" in k or "latency" in k]:
                    figures.pop(key)
        assert a == c


def test_selection_recorded(tmp_path):
    cli = _cli(tmp_path, [str(EX / "sdmx/suite"), "--responses", str(EX / "sdmx/responses.jsonl")])
    run = qe.evaluate(EX / "sdmx/suite", responses=EX / "sdmx/responses.jsonl")
    _check(_api(run), cli)
    assert cli[0]["overall_metrics"]["macro_recall"] == pytest.approx(39 / 46)


def test_selection_python_system(tmp_path):
    spec = f"python:{EX / 'sdmx/system.py'}:select"
    cli = _cli(tmp_path, [str(EX / "sdmx/suite"), "--system", spec])
    _check(_api(qe.evaluate(EX / "sdmx/suite", system=spec)), cli)


def test_retrieval_builtin_bm25_with_derived_k(tmp_path):
    cli = _cli(tmp_path, [str(EX / "retrieval/questions.csv"), "--corpus",
                          str(EX / "retrieval/corpus.jsonl"), "--k", "1,5"])
    run = qe.evaluate(EX / "retrieval/questions.csv", corpus=EX / "retrieval/corpus.jsonl", k=[1, 5])
    assert len(cli) == 2  # the k=5 batch and its derived k=1 batch
    _check(_api(run), cli)
    assert set(run.groups["dataset"].index) == {"Riverside Benefits", "Lakeside Transit"}


def test_query_recorded_sparql(tmp_path):
    cli = _cli(tmp_path, [str(EX / "sparql/suite.yaml"), "--responses",
                          str(EX / "sparql/predictions.jsonl")])
    run = qe.evaluate(EX / "sparql/suite.yaml", responses=EX / "sparql/predictions.jsonl")
    _check(_api(run), cli)
    assert run.overall["perfect_match"] == 0.25


def test_fields_builtin_bm25(tmp_path):
    cli = _cli(tmp_path, [str(EX / "fields/evaluation.csv"), "--data",
                          str(EX / "fields/ingredients.csv"), "--model", "bm25"])
    run = qe.evaluate(EX / "fields/evaluation.csv", data=EX / "fields/ingredients.csv", model="bm25")
    _check(_api(run), cli)
    assert list(run.groups["field"].index) == ["item", "price_type", "category"]


def test_answers_recorded(tmp_path):
    suite = tmp_path / "answers.yaml"
    suite.write_text(ANSWERS_SUITE)
    responses = tmp_path / "responses.jsonl"
    responses.write_text("".join(json.dumps(r) + "\n" for r in ANSWERS))
    cli = _cli(tmp_path, [str(suite), "--responses", str(responses), "--match", "strict"])
    run = qe.evaluate(suite, responses=responses, match="strict")
    _check(_api(run), cli)
    # strict: q1 1/2, q2 0/1 (5.0000001 != 5), q3 3/3 -> PSAQ (0.5 + 0 + 1) / 3
    assert run.overall["psaq"] == pytest.approx(0.5)
