"""Opening input files: regular files only, within a size limit per kind, text decoded from
UTF-8 (a UTF-8, UTF-16 or UTF-32 byte-order mark is honoured).

Every reader of a user's file (suites, DABench labels, recorded responses, corpora, fields
data tables, ``queryeval tokens``) opens it here, so that ``/dev/zero``, ``/dev/urandom``, a
FIFO or a socket given as an input is one :class:`InputError` line, never a read that runs
until memory is gone or an ``open`` that blocks forever. A FIFO is never opened for reading
as such: :func:`open_input` opens with ``O_NONBLOCK`` (which never blocks) and checks the
opened descriptor with ``fstat`` before reading a byte.

Size limits (:data:`SIZE_LIMITS`): what a reader holds whole in memory gets a limit a
workstation can hold; streamed line files get a large one (a limit still, so a sparse file of
a terabyte is refused before hours of reading).
"""

from __future__ import annotations

import codecs
import io
import os
import stat
from pathlib import Path
from typing import BinaryIO

from queryeval.errors import InputError

MiB = 1 << 20
GiB = 1 << 30

SIZE_LIMITS: dict[str, int] = {
    "suite": 1 * GiB,           # YAML / JSON suites: parsed whole
    "suite-lines": 64 * GiB,    # JSONL / CSV suites: streamed, a case at a time
    "labels": 1 * GiB,          # DABench questions / labels: held whole
    "tuning": 64 * MiB,         # a `queryeval tune --json` result: one row per field
    "results": 64 * GiB,        # a run's results_<id>.jsonl, read back a record at a time
    "responses": 64 * GiB,      # recorded responses: indexed, read back by offset
    "corpus": 8 * GiB,          # retrieval chunks: held in memory
    "data": 2 * GiB,            # fields data / evaluation tables (CSV, Parquet, xlsx)
    "tokens": 1 * GiB,          # ``queryeval tokens FILE``: read whole
    "trec": 64 * GiB,           # TREC qrels / runs: read as columns
}

# An xlsx is a zip: a few MB of it can hold gigabytes of XML. Its members' uncompressed size
# and the cells read are capped: 64 MiB of sheet XML (5 MB zipped) made 527,760 cases and
# 1.3 GB of RSS, so at 32 MiB a workbook stays under about 700 MB. Larger tables: use CSV.
XLSX_MAX_UNCOMPRESSED = 32 * MiB
XLSX_MAX_CELLS = 1_000_000

_KIND_NAMES = {
    "suite": "suite", "suite-lines": "JSONL/CSV suite", "labels": "DABench questions/labels",
    "responses": "recorded responses", "corpus": "corpus", "data": "table", "tokens": "text",
    "trec": "TREC",
}

_KIND_WORDS = {
    stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder",
}

ICONV_HINT = "convert it to UTF-8 first, e.g. iconv -f latin1 -t utf-8 FILE > FILE.utf8"


def _human(n: int) -> str:
    return f"{n / GiB:g} GiB" if n >= GiB else f"{n / MiB:g} MiB"


def _check_stat(st: os.stat_result, path: Path, kind: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        what = _KIND_WORDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
        raise InputError(f"is {what}, not a regular file; give a file", path=path)
    limit = SIZE_LIMITS[kind]
    if st.st_size > limit:
        raise InputError(f"file is {_human(st.st_size)}, more than the {_human(limit)} limit "
                         f"for a {_KIND_NAMES.get(kind, kind)} file", path=path)


def check_input(path: str | Path, kind: str) -> os.stat_result:
    """``os.stat`` of ``path``, which must be a regular file within ``SIZE_LIMITS[kind]``."""
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError("cannot read file: no such file", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path=path) from None
    _check_stat(st, path, kind)
    return st


def open_input(path: str | Path, kind: str, buffering: int = -1) -> BinaryIO:
    """``path`` opened for binary reading, after checking it is a regular file within the
    kind's size limit (checked on the opened descriptor too: no FIFO is ever read)."""
    path = Path(path)
    check_input(path, kind)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path=path) from None
    try:
        _check_stat(os.fstat(fd), path, kind)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb", buffering=buffering)


def read_input_bytes(path: str | Path, kind: str) -> bytes:
    with open_input(path, kind) as fh:
        return fh.read()


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
)


def encoding_of(head: bytes) -> str:
    """The codec for a file starting with ``head``: from its byte-order mark, else UTF-8
    (``utf-8-sig`` also drops a UTF-8 BOM)."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    return "utf-8-sig"


def encoding_error(path: Path, data: bytes | None = None, encoding: str = "utf-8") -> InputError:
    """The one line for a file that does not decode: the byte offset, its line, the byte,
    and how to convert the file. Reads the file again (in pieces) unless ``data`` is given."""
    decoder = codecs.getincrementaldecoder(encoding)()
    offset, line = 0, 1
    bad: int | None = None
    try:
        fh = io.BytesIO(data) if data is not None else open_input(path, "responses")
    except InputError:
        return InputError("file is not valid UTF-8; " + ICONV_HINT, path=path)
    with fh:
        while chunk := fh.read(1 << 20):
            pending = decoder.getstate()[0]  # the bytes of a character cut by the last piece
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                data_seen = pending + chunk
                bad = offset - len(pending) + exc.start
                line += data_seen.count(b"\n", len(pending), max(exc.start, len(pending)))
                byte = data_seen[exc.start:exc.start + 1].hex() or "??"
                break
            line += chunk.count(b"\n")
            offset += len(chunk)
    if bad is None:
        return InputError("file is not valid UTF-8; " + ICONV_HINT, path=path)
    name = "UTF-8" if encoding.startswith("utf-8") else encoding.upper()
    return InputError(f"file is not valid {name}: byte 0x{byte} at offset {bad}; {ICONV_HINT}",
                      path=path, line=line)


def decode_text(raw: bytes, path: Path) -> str:
    """``raw`` decoded by its BOM (UTF-8 without one); a bad byte is :func:`encoding_error`."""
    encoding = encoding_of(raw[:4])
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError:
        raise encoding_error(path, raw, encoding) from None


def open_text(path: str | Path, kind: str) -> io.TextIOWrapper:
    """``path`` as text for the csv module (``newline=""``), decoded by its BOM."""
    path = Path(path)
    raw = open_input(path, kind)
    head = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
    return io.TextIOWrapper(raw, encoding=encoding_of(head), newline="")
