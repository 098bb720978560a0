"""The compiled reader's id table (``_trecread.c``: open addressing, 16-byte slots holding a
name's first 8 bytes, a tag of hash bits and length, and its code; document ids looked up
through a 16-line prefetch pipeline; per-thread tables merged by their stored hashes) against
a plain dict: codes in first-appearance order over the whole file, the same names, whatever
the ids share (8-byte prefixes, trailing NUL bytes, lengths past the tag's 255 cap) and
however many threads split the file.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queryeval.metrics.ranking._columns import names_list
from queryeval.suite import trec

MOD = trec.native_reader()
pytestmark = pytest.mark.skipif(MOD is None,
                                reason="compiled reader not built (or QUERYEVAL_NO_EXT)")


def _oracle(ids: list[str]) -> tuple[list[str], list[int]]:
    """Names in first-appearance order and each row's code, by a dict."""
    index: dict[str, int] = {}
    codes = [index.setdefault(i, len(index)) for i in ids]
    return list(index), codes


def _scan(data: bytes, threads: int, run: bool):
    """(rows, query names, query codes, document names, document codes)."""
    out = MOD.scan(data, threads, run, False)
    assert out is not None
    rows, q_codes, q_offsets, q_data, n_q, d_codes, d_offsets, d_data, n_d, _values = out
    import numpy as np
    import pyarrow as pa

    def names(n, offsets, data):
        return names_list(pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets),
                                                                 pa.py_buffer(data)]))

    return (rows, names(n_q, q_offsets, q_data), np.frombuffer(q_codes, dtype=np.int32).tolist(),
            names(n_d, d_offsets, d_data), np.frombuffer(d_codes, dtype=np.int32).tolist())


def _check(ids: list[str], threads: int, run: bool = True, qids: list[str] | None = None) -> None:
    if qids is None:
        qids = [f"q{k // 50}" for k in range(len(ids))]
    if run:
        data = "".join(f"{q} Q0 {d} 1 0.5 t\n" for q, d in zip(qids, ids, strict=True))
    else:
        data = "".join(f"{q} 0 {d} 1\n" for q, d in zip(qids, ids, strict=True))
    rows, q_names, q_codes, names, codes = _scan(data.encode("utf-8"), threads, run)
    assert rows == len(ids)
    assert (names, codes) == _oracle(ids)
    assert (q_names, q_codes) == _oracle(qids)


#: Pieces that make ids collide in what the table compares: the same first 8 bytes, names
#: that differ only by trailing NUL bytes (equal zero-padded prefixes), control bytes,
#: multibyte characters, and lengths around 8 and past 255 (where the tag's length caps).
_PIECES = ["a", "b", "\x00", "\x01", "\x7f", "é", "€", "12345678", "abcdefgh", "x" * 250]


@st.composite
def _ids(draw):
    pool = draw(st.lists(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6)
                         .map("".join), min_size=1, max_size=40))
    return draw(st.lists(st.sampled_from(pool), min_size=1, max_size=400))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ids=_ids(), threads=st.sampled_from([1, 2, 3]), run=st.booleans())
def test_codes_and_names_equal_a_dict(ids, threads, run) -> None:
    _check(ids, threads, run)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), threads=st.sampled_from([1, 2, 3]), run=st.booleans())
def test_query_codes_equal_a_dict(data, threads, run) -> None:
    """Query ids (looked up only where they change from the previous row, the code then
    taken from that row): grouped, interleaved, and colliding as the document ids do."""
    ids = data.draw(_ids())
    qpool = data.draw(st.lists(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=4)
                               .map("".join), min_size=1, max_size=8))
    runs = data.draw(st.lists(st.tuples(st.sampled_from(qpool), st.integers(1, 60)),
                              min_size=1, max_size=30))
    qids = [q for q, k in runs for _ in range(k)]
    qids = (qids * (len(ids) // len(qids) + 1))[: len(ids)]
    _check(ids, threads, run, qids)


def test_query_ids_that_are_prefixes_of_the_previous_row_s() -> None:
    """A query id that starts the previous row's (or extends it) is another query."""
    qids = ["ab", "a", "abc", "ab", "a\x00", "a", "abcdefghij", "abcdefghi", "abcdefghij"]
    qids = [q for q in qids for _ in range(3)]
    for threads in (1, 2):
        _check([f"d{i % 5}" for i in range(len(qids))], threads, True, qids)
        _check([f"d{i}" for i in range(len(qids))], threads, False, qids)


def test_names_equal_up_to_eight_bytes_then_different() -> None:
    """Pairs the slot alone cannot tell apart (same prefix; a length of 8 or more) are told
    apart by the stored name; pairs differing only in length (trailing NULs) by the tag."""
    ids = ["abcdefgh", "abcdefghi", "abcdefghj", "abcdefgh", "a", "a\x00", "a\x00\x00",
           "a" * 255, "a" * 256, "a" * 300, "a" * 255 + "b", "a" * 256, "a\x00", "abcdefghj"]
    for threads in (1, 2, 3, 5):
        _check(ids * 3, threads)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_two_hundred_thousand_distinct_ids(threads) -> None:
    """The `deep` shape's table size (200,000 distinct ids, grown from 1,024 slots, the
    threads' tables merged): every row's code equals the dict's."""
    rng = random.Random(7)
    vocab = [f"d{i}" for i in range(200_000)] + [f"doc-{i:012d}" for i in range(20_000)]
    ids = vocab + [rng.choice(vocab) for _ in range(180_000)]
    rng.shuffle(ids)
    _check(ids, threads)


@pytest.mark.parametrize("threads", [1, 2])
def test_many_names_that_share_a_slots_prefix(threads) -> None:
    """120,000 ids in groups equal in their zero-padded first 8 bytes (``w``, ``w\\0``,
    ``w\\0\\0``; ``12345678`` + one more character): enough that groups meet on the same
    probe runs of the table, where the slot's prefix alone would merge them."""
    rng = random.Random(11)
    ids = []
    for i in range(20_000):
        w = f"{i:05x}"
        ids += [w, w + "\x00", w + "\x00\x00"]
    for i in range(20_000):
        ids += [f"{i:08d}" + "ab"[i % 2], f"{i:08d}" + "cd"[i % 2], f"{i:08d}" + "\x00"]
    rng.shuffle(ids)
    _check(ids + ids[:1000], threads)
