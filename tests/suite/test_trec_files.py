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
from queryeval.suite import trec, trec_readers
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
        # grouped run (fast path, per-query table): the pair repeats inside its own segment
        ("run", "q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq1 Q0 a 3 1 t\nq2 Q0 a 1 1 t\n", ":3:",
         "also on line 1"),
    ],
)
def test_errors_name_the_line(tmp_path, kind, text, where, message) -> None:
    """Under ``strict`` (the lenient default reads 'x' and 'high' as 0, like trec_eval)."""
    bad = _write(tmp_path, "bad", text)
    good_q = _write(tmp_path, "q", "q1 0 a 1\n")
    good_r = _write(tmp_path, "r", "q1 Q0 a 1 1.0 t\n")
    args = (bad, good_r) if kind == "qrels" else (good_q, bad)
    with pytest.raises(InputError) as err:
        evaluate_files(*args, ["mrr"], strict=True)
    assert f"bad{where}" in str(err.value) and message in str(err.value)
    reader = read_qrels if kind == "qrels" else read_run
    with pytest.raises(InputError, match=message):
        reader(bad, strict=True)


def test_bad_qrels_reported_before_bad_run(tmp_path: Path) -> None:
    # The two files are read concurrently; the qrels error must still win.
    q = _write(tmp_path, "q", "q1 0 a 1\nq1 0 b x\n")
    r = _write(tmp_path, "r", "q1 Q0 a 1 high t\n")
    with pytest.raises(InputError, match=r"q:2: column 4 \(relevance\)"):
        evaluate_files(q, r, ["mrr"], strict=True)
    with pytest.raises(InputError, match=r"r:1: column 5 \(score\)"):
        evaluate_files(_write(tmp_path, "q2", "q1 0 a 1\n"), r, ["mrr"], strict=True)


def test_invalid_utf8_and_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "r"
    p.write_bytes(b"q1 Q0 a 1 1.0 t\nq1 Q0 \xff 2 1.0 t\n")
    with pytest.raises(InputError, match=r":2: not UTF-8"):
        read_run(p)
    with pytest.raises(InputError, match="no such file"):
        read_run(tmp_path / "nope")


def test_exact_path_used_without_pyarrow(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("QUERYEVAL_NO_EXT", "1")  # nor the compiled reader
    monkeypatch.setattr(trec, "_parse_arrow", lambda path, kind: None)
    q, r = _write(tmp_path, "q", QRELS), _write(tmp_path, "r", RUN)
    assert evaluate_files(q, r, ["mrr"])["mrr"] == pytest.approx((1 / 3 + 1 / 2 + 0) / 3)


def test_fast_path_whitespace_class_is_c_isspace() -> None:
    """The fast path defers ids holding any character C's ``isspace`` (trec_eval) splits on,
    and only those: a no-break space is part of an id, as in trec_eval."""
    import sys

    pc = pytest.importorskip("pyarrow.compute")
    pa = pytest.importorskip("pyarrow")
    chars = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c < 0xE000]
    c_space = np.array([c in " \t\n\v\f\r" for c in chars])
    matched = pc.match_substring_regex(pa.array(chars), trec_readers._WHITESPACE).to_numpy(
        zero_copy_only=False)
    assert c_space.sum() == 6 and (matched == c_space).all()


def _realistic_files(tmp_path: Path, seed: int) -> tuple[Path, list[str], list[str]]:
    """A qrels file and run lines the way systems write them: grouped by query, sorted by
    score, uneven depth, tied scores, queries judged but not retrieved and the reverse."""
    rng = np.random.default_rng(seed)
    qlines, rlines = [], []
    for i in range(60):
        if i % 10 != 9:  # q9, q19, ... are retrieved but never judged
            for j in rng.choice(50, int(rng.integers(1, 9)), replace=False):
                qlines.append(f"q{i} 0 d{j} {rng.integers(0, 4)}")
        if i % 7 != 3:  # q3, q10, ... are judged but missing from the run
            n = int(rng.integers(1, 40))
            scores = np.sort(rng.integers(0, 8, n) / 4)[::-1]
            for rank, (j, sc) in enumerate(zip(rng.choice(50, n, replace=False), scores, strict=True)):
                rlines.append(f"q{i} Q0 d{j} {rank + 1} {sc} sys")
    return _write(tmp_path, "q", "\n".join(qlines) + "\n"), qlines, rlines


@pytest.mark.parametrize("reader", ["compiled", "pyarrow"])
@pytest.mark.parametrize("seed", [0, 1])
def test_fast_path_equals_pytrec_eval_grouped_shuffled_and_spaced(
    tmp_path, monkeypatch, seed, reader
) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    with pytest.MonkeyPatch.context() as env:  # the test's own monkeypatch is undone inside
        if reader == "pyarrow":
            env.setenv("QUERYEVAL_NO_EXT", "1")
        _fast_path_equals_pytrec_eval(tmp_path, monkeypatch, seed, pytrec_eval)


def _fast_path_equals_pytrec_eval(tmp_path, monkeypatch, seed, pytrec_eval) -> None:
    q, _, rlines = _realistic_files(tmp_path, seed)
    grouped = _write(tmp_path, "grouped", "\n".join(rlines) + "\n")
    shuffled = _write(tmp_path, "shuffled", "\n".join(np.random.default_rng(seed).permutation(rlines)) + "\n")
    spaced = _write(tmp_path, "spaced", "\n".join(x.replace(" ", "  \t") for x in rlines) + "\n")
    with open(q) as fq, open(grouped) as fr:
        ref = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(fq), set(PYTREC)).evaluate(
            pytrec_eval.parse_run(fr))
    names = list(PYTREC.values())
    results = {}
    for name, path in [("grouped", grouped), ("shuffled", shuffled), ("spaced", spaced)]:
        if name != "spaced":  # clean files must stay on the fast path
            monkeypatch.setattr(trec, "_parse_python", _no_exact_path)
        else:
            monkeypatch.undo()
        results[name] = evaluate_files(q, path, names, per_query=True, missing_query="skip")
    monkeypatch.undo()
    res = results["grouped"]
    missing = [i for i in range(60) if i % 7 == 3 and i % 10 != 9]
    assert res.qids == sorted(ref) and res.n_missing == len(missing) == 8
    for theirs, ours in PYTREC.items():
        want = [ref[x][theirs.replace(".", "_")] for x in res.qids]
        np.testing.assert_allclose(res.per_query[ours], want, rtol=0, atol=1e-12)
        for other in ("shuffled", "spaced"):
            np.testing.assert_array_equal(results[other].per_query[ours], res.per_query[ours])


PYTREC = {"recall.5": "recall@5", "P.3": "precision@3", "ndcg_cut.4": "ndcg@4", "map": "map",
          "recip_rank": "mrr", "success.2": "hit_rate@2", "ndcg": "ndcg"}


def _no_exact_path(path, kind):
    raise AssertionError(f"{path} left the fast path")


def test_fast_and_exact_readers_agree_on_query_order_and_missing(tmp_path, monkeypatch) -> None:
    # Non-ASCII ids: pyarrow's byte-order sort must equal Python's str order.
    qrels = "é 0 a 1\nz 0 a 1\nä 0 b 2\n𝔸 0 a 1\nA 0 c 1\n"
    run = "z Q0 a 1 1 t\né Q0 b 1 2 t\né Q0 a 2 1 t\nunjudged Q0 a 1 1 t\n𝔸 Q0 a 1 1 t\n"
    q, r = _write(tmp_path, "q", qrels), _write(tmp_path, "r", run)
    for mode in ("zero", "skip"):
        fast = evaluate_files(q, r, ["mrr", "ndcg"], per_query=True, missing_query=mode)
        with monkeypatch.context() as m:
            m.setenv("QUERYEVAL_NO_EXT", "1")
            m.setattr(trec, "_parse_arrow", lambda path, kind: None)
            exact = evaluate_files(q, r, ["mrr", "ndcg"], per_query=True, missing_query=mode)
        assert fast.qids == exact.qids and fast.n_missing == exact.n_missing == 2
        assert fast.qids == sorted(fast.qids) and ("A" in fast.qids) == (mode == "zero")
        for name in ("mrr", "ndcg"):
            np.testing.assert_array_equal(fast.per_query[name], exact.per_query[name])
    assert fast.query("é")["mrr"] == 0.5 and fast.query("𝔸")["mrr"] == 1.0


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
    bad = _write(tmp_path, "bad", "q1 0 a 1 extra\n")
    res = cli(bad, r, "-m", "mrr")
    assert isinstance(res.exception, InputError) and res.exception.line == 1
    res = cli(q, r, "-m", "mrr", "--json", "--trec-format")
    assert res.exit_code != 0 and "choose one" in str(res.exception)
    one = _write(tmp_path, "one", "q1 0 a 1\n")
    res = cli(one, r, "-m", "mrr")
    assert res.exit_code == 0 and ": 1 query;" in " ".join(res.output.split())


# ------------------------------------------------------------------ trec_eval 10.0's reading
# Each case was run through trec_eval 10.0 (usnistgov/trec_eval, built from source) while
# writing these tests; its result is the expected value here.


@pytest.mark.parametrize(
    ("text", "value", "whole"),
    [("1.5", 1.5, True), ("1.5abc", 1.5, False), ("0_5", 0.0, False), ("abc", 0.0, False),
     ("-2e3x", -2000.0, False), ("1e", 1.0, False), (".5", 0.5, True), ("0x1p3", 8.0, True),
     ("0x", 0.0, False), ("inf", float("inf"), True), ("-Infinity", float("-inf"), True),
     ("+3.", 3.0, True), ("0x1p99999", float("inf"), True)],
)
def test_c_strtod(text: str, value: float, whole: bool) -> None:
    assert trec_readers.c_strtod(text) == (value, whole)


@pytest.mark.parametrize("text", ["nan", "-NaN", "nan(0x7)", "nan(abc)x"])
def test_c_strtod_nan_forms_are_nan_and_refused_in_files(tmp_path: Path, text: str) -> None:
    value, _ = trec_readers.c_strtod(text)
    assert value != value  # NaN
    with pytest.raises(InputError, match="score is NaN"):
        read_run(_write(tmp_path, "r", f"q1 Q0 a 1 {text} t\n"))


@pytest.mark.parametrize(
    ("text", "value", "whole"),
    [("1", 1, True), ("1_0", 1, False), ("2.7", 2, False), ("abc", 0, False), ("-1", -1, True),
     ("+3", 3, True), ("99999999999999999999", 99999999999999999999, True)],
)
def test_c_atol(text: str, value: int, whole: bool) -> None:
    assert trec_readers.c_atol(text) == (value, whole)


@pytest.mark.parametrize("exact_only", [False, True])
def test_lenient_reading_matches_trec_eval(tmp_path: Path, monkeypatch, exact_only) -> None:
    if exact_only:
        monkeypatch.setenv("QUERYEVAL_NO_EXT", "1")
        monkeypatch.setattr(trec, "_parse_arrow", lambda path, kind: None)
    # qrels: '#' in column 0 is a comment; 1_0 -> 1, abc -> 0, 2.7 -> 2 (atol).
    q = _write(tmp_path, "q", "# judged by hand\nq1 0 a 1_0\nq1 0 b abc\nq1 0 c 2.7\n")
    # run: comments (also indented), extra columns, 1.5abc -> 1.5, 0_5 -> 0 (strtod).
    r = _write(tmp_path, "r", "# run\n  # more\nq1 Q0 a 1 0_5 t x y\nq1 Q0 b 2 1.5abc t\n"
                              "q1 Q0 c 3 0x1p3 t\n")
    assert read_qrels(q) == {"q1": {"a": 1, "b": 0, "c": 2}}
    assert read_run(r) == {"q1": {"a": 0.0, "b": 1.5, "c": 8.0}}
    # trec_eval 10.0 -m num_rel -m recip_rank -m num_ret: 2, 1.0 (c ranks first), 3
    res = evaluate_files(q, r, ["num_rel", "recip_rank", "num_ret"])
    assert dict(res) == {"num_rel": 2.0, "recip_rank": 1.0, "num_ret": 3.0}


@pytest.mark.parametrize(
    ("kind", "text", "message"),
    [("qrels", "# c\nq1 0 a 1\n", ":1: comment lines are refused"),
     ("run", "q1 Q0 a 1 1.0 t\n  # c\n", ":2: comment lines are refused"),
     ("run", "q1 Q0 a 1 1.0 t extra\n", ":1: expected 6"),
     ("run", "q1 Q0 a 1 1.5abc t\n", "would read 1.5"),
     ("run", "q1 Q0 a 1 0_5 t\n", "would read 0.0"),
     ("qrels", "q1 0 a 1_0\n", "would read 1;"),
     ("qrels", "q1 0 a 2.7\n", "would read 2;")],
)
def test_strict_refuses_the_lenient_rules(tmp_path: Path, kind: str, text: str, message) -> None:
    p = _write(tmp_path, "f", text)
    reader = read_qrels if kind == "qrels" else read_run
    reader(p)  # the default reads it, as trec_eval does
    with pytest.raises(InputError, match=message):
        reader(p, strict=True)


@pytest.mark.parametrize(
    ("kind", "text", "message"),
    # trec_eval 10.0 refuses these too ("Malformed line")
    [("qrels", "q1 0 a 1 x\n", "expected 4"), ("qrels", "  # c\nq1 0 a 1\n", "expected 4"),
     ("run", "q1 Q0 a 1 1.0\n", "expected at least 6")],
)
def test_what_trec_eval_refuses_is_refused(tmp_path: Path, kind: str, text: str, message) -> None:
    reader = read_qrels if kind == "qrels" else read_run
    with pytest.raises(InputError, match=message):
        reader(_write(tmp_path, "f", text))


def test_no_break_space_is_part_of_an_id(tmp_path: Path) -> None:
    """C's isspace does not include U+00A0: trec_eval reads 'a\xa0b' as one docid."""
    r = _write(tmp_path, "r", "q1 Q0 a\xa0b 1 1.0 t\nq1 Q0 c 2 0.5 t\n")
    assert read_run(r) == {"q1": {"a\xa0b": 1.0, "c": 0.5}}


def test_duplicate_line_numbers_count_comment_lines(tmp_path: Path) -> None:
    r = _write(tmp_path, "r", "# c\nq1 Q0 a 1 1.0 t\n# d\nq1 Q0 a 2 0.5 t\n")
    with pytest.raises(InputError, match=r"r:4: .*also on line 2"):
        read_run(r)


def test_cli_trec_format_levels_judged_only_and_strict(tmp_path: Path, cli) -> None:
    q, r = _write(tmp_path, "q", QRELS), _write(tmp_path, "r", RUN)
    res = cli(q, r, "-m", "map", "-m", "num_ret", "-m", "gm_map", "--per-query", "--trec-format")
    assert res.exit_code == 0, res.output
    # Same values as trec_eval 10.0 -c -q -m map -m num_ret -m gm_map (q3 missing scores 0;
    # gm_map = exp(mean(log(max(AP, 1e-5))))); lines in the order the measures were asked for.
    # q1: ranking c, e, b, a -> AP (1/3 + 2/4) / 2; q2: x at 2 -> 1/2; q3: nothing retrieved.
    lines = res.output.splitlines()
    assert lines[:2] == [f"{'map':<22}\tq1\t0.4167", f"{'num_ret':<22}\tq1\t4"]
    assert f"{'num_ret':<22}\tq3\t0" in lines and not any(x.startswith("gm_map ") and "\tq"
                                                          in x for x in lines)
    assert lines[-3:] == [f"{'map':<22}\tall\t0.3056", f"{'num_ret':<22}\tall\t6",
                          f"{'gm_map':<22}\tall\t0.0128"]
    # -l 2: only b (2) is relevant in q1, ranked 3rd -> AP 1/3
    res = cli(q, r, "-m", "map", "-l", "2", "--json", "--per-query")
    assert json.loads(res.output)["per_query"]["q1"]["map"] == pytest.approx(1 / 3)
    # -J: e (unjudged) leaves q1's ranking c, b, a -> AP (1/2 + 2/3) / 2
    res = cli(q, r, "-m", "map", "-J", "--json", "--per-query")
    assert json.loads(res.output)["per_query"]["q1"]["map"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    # -M 2: q1 keeps c, e (b and a fall out) -> AP 0; num_ret 2 + 2 + 0
    res = cli(q, r, "-m", "map", "-m", "num_ret", "-M", "2", "--json", "--per-query")
    out = json.loads(res.output)
    assert out["per_query"]["q1"]["map"] == 0.0 and out["means"]["num_ret"] == 4
    lenient = _write(tmp_path, "r2", "# comment\n" + RUN)
    assert cli(q, lenient, "-m", "map").exit_code == 0
    res = cli(q, lenient, "-m", "map", "--strict")
    assert isinstance(res.exception, InputError) and res.exception.line == 1
