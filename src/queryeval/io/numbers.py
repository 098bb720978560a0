"""The one reader of numbers in JSON from outside: suites, recorded outputs, run files.

Every figure queryeval computes is a float, so a number no float holds is no number to it:
NaN, ``Infinity``, ``1e999`` and an integer beyond the float range (a 400-digit integer:
``float()`` of it raises ``OverflowError``). :func:`read_json` parses JSON text and finds
the first such number, naming its place (``retrieved_chunks[0].score``); each reader
decides what the place means for its input:

* a suite or a run file: one :class:`~queryeval.errors.InputError` naming file, line and
  field (the CLI prints it and exits 2);
* a recorded output: a ``malformed`` error on its case (the run goes on), as for any output
  the run log cannot store.

The common case is one parse: integers are hooked only when the text holds 309 digits in a
row (one ``translate`` and one substring search tell), and NaN, ``Infinity`` and floats
(``1e999``) only where they are refused (``finite``); a hook raises at the first refused
number, and only then is the text parsed again with hooks that mark each refused number,
to name the first one's place. ``python bench/number_reader.py`` prints the cost against
``json.loads`` on real result lines.
"""

from __future__ import annotations

import functools
import json
import sys
from typing import Any

FLOAT_MAX = sys.float_info.max
_FITS_DIGITS = 308
"""An integer of at most this many digits is below 10**308 < FLOAT_MAX: it fits a float."""


def int_fits(value: int) -> bool:
    """Whether ``float(value)`` is a finite float (no ``OverflowError``)."""
    return -FLOAT_MAX <= value <= FLOAT_MAX


def beyond_float(text: str) -> str:
    """The reason an integer written ``text`` is refused."""
    digits = len(text.lstrip("+-"))
    return f"an integer of {digits} digits is beyond the range of a float (about 1.8e308)"


class NumberError(ValueError):
    """JSON from outside holds a number no float holds. ``field`` is its place
    (``a.b[0]``; empty for the whole value), ``text`` the number as written, ``reason``
    what is wrong with it; ``integer``: whether the number is an integer beyond the float
    range (NaN, Infinity and ``1e999`` are not)."""

    def __init__(self, field: str, text: str, reason: str, *, integer: bool) -> None:
        self.field = field
        self.text = text
        self.reason = reason
        self.integer = integer
        super().__init__(f"{field}: {reason}" if field else reason)


class _Bad:
    """Stands for a refused number while a text is parsed."""

    __slots__ = ("integer", "text")

    def __init__(self, text: str, integer: bool) -> None:
        self.text = text
        self.integer = integer


def _find_bad(value: Any) -> tuple[tuple, _Bad] | None:
    """Where in ``value`` the first :class:`_Bad` lies, in document order (iterative)."""
    stack: list[tuple[Any, tuple]] = [(value, ())]
    while stack:
        item, where = stack.pop()
        if isinstance(item, _Bad):
            return where, item
        if isinstance(item, dict):
            stack.extend((v, (*where, k)) for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend((v, (*where, i)) for i, v in reversed(list(enumerate(item))))
    return None


def loc_text(loc: tuple) -> str:
    """``("a", 0, "b")`` -> ``a[0].b``, control characters escaped (one line, always)."""
    out = ""
    for part in loc:
        text = str(part)
        if not text.isprintable():
            text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + text
    return out


def _replace_bad(value: Any) -> Any:
    """``value`` with every :class:`_Bad` integer replaced by ``±inf``, in place (iterative)."""
    if isinstance(value, _Bad) and value.integer:
        return float("-inf") if value.text.startswith("-") else float("inf")
    stack = [value]
    while stack:
        item = stack.pop()
        pairs = item.items() if isinstance(item, dict) else (
            enumerate(item) if isinstance(item, list) else ())
        for k, v in list(pairs):
            if isinstance(v, _Bad) and v.integer:
                item[k] = float("-inf") if v.text.startswith("-") else float("inf")
            elif isinstance(v, (dict, list)):
                stack.append(v)
    return value


class _Refused(Exception):
    """Raised by the fast path's hooks at the first refused number (the slow path finds it)."""


def _fast_int(word: str) -> int:
    if len(word) <= _FITS_DIGITS:
        return int(word)
    value = int(word)  # ValueError past Python's 4,300-digit limit
    if int_fits(value):
        return value
    raise _Refused


def _fast_float(word: str) -> float:
    value = float(word)
    if value - value == 0:
        return value
    raise _Refused  # 1e999 overflows to inf


def _fast_constant(word: str) -> float:
    raise _Refused


@functools.lru_cache(maxsize=8)
def _decoder(finite: bool, object_pairs_hook: Any, ints: bool) -> json.JSONDecoder:
    """A decoder whose hooks raise :class:`_Refused` at a refused number (built once).
    ``ints``: hook the integers too (only needed when the text holds 309 digits in a row)."""
    hooks: dict[str, Any] = {"object_pairs_hook": object_pairs_hook}
    if ints:
        hooks["parse_int"] = _fast_int
    if finite:
        hooks.update(parse_float=_fast_float, parse_constant=_fast_constant)
    return json.JSONDecoder(**hooks)


_DIGITS = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))  # digit -> "0", else " "
_LONG_RUN = b"0" * (_FITS_DIGITS + 1)


def _long_digit_run(raw: bytes) -> bool:
    """Whether the UTF-8 text ``raw`` holds ``_FITS_DIGITS + 1`` digits in a row (else no
    integer in it can be beyond the float range): one ``translate`` and one substring
    search, both in C (a regular expression for it backtracks through every run of digits)."""
    return _LONG_RUN in raw.translate(_DIGITS)


def _text(data: str | bytes | bytearray) -> tuple[str, bytes]:
    """JSON text as ``json.loads`` decodes it (UTF-8/16/32 detected; a str's BOM refused),
    and the same text in UTF-8."""
    if isinstance(data, str):
        if data.startswith("\ufeff"):
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", data, 0)
        return data, data.encode("utf-8", "surrogatepass")
    raw = bytes(data)
    encoding = json.detect_encoding(raw)
    text = raw.decode(encoding, "surrogatepass")
    return text, (raw if encoding == "utf-8" else text.encode("utf-8", "surrogatepass"))


def read_json(data: str | bytes, *, finite: bool = True, huge: str = "error",
              object_pairs_hook: Any = None) -> Any:
    """``json.loads(data)`` with every number checked.

    ``finite``: NaN, ``Infinity`` and a float beyond the range (``1e999``) raise
    :class:`NumberError`; without it they parse as ``json.loads`` reads them (a recorded
    output: the task and :func:`queryeval.systems.base.checked_output` decide). An integer
    beyond the float range raises :class:`NumberError` (``huge="error"``) or, with
    ``huge="inf"``, is read as ``json.loads`` reads ``1e999``: ``±inf``. Other errors are
    ``json.loads``'s (``ValueError``, ``RecursionError``)."""
    if huge not in ("error", "inf"):
        raise ValueError(f"huge must be 'error' or 'inf', got {huge!r}")
    if type(data) is bytes and len(data) >= 4 and data[0] == 0x7B and data[1]:
        # an object's UTF-8 text (what json.detect_encoding says of a '{' then a non-NUL
        # byte): decoded here, without the detection or a copy
        text, raw = data.decode("utf-8", "surrogatepass"), data
    else:
        text, raw = _text(data)
    try:
        decoder = _decoder(finite, object_pairs_hook, _long_digit_run(raw))
        if text[-1:] == "}" and text[:1] == "{":  # no whitespace around: decode()'s raw_decode
            value, end = decoder.raw_decode(text)
            if end == len(text):
                return value
        return decoder.decode(text)
    except _Refused:
        pass  # parse again, marking every refused number, to name the first one's place
    flagged: list[_Bad] = []

    def mark(word: str, integer: bool) -> _Bad:
        flagged.append(_Bad(word, integer))
        return flagged[-1]

    def number(word: str) -> Any:
        value = float(word)
        return value if value - value == 0 else mark(word, False)

    def integer(word: str) -> Any:
        value = int(word)
        return value if int_fits(value) else mark(word, True)

    hooks: dict[str, Any] = {"parse_int": integer, "object_pairs_hook": object_pairs_hook}
    if finite:
        hooks.update(parse_float=number, parse_constant=lambda word: mark(word, False))
    value = json.JSONDecoder(**hooks).decode(text)
    if huge == "inf":
        value = _replace_bad(value)
        if all(b.integer for b in flagged):
            return value
    found = _find_bad(value)  # the first in document order, not in parsing order
    assert found is not None
    where, bad = found
    reason = beyond_float(bad.text) if bad.integer else f"not a finite number: {bad.text[:40]}"
    raise NumberError(loc_text(where), bad.text[:40], reason, integer=bad.integer)
