"""JSON Lines with line numbers: every bad line becomes one InputError naming file and line."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from queryeval.errors import InputError


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


def parse_json_line(text: str, *, path: Path, line: int, objects_only: bool = True) -> Any:
    """One JSONL line's value; every way it can be bad is one InputError naming the line."""
    try:
        value = json.loads(text)
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


def iter_jsonl(path: str | Path, *, objects_only: bool = True) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for every non-blank line (1-based line numbers).

    Streams the file: memory stays flat however long it is. A UTF-8 BOM on the first line
    is accepted; invalid UTF-8, invalid JSON, or (with ``objects_only``) a value that is not
    a JSON object raise :class:`InputError`.
    """
    for lineno, _offset, _size, value in iter_jsonl_spans(path, objects_only=objects_only):
        yield lineno, value


def iter_jsonl_spans(path: str | Path, *, objects_only: bool = True) -> Iterator[tuple[int, int, int, Any]]:
    """Like :func:`iter_jsonl`, with where each line lies in the file: yields
    ``(line_number, byte_offset, byte_length, value)``; :func:`read_json_span` reads one
    line back from its offset and length (an index of a file instead of its parsed lines)."""
    path = Path(path)
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path=path) from None
    offset = 0
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            start, offset = offset, offset + len(raw)
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
                start += 3
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError("line is not valid UTF-8", path=path, line=lineno) from None
            yield lineno, start, len(raw), parse_json_line(text, path=path, line=lineno,
                                                           objects_only=objects_only)


def read_json_span(fd: int, offset: int, size: int) -> Any:
    """The JSON value of ``size`` bytes at ``offset`` of an open file descriptor (``os.pread``:
    no shared file position, so threads may read one descriptor at once)."""
    import os

    data = os.pread(fd, size, offset)
    if len(data) != size:
        raise OSError(f"file changed: {size} bytes expected at offset {offset}, got {len(data)}")
    return json.loads(data)


def iter_csv(path: str | Path) -> Iterator[tuple[int, list[str]]]:
    """``(line, cells)`` for every CSV row, header included (the line is where the row starts;
    a quoted cell may span lines). A BOM is accepted; decoding and CSV errors become one
    InputError naming the line."""
    import csv

    path = Path(path)
    try:
        fh = path.open(encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path=path) from None
    with fh:
        reader = csv.reader(fh)
        start = 1
        try:
            for row in reader:
                yield start, row
                start = reader.line_num + 1
        except csv.Error as exc:
            raise InputError(f"invalid CSV: {exc}", path=path, line=reader.line_num or start) from None
        except UnicodeDecodeError:
            raise InputError("file is not valid UTF-8", path=path, line=start) from None


def iter_records(path: str | Path) -> Iterator[tuple[int, dict]]:
    """``(line, record)`` from a JSONL file, or from a CSV file (header row = keys; missing
    trailing cells are None; the line is where the record starts)."""
    path = Path(path)
    if path.suffix.lower() != ".csv":
        yield from iter_jsonl(path)
        return
    header: list[str] | None = None
    for line, row in iter_csv(path):
        if header is None:
            header = row
            continue
        if not row:  # a blank line, as csv.DictReader skips it
            continue
        if len(row) > len(header):
            raise InputError("more fields than the header", path=path, line=line)
        yield line, dict(zip(header, [*row, *[None] * (len(header) - len(row))], strict=True))
