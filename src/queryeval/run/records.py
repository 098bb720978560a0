"""The records of a results JSONL as a stream in run order, without holding them.

A first pass over the file keeps, per line, where it lies (offset and length), its rank in
the run's order and a 128-bit key of its case id: about 50 bytes a line, against a kilobyte
or more for the parsed record. Duplicates (a case recorded again) keep the last line, at the
position of the case in the run's order. Each iteration of :class:`RecordStream` then reads
the kept lines in that order (sequentially when the file is already in order, as it is for a
run that was not resumed out of order) and parses one record at a time.

The case id is read from the start of a line our writer produced (``{"case_id": "..."``)
without parsing the rest; any other line is parsed whole. A line that is not valid JSON is
reported with its line number when it is read, and so is an integer beyond the float range
(400 digits: :mod:`queryeval.io.numbers`), naming its field: the run cannot be read, in one
line (exit 2), instead of a traceback in a report. (NaN and ``Infinity``, which our writer
never writes either, are read as ``json`` reads them, as before: no report fails on them.)
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from json.decoder import scanstring  # type: ignore[attr-defined]
from pathlib import Path

import numpy as np

from queryeval.errors import InputError
from queryeval.io.files import open_input
from queryeval.io.idindex import IdIndex, KeyBuilder
from queryeval.io.numbers import NumberError, read_json

_PREFIX = b'{"case_id": "'
_UNRANKED = np.iinfo(np.int64).max


def _line_number(path: Path, offset: int) -> int:
    """1-based number of the line starting at ``offset`` (error path only: reads the file)."""
    count = 1
    with path.open("rb") as fh:
        remaining = offset
        while remaining > 0:
            chunk = fh.read(min(remaining, 1 << 20))
            if not chunk:
                break
            count += chunk.count(b"\n")
            remaining -= len(chunk)
    return count


_REPEAT = ', "repeat": '


def attempt_key(case_id: str, repeat: int | None) -> str:
    """The key of one record: the case id, or for a run with repeats (a ``repeat`` field in
    the record) the case id and the repeat index, so each (case, repeat) is kept once."""
    return case_id if repeat is None else f"{case_id}\x00#{repeat}"


def _repeat_of(text: str, end: int) -> int | None:
    """The ``repeat`` index our writer puts right after the case id, if there is one."""
    if not text.startswith(_REPEAT, end):
        return None
    start = end + len(_REPEAT)
    stop = start
    while stop < len(text) and text[stop].isdigit():
        stop += 1
    return int(text[start:stop]) if stop > start else None


def _case_id(line: bytes, path: Path, lineno: int) -> str:
    if line.startswith(_PREFIX):
        try:
            text = line.decode("utf-8")
            value, end = scanstring(text, len(_PREFIX))
            return attempt_key(value, _repeat_of(text, end))
        except (ValueError, UnicodeDecodeError):
            pass  # parse the whole line below, for its precise error
    rec = _parse(line, path, lineno)
    repeat = rec.get("repeat")
    return attempt_key(str(rec["case_id"]), repeat if type(repeat) is int else None)


def _parse(line: bytes, path: Path, lineno: int) -> dict:
    try:
        rec = read_json(line, finite=False)
    except NumberError as exc:  # an integer of 400 digits
        raise InputError(f"corrupt result line: {exc.reason}", path=path, line=lineno,
                         field=exc.field or None) from None
    except (ValueError, RecursionError):  # bad JSON or UTF-8, huge numbers, depth
        raise InputError("corrupt result line", path=path, line=lineno) from None
    if not isinstance(rec, dict) or "case_id" not in rec:
        raise InputError("corrupt result line: not an object with a case_id", path=path, line=lineno)
    return rec


class RecordStream:
    """Re-iterable, ordered records of one results file (see the module docstring)."""

    def __init__(self, path: Path, offsets: np.ndarray, sizes: np.ndarray, ids: IdIndex | None) -> None:
        self.path = path
        self.offsets = offsets
        self.sizes = sizes
        self.ids = ids
        """The case ids of the kept records (``case_id in stream.ids``), when scanned
        ``with_ids``."""

    def __len__(self) -> int:
        return len(self.offsets)

    def __bool__(self) -> bool:
        return len(self.offsets) > 0

    def _spans(self, chunk: int = 65_536) -> Iterator[tuple[int, int]]:
        """(offset, size) pairs, converted to Python ints a chunk at a time (a million at
        once would be two lists of a million ints: 70 MB)."""
        for start in range(0, len(self.offsets), chunk):
            yield from zip(self.offsets[start:start + chunk].tolist(),
                           self.sizes[start:start + chunk].tolist(), strict=True)

    def __iter__(self) -> Iterator[dict]:
        if not len(self.offsets):
            return
        with open_input(self.path, "results", buffering=1 << 20) as fh:  # never a FIFO
            for offset, size in self._spans():
                fh.seek(offset)  # within the buffer when in order: no system call
                line = fh.read(size)
                try:
                    rec = read_json(line, finite=False)
                except (ValueError, RecursionError):  # NumberError too
                    rec = None
                if not isinstance(rec, dict):  # raises, naming the line (counted only now)
                    _parse(line, self.path, _line_number(self.path, offset))
                yield rec


def csv_order(path: Path) -> IdIndex | None:
    """The case order of a finished run, read from its ``results_<id>.csv`` (suite order,
    as ``finish`` wrote it): each case id of the first column -> its rank (a case's several
    rows share the rank of its first). ``None`` when the file is missing or unreadable."""
    import csv

    from queryeval.io.safetext import csv_uncell

    keys = KeyBuilder()
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            previous = None
            for i, row in enumerate(csv.reader(fh)):
                if i == 0 or not row or row[0] == previous:
                    continue
                previous = row[0]
                keys.add(csv_uncell(row[0]), len(keys))  # the id log.write_csv escaped
    except (OSError, csv.Error, UnicodeDecodeError):
        return None
    return keys.build()


def scan_records(path: Path, order: IdIndex | Sequence[str] | None = None, *,
                 repair: bool = False, with_ids: bool = False, in_order: bool = False) -> RecordStream:
    """Index the results file at ``path``. ``order`` gives each case id its rank (ids not in
    it come last, in file order); without it the file's order is kept. A final line cut short
    by a crash is left out and, with ``repair``, cut from the file. ``with_ids`` keeps the
    kept records' case ids (:attr:`RecordStream.ids`, 20 bytes a record) for a resume.
    ``in_order``: the file holds each case once, in run order (one this run has just written
    so): no case id is read and the lines are taken as they are."""
    if order is not None and not isinstance(order, IdIndex):
        order = IdIndex.from_ids(order)
    offsets, sizes = array("q"), array("q")
    keys = KeyBuilder()
    read_ids = not in_order or with_ids
    good_end = 0
    total = 0
    if path.exists():
        with open_input(path, "results", buffering=1 << 20) as fh:  # a regular file, never a FIFO
            pos = 0
            for lineno, line in enumerate(fh, start=1):
                start, pos = pos, pos + len(line)
                if not line.endswith(b"\n"):  # the line being written when the run died
                    break
                good_end = pos
                body = line.rstrip(b"\r\n")
                if not body.strip():
                    continue
                if read_ids:
                    keys.add(_case_id(body, path, lineno), len(offsets))
                offsets.append(start)
                sizes.append(len(body))
            total = pos
    if repair and good_end < total:
        from queryeval.io.writing import writing

        with writing(path), open(path, "r+b") as fh:
            fh.truncate(good_end)
    n = len(offsets)
    off = np.frombuffer(offsets, dtype=np.int64) if n else np.empty(0, np.int64)
    siz = np.frombuffer(sizes, dtype=np.int64) if n else np.empty(0, np.int64)
    if in_order and not with_ids:
        return RecordStream(path, off.copy(), siz.astype(np.int32), None)
    ids = None
    if order is not None and not with_ids:
        rows = _ranked_rows(keys, order)
    else:
        rows, kept_ids = _rows_by_key(keys, order)
        ids = kept_ids if with_ids else None
    return RecordStream(path, off[rows], siz[rows].astype(np.int32), ids)


def _ranked_rows(keys: KeyBuilder, order: IdIndex) -> np.ndarray:
    """Rows to read, in ``order``: a case recorded twice keeps its last line; ids not in
    ``order`` come last, in file order (deduplicated by key). Costs about 40 bytes a line at
    the peak: no index of all keys is built (equal ranks are equal ids)."""
    n = len(keys)
    if not n:
        return np.empty(0, np.int64)
    hi = np.frombuffer(keys.hi, dtype=np.uint64)
    lo = np.frombuffer(keys.lo, dtype=np.uint64)
    rank = order.lookup(hi, lo, missing=_UNRANKED)
    by_rank = np.lexsort((np.arange(n), rank))  # by rank, then line
    sorted_rank = rank[by_rank]
    last = np.ones(n, dtype=bool)  # the last line of each rank
    last[:-1] = sorted_rank[1:] != sorted_rank[:-1]
    ranked = by_rank[last & (sorted_rank != _UNRANKED)]
    unranked = np.flatnonzero(rank == _UNRANKED)
    if not len(unranked):
        return ranked
    sub = IdIndex(hi[unranked], lo[unranked], unranked)  # rows ascend within a key
    keep = np.ones(len(sub), dtype=bool)
    keep[sub.duplicate_rows() - 1] = False
    return np.concatenate((ranked, np.sort(sub.values[keep].astype(np.int64))))


def _rows_by_key(keys: KeyBuilder, order: IdIndex | None) -> tuple[np.ndarray, IdIndex]:
    """Rows to read and the kept rows' ids: a case's last line wins, in its first line's
    place when there is no ``order``; sorted by rank in ``order``, then by line."""
    n = len(keys)
    index = keys.build()  # rows ascend within a key
    if not n:
        return np.empty(0, np.int64), index
    rows = np.arange(n, dtype=np.int64)
    if order is None:
        rank = rows.copy()
    else:
        rank = order.lookup(np.frombuffer(keys.hi, dtype=np.uint64),
                            np.frombuffer(keys.lo, dtype=np.uint64), missing=_UNRANKED)
    keep = np.ones(n, dtype=bool)
    dups = index.duplicate_rows()
    if len(dups):
        keep[index.values[dups - 1]] = False
        if order is None:  # the kept (last) line takes the first line's place
            first_of: dict[int, int] = {}
            for p in dups.tolist():
                prev, cur = int(index.values[p - 1]), int(index.values[p])
                first_of[cur] = first_of.get(prev, prev)
            for last, first in first_of.items():
                rank[last] = first
    kept = rows[keep]
    ordered = kept[np.lexsort((kept, rank[kept]))]
    return ordered, index if not len(dups) else _subset(index, keep)


def _subset(index: IdIndex, keep: np.ndarray) -> IdIndex:
    mask = keep[index.values]
    return IdIndex(index.hi[mask], index.lo[mask], index.values[mask])
