"""The three readers of TREC qrels and run files, each giving the same columns
(:class:`~queryeval.metrics.ranking.Columns`): the exact line-by-line Python reader
(trec_eval 10.0's rules, naming the first bad line), the compiled one
(``queryeval._trecread``) and pyarrow's CSV reader for plain files. Which one reads a file,
the formats and the rules: :mod:`queryeval.suite.trec` and docs/ranking.md.
"""

from __future__ import annotations

import codecs
import math
import os
import re
from pathlib import Path

import numpy as np

from queryeval.errors import InputError
from queryeval.metrics.ranking import Columns

_QRELS_COLUMNS = ("qid", "iter", "docid", "relevance")
#: Bytes per parse block of the fast reader (blocks are parsed in parallel).
_BLOCK_SIZE = 1 << 24
_RUN_COLUMNS = ("qid", "Q0", "docid", "rank", "score", "tag")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


# --------------------------------------------------------------------------- slow, exact path


#: C's ``isspace`` in the "C" locale: what trec_eval splits fields on.
C_SPACE = " \t\n\v\f\r"
_SPLIT = re.compile(r"[ \t\n\v\f\r]+")
#: The prefix C's ``strtod`` reads (decimal, hexadecimal, inf, nan), case-insensitive.
_STRTOD = re.compile(
    r"[+-]?(?:(?P<hex>0x(?:[0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)(?:p[+-]?[0-9]+)?)"
    r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?|inf(?:inity)?|nan(?:\([0-9a-z_]*\))?)",
    re.IGNORECASE | re.ASCII,  # ASCII: 'ı' (dotless i) must not match the i of "inf"
)
_ATOL = re.compile(r"[+-]?[0-9]+")
#: What ``--strict`` accepts: a whole decimal number (no underscores, no trailing text).
_STRICT_FLOAT = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                           r"|inf|infinity)", re.IGNORECASE | re.ASCII)


def c_strtod(text: str) -> tuple[float, bool]:
    """C ``atof``/``strtod`` on a field: the value of its longest numeric prefix (0.0 if none),
    and whether the whole field was that number."""
    m = _STRTOD.match(text)
    if m is None:
        return 0.0, False
    token = m.group(0)
    if m["hex"] is not None:
        try:
            value = float.fromhex(token)
        except OverflowError:
            value = -math.inf if token.startswith("-") else math.inf
    elif token.lstrip("+-")[:3].lower() == "nan":
        value = math.nan  # "nan(chars)": Python's float() refuses the parenthesised form
    else:
        value = float(token)
    return value, m.end() == len(text)


def c_atol(text: str) -> tuple[int, bool]:
    """C ``atol`` on a field: the value of its ``[+-]digits`` prefix (0 if none), and whether
    the whole field was that number. A value beyond 64 bits comes back as ``±2**64`` (the
    reader refuses it: glibc would clamp it, and trec_eval then sizes an array by it); its
    digits are never converted whole, as Python refuses ``int()`` on over 4,300 digits."""
    m = _ATOL.match(text)
    if m is None:
        return 0, False
    token = m.group(0)
    sign = -1 if token[0] == "-" else 1
    digits = token.lstrip("+-").lstrip("0")
    value = sign * (int(digits or "0") if len(digits) <= 20 else 2**64)
    return value, m.end() == len(text)


def is_comment(line: str, kind: str) -> bool:
    """trec_eval's comment lines: qrels, ``#`` as the first byte; runs, as the first
    non-blank character."""
    if kind == "qrels":
        return line.startswith("#")
    return line.lstrip(C_SPACE).startswith("#")


def _field_count_error(names, got: int, kind: str, strict: bool) -> str | None:
    want = len(names)
    if got == want or (kind == "run" and got > want and not strict):
        return None
    at_least = "at least " if kind == "run" and not strict else ""
    return (f"expected {at_least}{want} whitespace-separated columns ({' '.join(names)}), "
            f"got {got}")


def _parse_python(path: Path, kind: str, strict: bool = False) -> Columns:
    """Line-by-line reader (trec_eval's rules); the first bad line raises an InputError."""
    names = _QRELS_COLUMNS if kind == "qrels" else _RUN_COLUMNS
    value_col = 3 if kind == "qrels" else 4
    q_index: dict[str, int] = {}
    d_index: dict[str, int] = {}
    q_codes: list[int] = []
    d_codes: list[int] = []
    values: list[float] = []
    from queryeval.io.files import open_input

    with open_input(path, "trec") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"not UTF-8 text ({exc.reason})", path=path, line=lineno) from None
            text = line.strip(C_SPACE)
            if not text:
                continue
            if is_comment(line, kind):
                if strict:
                    raise InputError("comment lines are refused under --strict (trec_eval "
                                     "skips them)", path=path, line=lineno)
                continue
            parts = _SPLIT.split(text)
            problem = _field_count_error(names, len(parts), kind, strict)
            if problem:
                raise InputError(problem, path=path, line=lineno)
            text = parts[value_col]
            field = f"column {value_col + 1} ({names[value_col]})"
            if kind == "qrels":
                value, whole = c_atol(text)
                if not _INT64_MIN <= value <= _INT64_MAX:  # the engine's arrays are int64
                    raise InputError(f"relevance {text!r:.80} is out of range (64-bit integers)",
                                     path=path, line=lineno, field=field)
                if strict and not whole:
                    raise InputError(
                        f"relevance must be an integer, got {text!r:.80} (trec_eval would read "
                        f"{value}; refused under --strict)",
                        path=path, line=lineno, field=field,
                    )
            else:
                value, whole = c_strtod(text)
                if math.isnan(value):
                    raise InputError("score is NaN", path=path, line=lineno, field=field)
                if strict and not (whole and _STRICT_FLOAT.fullmatch(text)):
                    raise InputError(
                        f"score must be a number, got {text!r:.80} (trec_eval would read "
                        f"{value!r}; refused under --strict)",
                        path=path, line=lineno, field=field,
                    )
            q_codes.append(q_index.setdefault(parts[0], len(q_index)))
            d_codes.append(d_index.setdefault(parts[2], len(d_index)))
            values.append(value)
    return Columns(
        q=np.asarray(q_codes, dtype=np.int64),
        names_q=list(q_index),
        doc=np.asarray(d_codes, dtype=np.int64),
        names_doc=np.asarray(list(d_index), dtype=object),
        value=np.asarray(values, dtype=np.int64 if kind == "qrels" else np.float64),
    )


# --------------------------------------------------------------------------- compiled path

#: Bytes per thread below which the compiled reader does not split the file.
_NATIVE_MIN_CHUNK = 1 << 22


def native_reader():
    """The compiled reader module, or None (not built, or ``QUERYEVAL_NO_EXT=1``)."""
    if os.environ.get("QUERYEVAL_NO_EXT", "") not in ("", "0"):
        return None
    try:
        from queryeval import _trecread
    except ImportError:
        return None
    return _trecread


def reader_threads() -> int:
    """Threads the compiled reader may use: the CPUs this process may run on, at most 8."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        n = os.cpu_count() or 1
    return max(1, min(n, 8))


def _read_whole(path: Path):
    """The file's bytes, read whole into a numpy array (a bytes-like buffer).

    Read, not memory-mapped: a file truncated by another process while mapped would end the
    process with SIGBUS. Opened through io/files (fstat of the open descriptor): a path
    swapped for a FIFO after the caller's check is refused, not read (a plain open() would
    wait for a writer forever). Into a numpy array sized from fstat rather than
    ``fh.read()``: numpy asks the kernel for huge pages on large arrays, so the copy faults
    in 2 MiB pages instead of 4 KiB ones (42 MB run file: 20.5 -> 8.5 ms CPU). A file that
    grew since the fstat is read to its end all the same.
    """
    from queryeval.io.files import open_input

    with open_input(path, "trec", buffering=0) as fh:
        size = os.fstat(fh.fileno()).st_size
        buf = np.empty(size, dtype=np.uint8)
        view = memoryview(buf)
        got = 0
        while got < size:
            n = fh.readinto(view[got:])
            if not n:  # shortened since the fstat
                break
            got += n
        rest = fh.readall()
    if rest:
        return bytes(view[:got]) + rest
    return buf[:got]


def _threads_for(size: int, threads: int | None) -> int:
    if threads is None:
        threads = min(reader_threads(), max(1, size // _NATIVE_MIN_CHUNK))
    return max(1, threads)


def _scan_file(mod, path: Path, kind: str, strict: bool, threads: int | None):
    """``scan``'s result for the file: read by the extension's threads, each its own region
    of the file (``scan_fd``: the read in parallel, and the newlines that size the outputs
    counted as each piece arrives); a file that ends before the fstat's size or grew past it
    is read again by ``_read_whole`` (its bytes to the end), as on targets without
    ``scan_fd``."""
    if hasattr(mod, "scan_fd"):
        from queryeval.io.files import open_input

        with open_input(path, "trec", buffering=0) as fh:
            fd = fh.fileno()
            size = os.fstat(fd).st_size
            out = mod.scan_fd(fd, size, _threads_for(size, threads), kind == "run", strict)
            if out is not False and not os.pread(fd, 1, size):
                return out
    data = _read_whole(path)
    return mod.scan(data, _threads_for(len(data), threads), kind == "run", strict)


def _parse_native(path: Path, kind: str, strict: bool = False,
                  threads: int | None = None) -> Columns | None:
    """The compiled reader (every trec_eval rule); None when it is not available or the file
    holds a line to refuse (the exact reader then names it)."""
    mod = native_reader()
    if mod is None:
        return None
    import pyarrow as pa

    out = _scan_file(mod, path, kind, strict, threads)
    if out is None:
        return None
    rows, q_codes, q_offsets, q_data, n_q, d_codes, d_offsets, d_data, n_d, values = out

    def names(n: int, offsets, data):
        return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets),
                                                      pa.py_buffer(data)])

    return Columns(
        q=np.frombuffer(q_codes, dtype=np.int32),
        names_q=names(n_q, q_offsets, q_data),
        doc=np.frombuffer(d_codes, dtype=np.int32),
        names_doc=names(n_d, d_offsets, d_data),
        value=np.frombuffer(values, dtype=np.float64 if kind == "run" else np.int64),
    )


# --------------------------------------------------------------------------- pyarrow path


#: C's ``isspace`` (trec_eval's field separators), in RE2 syntax.
_WHITESPACE = r"[\t-\r ]"


def _bad_names(names) -> bool:
    """An empty id (from repeated spaces), one holding other C whitespace (a tab) or one
    starting with ``#`` (a comment line): only the exact path reads such lines the way
    trec_eval does. One regex pass over the distinct names, not the rows."""
    import pyarrow.compute as pc

    if len(names) == 0:
        return False
    return bool(pc.any(pc.match_substring_regex(names, "^$|^#|" + _WHITESPACE)).as_py())


def _parse_arrow(path: Path, kind: str) -> Columns | None:
    """pyarrow reader; None when pyarrow is missing or the file needs the exact path."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:  # pragma: no cover - pyarrow is a dependency; keep a safe fallback
        return None
    names = _QRELS_COLUMNS if kind == "qrels" else _RUN_COLUMNS
    value_name = "relevance" if kind == "qrels" else "score"
    ids = pa.dictionary(pa.int32(), pa.string())
    # The system allocator, not pyarrow's default (mimalloc): on a fresh process mimalloc's
    # page handling cost ~1.5 s of kernel time for a 10M-line run, the system pool ~0.4 s.
    pool = pa.system_memory_pool()
    from queryeval.io.files import read_input_bytes

    data = read_input_bytes(path, "trec")
    if (data.startswith(codecs.BOM_UTF8)
            or (b"\r" in data and data.count(b"\r") != data.count(b"\r\n"))
            or any(sep in data for sep in (b"  ", b"\t", b"\v", b"\f"))):
        # pyarrow drops a leading BOM (trec_eval keeps it in the first id) and ends a line
        # at a lone CR (trec_eval's whitespace): "q1 .. t\rq2 .. t" is one run line, not two.
        # Any other C space, or two spaces, shifts the columns: "q1  Q0 d\t5 1 t" is 6
        # fields to pyarrow with docid "Q0" (trec_eval: docid "d"); the unread columns
        # (Q0, rank, tag) cannot be checked after the parse
        return None
    if not data.isascii():
        try:  # pyarrow checks the kept columns only; the exact reader (and trec_eval's
            data.decode("utf-8")  # reading rules here) refuse bad UTF-8 on any line
        except UnicodeDecodeError:
            return None
    try:
        table = pacsv.read_csv(
            pa.BufferReader(data),
            read_options=pacsv.ReadOptions(column_names=list(names), block_size=_BLOCK_SIZE),
            parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False),
            convert_options=pacsv.ConvertOptions(
                column_types={
                    "qid": ids,
                    "docid": ids,
                    value_name: pa.int64() if kind == "qrels" else pa.float64(),
                },
                include_columns=["qid", "docid", value_name],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                null_values=[],
            ),
            memory_pool=pool,
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError):
        return None
    q_codes, q_names = _dictionary_codes(table.column("qid"), pool)
    d_codes, d_names = _dictionary_codes(table.column("docid"), pool)
    if q_codes is None or d_codes is None or _bad_names(q_names) or _bad_names(d_names):
        return None
    value = table.column(value_name).to_numpy()
    if kind == "run" and np.isnan(value).any():
        return None  # let the exact path name the line
    return Columns(
        q=q_codes,
        names_q=q_names,
        doc=d_codes,
        names_doc=d_names,
        value=value,
    )


def _dictionary_codes(column, pool) -> tuple[np.ndarray | None, object]:
    """int32 codes and the dictionary of a chunked dictionary column (None: nulls).

    The CSV reader encodes each block with its own dictionary; ``unify_dictionaries``
    remaps them to one (C++), then the codes are concatenated straight from the chunks'
    buffers (one copy).
    """
    import pyarrow as pa

    if column.null_count:
        return None, None
    column = pa.table({"c": column}).unify_dictionaries(memory_pool=pool).column("c")
    chunks = column.chunks
    if not chunks:
        return np.zeros(0, dtype=np.int32), pa.array([], type=pa.string())
    codes = np.concatenate([c.indices.to_numpy() for c in chunks])
    return codes, chunks[0].dictionary
