"""The compiled reader's line splitter (``_trecread_scan.c``: a line of under 64 bytes is split
at once from 64-bit masks of its separators and newline; longer lines, lines near the end of
a thread's chunk and comment lines go through the byte scanner) against the exact reader: the
same ids, codes and values, or a refusal exactly where the exact reader raises. Lines are
built around the 64-byte window (lengths 55-75), with every separator trec_eval accepts
(space, tab, \\v, \\f, \\r, CRLF), control bytes and multibyte characters inside fields, ids
longer than the window, blank and comment lines, too few or too many fields, a byte that is
not UTF-8, and a last line without its newline; read with 1, 2 and 3 threads.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queryeval.errors import InputError
from queryeval.metrics.ranking._columns import names_list
from queryeval.suite import trec

pytestmark = pytest.mark.skipif(trec.native_reader() is None,
                                reason="compiled reader not built (or QUERYEVAL_NO_EXT)")

_SEPS = [b" ", b"\t", b"  ", b" \t", b"\v", b"\f", b"\r", b" \r"]
_ID_PIECES = [b"q", b"d", b"7", b"x" * 9, b"\x01", b"\x1f", b"\x7f", "é".encode(),
              "€".encode(), b"#", b"y" * 70]
_SCORES = [b"0.5", b"1", b"-2.25", b"0.8133239779165891", b"1e-05", b"3.", b".5", b"7e3",
           b"0x1p-3", b"inf", b"-Infinity", b"12abc", b"", b"+0.000123456789012345678"]


@st.composite
def _field(draw, pieces) -> bytes:
    return b"".join(draw(st.lists(st.sampled_from(pieces), min_size=1, max_size=4)))


@st.composite
def _line(draw, run: bool) -> bytes:
    kind = draw(st.sampled_from(["row"] * 8 + ["blank", "comment", "short", "long"]))
    if kind == "blank":
        return draw(st.sampled_from([b"", b" ", b"\t\r", b" " * 70]))
    if kind == "comment":
        return draw(st.sampled_from([b"", b"  ", b"\t"])) + b"# note " + b"z" * draw(
            st.integers(0, 70))
    q = draw(_field(_ID_PIECES))
    d = draw(_field(_ID_PIECES))
    if run:
        fields = [q, b"Q0", d, b"1", draw(st.sampled_from(_SCORES)) or b"0", b"tag"]
    else:
        fields = [q, b"0", d, draw(st.sampled_from([b"1", b"0", b"-3", b"2x", b"+4"]))]
    if kind == "short":
        fields = fields[: draw(st.integers(1, len(fields) - 1))]
    elif kind == "long":
        fields += [b"extra"] * draw(st.integers(1, 3))
    # pad an id so the line lands around the 64-byte window
    pad = draw(st.integers(0, 40))
    at = min(2, len(fields) - 1)
    fields[at] = fields[at] + b"p" * pad
    seps = [draw(st.sampled_from(_SEPS)) for _ in range(len(fields) + 1)]
    lead = seps[0] if draw(st.booleans()) else b""
    trail = seps[-1] if draw(st.booleans()) else b""
    return lead + b"".join(f + s for f, s in zip(fields, seps[1:-1] + [b""], strict=True)) + trail


@st.composite
def _file(draw, run: bool) -> bytes:
    lines = draw(st.lists(_line(run), min_size=0, max_size=40))
    end = draw(st.sampled_from([b"\n", b"\r\n"]))
    data = end.join(lines)
    if lines and draw(st.booleans()):
        data += end  # else: the last line has no newline
    if draw(st.integers(0, 9)) == 0 and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + b"\xff" + data[at:]
    return data


def _exact(path, kind: str):
    try:
        return trec._parse_python(path, kind)
    except InputError:
        return None


def _same(got, want) -> None:
    assert names_list(got.names_q) == names_list(want.names_q)
    assert names_list(got.names_doc) == names_list(want.names_doc)
    assert got.q.tolist() == list(want.q)
    assert got.doc.tolist() == list(want.doc)
    assert got.value.tolist() == list(want.value)


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data(), run=st.booleans(), threads=st.sampled_from([1, 2, 3]))
def test_lines_around_the_window_read_as_the_exact_reader(tmp_path, data, run, threads) -> None:
    text = data.draw(_file(run))
    kind = "run" if run else "qrels"
    path = tmp_path / f"{kind}.txt"
    path.write_bytes(text)
    want = _exact(path, kind)
    got = trec._parse_native(path, kind, threads=threads)
    if want is None:
        assert got is None
    else:
        assert got is not None
        _same(got, want)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("width", list(range(56, 72)))
def test_every_line_length_at_the_window_edge(tmp_path, threads, width) -> None:
    """Lines of 56-71 bytes (the newline at, before and past the 64th byte), many of them,
    so every offset in the file holds a line start."""
    lines = []
    for i in range(400):
        head = b"q%d Q0 " % (i // 9)
        tail = b" %d %r t" % (i, 1 / (i + 3))
        doc = b"d" * max(1, width - len(head) - len(tail) - (i % 5)) + b"%d" % (i % 13)
        lines.append(head + doc + tail)
    path = tmp_path / "run.txt"
    path.write_bytes(b"\n".join(lines))  # no newline after the last line
    want = trec._parse_python(path, "run")
    got = trec._parse_native(path, "run", threads=threads)
    assert got is not None
    _same(got, want)


@pytest.mark.parametrize("threads", [2, 3, 5, 8])
def test_lines_longer_than_a_threads_region(tmp_path, threads) -> None:
    """The file read by each thread its own region, the newlines counted per region: parts
    whose boundaries fall several regions on (one line longer than a region), blank lines,
    CRLF, and a last line without its newline."""
    lines = [b"q1 Q0 d%d 1 0.%d t" % (i, i) for i in range(5)]
    lines.append(b"q1 Q0 " + b"L" * 900 + b" 9 0.25 t\r")
    lines += [b"", b"  \t", b"q2 Q0 d1 1 1e-3 t\r"] * 3
    lines.append(b"q3 Q0 " + "é".encode() * 400 + b" 1 -2 t")
    path = tmp_path / "run.txt"
    path.write_bytes(b"\n".join(lines))
    want = trec._parse_python(path, "run")
    got = trec._parse_native(path, "run", threads=threads)
    assert got is not None
    _same(got, want)
