"""The compiled dict flattener (``queryeval/_dictflat.c``) against the Python builder.

``arrays_from_dicts`` takes the compiled path for plain input (exact dicts, str keys, float/int/
bool values) and leaves everything else to the Python builder. Held here: on random dicts
(unicode ids with lone surrogates, every kind of score and relevance, empty queries, queries
only in the run or only in the qrels) both give the same arrays or the same error; hostile
subclasses run no Python code inside the C walk and are decided by the Python builder;
references are not leaked.
"""

from __future__ import annotations

import os
import sys
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.metrics.ranking import arrays_from_dicts, evaluate
from queryeval.metrics.ranking._arrays import _native_flatten

try:
    from queryeval import _dictflat
except ImportError:  # the build fell back: test_flattener_is_built_in_this_install says so
    _dictflat = None

pytestmark = pytest.mark.skipif(
    os.environ.get("QUERYEVAL_NO_EXT", "") not in ("", "0"),
    reason="QUERYEVAL_NO_EXT set: the compiled flattener is switched off",
)


def test_flattener_is_built_in_this_install():
    """CI installs with ``pip install -e .`` (a compiler is there): a silent fallback to the
    Python builder (``optional=True`` in setup.py) shows up here."""
    assert _dictflat is not None and hasattr(_dictflat, "flatten")


def _pure(qrels, run, mode):
    with mock.patch.dict(os.environ, {"QUERYEVAL_NO_EXT": "1"}):
        return _outcome(qrels, run, mode)


def _outcome(qrels, run, mode):
    """Everything the engine reads from the arrays, or the error (type, message)."""
    try:
        a = arrays_from_dicts(qrels, run, mode)
    except Exception as exc:  # noqa: BLE001 - the differential compares any error
        return ("error", type(exc), str(exc))
    n, r = int(a.seg_len.sum()), len(a.judged_q)
    return (
        "ok",
        list(a.qids),
        a.n_missing,
        a.seg_start.tolist(),
        a.seg_len.tolist(),
        _floats(a.scores),
        a.judged_q.tolist(),
        _floats(a.judged_gain),
        _floats(a.judged_score),
        list(a.judged_docid[np.arange(r)]),
        list(a.docids_at(np.arange(n))),
    )


def _floats(x: np.ndarray) -> list:
    """Exact float values: NaN as a marker, -0.0 kept apart from 0.0."""
    assert x.dtype == np.float64
    return [("nan",) if v != v else (v, np.signbit(v)) for v in x.tolist()]


class OddFloat(float):
    """A float subclass whose ``__float__`` lies."""

    def __float__(self) -> float:
        return 42.0


ids = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=3)
small_ids = st.sampled_from(["a", "b", "é", "\ud800", "😀", "q1", ""])
plain_scores = st.one_of(
    st.floats(allow_nan=False), st.integers(-(2**70), 2**70), st.booleans(),
)
odd_scores = st.one_of(
    st.floats(),  # NaN, inf
    st.integers(-(2**1100), 2**1100),  # past a double's range
    st.builds(np.float64, st.floats()),
    st.builds(np.float32, st.floats(width=32)),
    st.builds(np.int64, st.integers(-(2**63), 2**63 - 1)),
    st.builds(OddFloat, st.floats(allow_nan=False)),
    st.sampled_from(["1.5", None, "x", b"1"]),
)
plain_rels = st.one_of(st.integers(-3, 5), st.booleans(), st.sampled_from([2.0, -1.0, 0.0, -0.0]))
odd_rels = st.one_of(
    st.floats(),
    st.integers(-(2**70), 2**70),
    st.builds(np.int64, st.integers(-5, 5)),
    st.builds(np.float64, st.sampled_from([1.0, 1.5])),
    st.sampled_from([None, "1", 9.3e18, -9.3e18, 2.0**63, -(2.0**63)]),
)


def _tables(key, value):
    return st.dictionaries(key, st.dictionaries(key, value, max_size=5), max_size=5)


@settings(max_examples=300, deadline=None)
@given(
    qrels=st.one_of(_tables(small_ids, plain_rels),
                    _tables(small_ids, st.one_of(plain_rels, st.floats())),  # 0.5, NaN, inf
                    _tables(ids, st.one_of(plain_rels, odd_rels))),
    run=st.one_of(_tables(small_ids, plain_scores),
                  _tables(small_ids, st.one_of(plain_scores, st.floats())),  # NaN
                  _tables(ids, st.one_of(plain_scores, odd_scores))),
    mode=st.sampled_from(["zero", "skip"]),
)
def test_compiled_and_python_builders_agree(qrels, run, mode):
    native = _outcome(qrels, run, mode)
    assert native == _pure(qrels, run, mode)


@settings(max_examples=100, deadline=None)
@given(qrels=_tables(small_ids, plain_rels), run=_tables(small_ids, plain_scores),
       mode=st.sampled_from(["zero", "skip"]))
def test_plain_input_takes_the_compiled_path(qrels, run, mode):
    """Plain dicts without NaN are flattened in C (the differential above is not vacuous)."""
    assert _native_flatten(qrels, run, mode) is not None
    assert _outcome(qrels, run, mode) == _pure(qrels, run, mode)


def test_hand_computed_arrays():
    qrels = {"q2": {"a": 1, "b": 0}, "q1": {"c": 2}, "q3": {}, "q4": {"x": True}}
    run = {"q1": {"c": 0.5, "d": 3}, "q2": {"b": -1.0, "z": 7.0}, "qx": {"m": 1.0}}
    out = _native_flatten(qrels, run, "zero")
    assert out is not None
    qids, segs, judgements, seg_len, scores, j_len, gains, j_score, n_missing = out
    assert qids == ["q1", "q2", "q4"]  # q3: empty judgements, not judged; qx: not judged
    assert n_missing == 1  # q4
    assert segs[0] is run["q1"] and segs[2] == {} and judgements[1] is qrels["q2"]
    assert seg_len.tolist() == [2, 2, 0] and j_len.tolist() == [1, 2, 1]
    assert scores.tolist() == [0.5, 3.0, -1.0, 7.0]
    assert gains.tolist() == [2.0, 1.0, 0.0, 1.0]
    assert np.isnan(j_score[[1, 3]]).all() and j_score[[0, 2]].tolist() == [0.5, -1.0]
    skip = _native_flatten(qrels, run, "skip")
    assert skip[0] == ["q1", "q2"] and skip[-1] == 1
    res = evaluate(qrels, run, ["num_rel_ret", "ndcg"], missing_query="skip")
    assert res["num_rel_ret"] == 1.0  # q1: c; q2: a is not retrieved, b is not relevant


@pytest.mark.parametrize(
    "qrels, run",
    [
        ({"q": {"d": 1}}, {"q": {"d": float("nan")}}),  # NaN score: the Python message
        ({"q": {"d": 1.5}}, {"q": {"d": 1.0}}),  # non-integral relevance
        ({"q": {"d": float("inf")}}, {"q": {"d": 1.0}}),
        ({"q": {"d": 2.0**63}}, {"q": {"d": 1.0}}),  # outside int64
        ({"q": {"d": 1}}, {"q": {"d": 10**400}}),  # int past a double
        ({"q": {"d": 1}}, {"q": {"d": OddFloat(1.0)}}),
        ({"q": {"d": 1}}, {"q": {"d": np.float64(1.0)}}),
        ({"q": {"d": 1}}, {"q": {"d": "1.0"}}),
        ({"q": {"d": 1}}, {"q": None}),  # the Python builder reads None as empty
        ({"q": {"d": 1}}, {"q": {3: 1.0}}),  # non-str docid
        ({"q": {"d": 1}}, {3: {"d": 1.0}}),  # non-str query id
        ({"q": {"d": None}}, {"q": {"d": 1.0}}),
        ({"q": [("d", 1)]}, {"q": {"d": 1.0}}),
    ],
)
def test_not_plain_input_is_left_to_the_python_builder(qrels, run):
    assert _dictflat.flatten(qrels, run, False) is None
    assert _outcome(qrels, run, "zero") == _pure(qrels, run, "zero")


@pytest.mark.parametrize("rel", [2.0**63, -(2.0**63) * 2, 10**19])
def test_relevance_outside_int64_is_refused(rel):
    """Both builders refuse it (the cast to int64 used to give an arbitrary gain silently)."""
    with pytest.raises(ValueError, match=r"relevance must be an integer, got .* document 'd'"):
        arrays_from_dicts({"q": {"d": rel}}, {"q": {"d": 1.0}})


def test_relevance_at_int64_bounds_is_kept():
    a = arrays_from_dicts({"q": {"d": -(2**63), "e": 2**62}}, {"q": {"d": 1.0}})
    assert a.judged_gain.tolist() == [-(2.0**63), 2.0**62]


def test_nan_score_error_names_query_and_document():
    with pytest.raises(ValueError, match=r"NaN for query 'q', document 'd'"):
        arrays_from_dicts({"q": {"d": 1}}, {"q": {"d": float("nan")}})


class _Spy(str):
    """A str subclass counting every __hash__/__eq__ call, and mutating a dict on each."""

    calls = 0
    victim: dict = {}

    def __hash__(self) -> int:
        type(self).calls += 1
        type(self).victim.clear()
        return str.__hash__(self)

    def __eq__(self, other) -> bool:
        type(self).calls += 1
        type(self).victim.clear()
        return str.__eq__(self, other)


@pytest.mark.parametrize("where", ["query", "run doc", "qrels doc"])
def test_hostile_keys_run_no_python_code_in_the_walk(where):
    """A key whose __hash__/__eq__ mutates the dicts is never hashed or compared in C: the
    walk sees a non-exact str and hands the input to the Python builder."""
    seg = {"d": 1.0, "e": 2.0}
    judg = {"d": 1}
    if where == "run doc":
        seg[_Spy("x")] = 0.5
    if where == "qrels doc":
        judg[_Spy("x")] = 1
    qrels, run = {"q": judg}, {"q": seg}
    if where == "query":
        run[_Spy("q2")] = {"d": 1.0}
    _Spy.victim = seg
    _Spy.calls = 0
    assert _dictflat.flatten(qrels, run, False) is None
    assert _Spy.calls == 0 and len(seg) >= 2


def test_references_are_not_leaked():
    seg, judg = {"d": 1.0, "e": 2.5}, {"d": 1, "f": 0}
    qrels, run = {"q": judg, "r": {"d": 2}}, {"q": seg}
    before = [sys.getrefcount(x) for x in (seg, judg, qrels, run, "q")]
    for _ in range(100):
        out = _dictflat.flatten(qrels, run, False)
        assert out is not None
        del out
        assert _dictflat.flatten({"q": {"d": OddFloat(1.0)}}, run, False) is None
        assert _dictflat.flatten(qrels, {"q": {"d": float("nan")}}, True) is None
    assert [sys.getrefcount(x) for x in (seg, judg, qrels, run, "q")] == before


def test_arrays_do_not_alias_the_dicts():
    """The columns are copies: changing the dicts afterwards changes nothing."""
    run = {"q": {"d": 1.0, "e": 0.5}}
    a = arrays_from_dicts({"q": {"d": 1}}, run)
    run["q"]["d"] = -5.0
    assert a.scores.tolist() == [1.0, 0.5] and a.judged_score.tolist() == [1.0]
    a.scores[0] = 3.0  # writable like the Python builder's arrays


def test_no_ext_switches_the_compiled_path_off(monkeypatch):
    monkeypatch.setenv("QUERYEVAL_NO_EXT", "1")
    assert _native_flatten({"q": {"d": 1}}, {"q": {"d": 1.0}}, "zero") is None
