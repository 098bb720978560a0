"""TREC qrels/run readers, their error messages, and the ``trec`` CLI command."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from queryeval.errors import InputError
from queryeval.metrics.ranking import evaluate
from queryeval.suite import trec
from queryeval.suite.trec import evaluate_files, read_qrels, read_run

QRELS = "q1 0 a 1\nq1 0 b 2\nq1 0 c 0\nq2 0 x 1\nq3 0 y 1\n"
RUN = ("q1 Q0 a 1 1.0 t\nq1 Q0 b 2 1.0 t\nq1 Q0 c 3 2.0 t\nq1 Q0 e 4 1.0 t\n"
       "q2 Q0 z 1 5 t\nq2 Q0 x 2 4.5 t\nq9 Q0 x 1 1 t\n")


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_dict_readers(tmp_path: Path) -> None:
    assert read_qrels(_write(tmp_path, "q", QRELS)) == {
        "q1": {"a": 1, "b": 2, "c": 0}, "q2": {"x": 1}, "q3": {"y": 1}}
    run = read_run(_write(tmp_path, "r", RUN))
    assert run["q1"] == {"a": 1.0, "b": 1.0, "c": 2.0, "e": 1.0} and run["q9"] == {"x": 1.0}


def test_files_equal_dicts_and_pytrec_eval(tmp_path: Path) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    q, r = _write(tmp_path, "q", QRELS), _write(tmp_path, "r", RUN)
    names = ["ndcg@3", "map", "mrr", "recall@2", "precision@2"]
    from_files = evaluate_files(q, r, names, per_query=True)
    from_dicts = evaluate(read_qrels(q), read_run(r), names, per_query=True)
    assert from_files.qids == from_dicts.qids == ["q1", "q2", "q3"]
    for name in names:
        np.testing.assert_array_equal(from_files.per_query[name], from_dicts.per_query[name])
    with open(q) as fq, open(r) as fr:
        ref = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(fq), {"map", "recip_rank"}
                                             ).evaluate(pytrec_eval.parse_run(fr))
    skip = evaluate_files(q, r, ["map", "mrr"], per_query=True, missing_query="skip")
    assert skip.qids == sorted(ref)
    assert skip.per_query["mrr"].tolist() == [ref[x]["recip_rank"] for x in skip.qids]
    assert skip.per_query["map"] == pytest.approx([ref[x]["map"] for x in skip.qids])


def test_random_files_fast_and_exact_paths_agree(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    qlines, rlines = [], []
    for i in rng.permutation(40):  # queries interleave: file order is not qid order
        for j in rng.choice(30, 5, replace=False):
            qlines.append(f"q{i} 0 d{j} {rng.integers(0, 3)}")
        for j in rng.choice(30, 12, replace=False):
            rlines.append(f"q{i} Q0 d{j} 0 {rng.integers(0, 4) / 4} run")
    rng.shuffle(rlines)
    q = _write(tmp_path, "q", "\n".join(qlines) + "\n")
    r = _write(tmp_path, "r", "\n".join(rlines) + "\n")
    # Same content with tabs and repeated spaces: only the exact (Python) path reads it.
    r2 = _write(tmp_path, "r2", "\n".join(x.replace(" ", "\t  ") for x in rlines) + "\n\n")
    names = ["ndcg@5", "map", "mrr@3", "recall@10", "hit_rate@1"]
    fast = evaluate_files(q, r, names, per_query=True)
    exact = evaluate_files(q, r2, names, per_query=True)
    dicts = evaluate(read_qrels(q), read_run(r), names, per_query=True)
    for name in names:
        np.testing.assert_array_equal(fast.per_query[name], exact.per_query[name])
        np.testing.assert_allclose(fast.per_query[name], dicts.per_query[name], atol=1e-15)


@pytest.mark.parametrize(
    ("kind", "text", "where", "message"),
    [
        ("qrels", "q1 0 a 1\nq1 0 b x\n", ":2: column 4 (relevance)", "integer, got 'x'"),
        ("qrels", "q1 0 a 1\n\nq1 0 b\n", ":3:", "expected 4 whitespace-separated columns"),
        ("run", "q1 Q0 a 1 1.0 t\nq1 Q0 b 2 high t\n", ":2: column 5 (score)", "got 'high'"),
        ("run", "q1 Q0 a 1 1.0 t\nq1 Q0 b 2 nan t\n", ":2: column 5 (score)", "NaN"),
        ("run", "q1 Q0 a 1 1.0\n", ":1:", "expected 6"),
        ("run", "q1 Q0 a 1 1.0 t\nq2 Q0 a 1 1.0 t\nq1 Q0 a 3 0.5 t\n", ":3:",
         "also on line 1"),
        ("qrels", "q1 0 a 1\nq1 0 a 0\n", ":2:", "also on line 1"),
    ],
)
def test_errors_name_the_line(tmp_path, kind, text, where, message) -> None:
    bad = _write(tmp_path, "bad", text)
    good_q = _write(tmp_path, "q", "q1 0 a 1\n")
    good_r = _write(tmp_path, "r", "q1 Q0 a 1 1.0 t\n")
    args = (bad, good_r) if kind == "qrels" else (good_q, bad)
    with pytest.raises(InputError) as err:
        evaluate_files(*args, ["mrr"])
    assert f"bad{where}" in str(err.value) and message in str(err.value)
    reader = read_qrels if kind == "qrels" else read_run
    with pytest.raises(InputError, match=message):
        reader(bad)


def test_invalid_utf8_and_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "r"
    p.write_bytes(b"q1 Q0 a 1 1.0 t\nq1 Q0 \xff 2 1.0 t\n")
    with pytest.raises(InputError, match=r":2: not UTF-8"):
        read_run(p)
    with pytest.raises(InputError, match="no such file"):
        read_run(tmp_path / "nope")


def test_exact_path_used_without_pyarrow(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(trec, "_parse_arrow", lambda path, kind: None)
    q, r = _write(tmp_path, "q", QRELS), _write(tmp_path, "r", RUN)
    assert evaluate_files(q, r, ["mrr"])["mrr"] == pytest.approx((1 / 3 + 1 / 2 + 0) / 3)


# ---------------------------------------------------------------- CLI


@pytest.fixture
def cli():
    from queryeval.cli.trec import command

    app = typer.Typer()
    app.command()(command)
    return lambda *args: CliRunner().invoke(app, [str(a) for a in args])


def test_cli_json(tmp_path: Path, cli) -> None:
    q, r = _write(tmp_path, "q", QRELS), _write(tmp_path, "r", RUN)
    res = cli(q, r, "-m", "mrr", "-m", "recall@2", "--json", "--per-query")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["queries"] == 3 and out["missing_queries"] == 1
    assert out["means"]["mrr"] == pytest.approx((1 / 3 + 1 / 2) / 3)
    assert out["per_query"]["q2"]["mrr"] == 0.5 and out["per_query"]["q3"]["mrr"] == 0.0
    res = cli(q, r, "-m", "mrr", "--json", "--missing-query", "skip")
    assert json.loads(res.output)["means"]["mrr"] == pytest.approx((1 / 3 + 1 / 2) / 2)


def test_cli_table_and_errors(tmp_path: Path, cli) -> None:
    q, r = _write(tmp_path, "q", QRELS), _write(tmp_path, "r", RUN)
    res = cli(q, r, "-m", "ndcg@10", "--per-query")
    assert res.exit_code == 0 and "ndcg@10" in res.output and "q2" in res.output
    res = cli(q, r, "-m", "ndgc@10")
    assert res.exit_code != 0 and "known metrics" in str(res.exception)
    bad = _write(tmp_path, "bad", "q1 0 a x\n")
    res = cli(bad, r, "-m", "mrr")
    assert isinstance(res.exception, InputError) and res.exception.line == 1
