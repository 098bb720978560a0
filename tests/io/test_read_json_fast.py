"""``read_json`` reads what ``json.loads`` reads, and refuses what it refuses, on the path
that skips the encoding detection and ``decode``'s whitespace scan (an object's UTF-8 bytes
or text with nothing around it) as on the others: random JSON values, written compactly or
with whitespace around, with bytes appended, cut short, or in UTF-16/32 and with a BOM."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.io.numbers import read_json

_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12)


def _outcome(fn, data):
    try:
        return ("ok", fn(data))
    except json.JSONDecodeError as exc:  # the same error at the same place
        return ("error", exc.msg, exc.pos)
    except (ValueError, RecursionError) as exc:
        return ("error", type(exc).__name__)


def _same(data) -> None:
    assert _outcome(lambda d: read_json(d, finite=False), data) == _outcome(json.loads, data)


@settings(max_examples=300, deadline=None)
@given(_values, st.sampled_from(["", " ", "\n", "\t "]), st.sampled_from(["", " ", "\n", "x", "}", " {}"]),
       st.integers(0, 3), st.booleans())
def test_read_json_reads_as_json_loads(value, before, after, cut, as_bytes):
    text = before + json.dumps({"v": value}, ensure_ascii=bool(cut % 2)) + after
    if cut == 3:
        text = text[:max(0, len(text) // 2)]
    _same(text.encode("utf-8", "surrogatepass") if as_bytes else text)


@settings(max_examples=100, deadline=None)
@given(_values, st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32-be"]))
def test_read_json_decodes_bytes_as_json_loads(value, encoding):
    text = json.dumps({"v": value}, ensure_ascii=False)
    try:
        data = text.encode(encoding)
    except UnicodeEncodeError:  # a lone surrogate has no UTF-16/32 form
        return
    _same(data)


def test_short_and_odd_texts():
    for data in ("", "{", "}", "{}", " {}", "{} ", "{}}", '{"a":1}x', b"", b"{}", b"{\x00\x00\x00",
                 b'{"a": "\xff"}', b"\xef\xbb\xbf{}", "\ufeff{}", "[1]", b"[1]", "1", b"12"):
        _same(data)
