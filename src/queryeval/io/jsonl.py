"""JSON Lines with line numbers: every bad line becomes one InputError naming file and line."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from queryeval.errors import InputError
from queryeval.io.numbers import NumberError, read_json


def json_value_error(exc: ValueError) -> str:
    """The message for a ``ValueError`` from ``json.loads`` that is not a JSONDecodeError:
    an integer longer than Python's int/str conversion limit (4,300 digits by default)."""
    text = " ".join(str(exc).split())
    if "digits" in text:
        return f"invalid JSON: a number has more than {sys.get_int_max_str_digits()} digits"
    return f"invalid JSON: {text[:300]}"


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def lone_surrogate(text: str | bytes, value: Any) -> bool:
    """Whether parsed JSON ``value`` holds a lone UTF-16 surrogate (``"\\ud800"``): JSON
    allows the escape, but the text is no Unicode and fails when hashed or written as UTF-8.
    Only an escape in the raw ``text`` can produce one, so clean lines cost one regex scan."""
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    if not _SURROGATE_ESCAPE.search(raw):
        return False
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


LONE_SURROGATE = "invalid JSON: a \\u escape encodes a lone surrogate, which is not a character"


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


duplicate_key_error = _DuplicateKey  # raised by loads_strict: ``.key`` is the key


def _pairs_no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


NON_FINITE = "not a finite number: {text} (NaN and Infinity are not allowed in a suite)"


def loads_strict(text: str | bytes, *, path: Path, line: int | None = None) -> Any:
    """``json.loads`` for a suite: a key written twice in one object, and NaN, Infinity, a
    number too large for a float (``1e999``) or an integer beyond the float range (400
    digits) are one InputError naming the field (:func:`queryeval.io.numbers.read_json`)."""
    try:
        return read_json(text, object_pairs_hook=_pairs_no_duplicates)
    except NumberError as exc:
        reason = exc.reason if exc.integer else NON_FINITE.format(text=exc.text)
        raise InputError(reason, path=path, line=line, field=exc.field or None) from None


def load_json_document(text: str, *, path: Path) -> Any:
    """A whole JSON file's value for a suite reader (:func:`loads_strict`): a duplicate key,
    bad JSON, nesting too deep or a non-finite number is one InputError naming the file."""
    try:
        return loads_strict(text, path=path)
    except _DuplicateKey as exc:
        raise InputError(f"duplicate key {exc.key!r}", path=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    except RecursionError:
        raise InputError("invalid JSON: nesting too deep", path=path) from None
    except ValueError as exc:
        raise InputError(json_value_error(exc), path=path) from None


def parse_json_line(text: str, *, path: Path, line: int, objects_only: bool = True,
                    strict: bool = False) -> Any:
    """One JSONL line's value; every way it can be bad is one InputError naming the line.
    ``strict`` (suites): duplicate keys and non-finite numbers are errors too
    (:func:`loads_strict`); without it (recorded responses) they parse as ``json`` does,
    and an integer beyond the float range as ``json`` reads ``1e999``: ``±inf``, which makes
    the output ``malformed`` on its case (:func:`queryeval.io.numbers.read_json`)."""
    try:
        value = (loads_strict(text, path=path, line=line) if strict
                 else read_json(text, finite=False, huge="inf"))
    except _DuplicateKey as exc:
        raise InputError(f"duplicate key {exc.key!r}", path=path, line=line) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=line) from None
    except RecursionError:
        raise InputError("invalid JSON: nesting too deep", path=path, line=line) from None
    except ValueError as exc:
        raise InputError(json_value_error(exc), path=path, line=line) from None
    if lone_surrogate(text, value):
        raise InputError(LONE_SURROGATE, path=path, line=line)
    if objects_only and not isinstance(value, dict):
        raise InputError(f"expected a JSON object, got {type(value).__name__}", path=path, line=line)
    return value


def iter_jsonl(path: str | Path, *, objects_only: bool = True, kind: str = "suite-lines",
               strict: bool = False) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for every non-blank line (1-based line numbers).

    Streams the file: memory stays flat however long it is. A UTF-8 BOM on the first line
    is accepted; invalid UTF-8, invalid JSON, or (with ``objects_only``) a value that is not
    a JSON object raise :class:`InputError`. ``kind`` picks the size limit
    (:data:`queryeval.io.files.SIZE_LIMITS`); ``strict`` is :func:`parse_json_line`'s.
    """
    for lineno, _offset, _size, value in iter_jsonl_spans(path, objects_only=objects_only,
                                                          kind=kind, strict=strict):
        yield lineno, value


def iter_jsonl_spans(path: str | Path, *, objects_only: bool = True, kind: str = "responses",
                     strict: bool = False) -> Iterator[tuple[int, int, int, Any]]:
    """Like :func:`iter_jsonl`, with where each line lies in the file: yields
    ``(line_number, byte_offset, byte_length, value)``; :func:`read_json_span` reads one
    line back from its offset and length (an index of a file instead of its parsed lines)."""
    from queryeval.io.files import ICONV_HINT, encoding_of, open_input

    path = Path(path)
    fh = open_input(path, kind)
    offset = 0
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            start, offset = offset, offset + len(raw)
            if lineno == 1:
                if encoding_of(raw[:4]).startswith("utf-") and encoding_of(raw[:4]) != "utf-8-sig":
                    raise InputError(f"file is {encoding_of(raw[:4]).upper()} (it starts with "
                                     "that byte-order mark); JSON Lines must be UTF-8: convert "
                                     "it, e.g. iconv -f utf-16 -t utf-8 FILE > FILE.utf8",
                                     path=path, line=1)
                if raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]
                    start += 3
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"line is not valid UTF-8: byte 0x{raw[exc.start]:02x} at "
                                 f"offset {start + exc.start}; {ICONV_HINT}",
                                 path=path, line=lineno) from None
            yield lineno, start, len(raw), parse_json_line(text, path=path, line=lineno,
                                                           objects_only=objects_only,
                                                           strict=strict)


def read_span(fd: int, offset: int, size: int) -> bytes:
    """``size`` bytes at ``offset`` of an open file descriptor (``os.pread``: no shared file
    position, so threads may read one descriptor at once); OSError if fewer are there."""
    data = os.pread(fd, size, offset)
    if len(data) != size:
        raise OSError(f"file changed: {size} bytes expected at offset {offset}, got {len(data)}")
    return data


def read_json_span(fd: int, offset: int, size: int, *, huge: str = "inf") -> Any:
    """The JSON value of :func:`read_span`'s bytes. Numbers are read as in a recorded output
    (:func:`parse_json_line`); with ``huge="error"`` an integer beyond the float range raises
    :class:`~queryeval.io.numbers.NumberError` naming it."""
    return read_json(read_span(fd, offset, size), finite=False, huge=huge)


def iter_csv(path: str | Path, *, kind: str = "data") -> Iterator[tuple[int, list[str]]]:
    """``(line, cells)`` for every CSV row, header included (the line is where the row starts;
    a quoted cell may span lines). A UTF-8/UTF-16 BOM is honoured; decoding and CSV errors
    become one InputError naming the line (:func:`queryeval.io.files.encoding_error`)."""
    import csv

    from queryeval.io.files import encoding_error, open_text

    path = Path(path)
    fh = open_text(path, kind)
    with fh:
        reader = csv.reader(fh)
        start = 1
        try:
            for row in reader:
                yield start, row
                start = reader.line_num + 1
        except csv.Error as exc:
            raise InputError(f"invalid CSV: {exc}", path=path, line=reader.line_num or start) from None
        except UnicodeDecodeError as exc:
            raise encoding_error(path, encoding=exc.encoding) from None


def iter_records(path: str | Path) -> Iterator[tuple[int, dict]]:
    """``(line, record)`` from a JSONL file, or from a CSV file (header row = keys; missing
    trailing cells are None; the line is where the record starts)."""
    path = Path(path)
    if path.suffix.lower() != ".csv":
        yield from iter_jsonl(path, kind="responses")
        return
    header: list[str] | None = None
    for line, row in iter_csv(path, kind="responses"):
        if header is None:
            header = row
            continue
        if not row:  # a blank line, as csv.DictReader skips it
            continue
        if len(row) > len(header):
            raise InputError("more fields than the header", path=path, line=line)
        yield line, dict(zip(header, [*row, *[None] * (len(header) - len(row))], strict=True))
