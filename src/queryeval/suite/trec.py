"""TREC qrels and run files: fast readers straight to the ranking engine's arrays.

Formats (whitespace-separated, one judgement or retrieved document per line; blank lines
are skipped), as trec_eval reads them:

* qrels: ``qid iter docid relevance`` (relevance an integer; ``iter`` ignored);
* run:   ``qid Q0 docid rank score tag`` (``Q0``, ``rank`` and ``tag`` ignored: the order is
  trec_eval's, by score then docid, never the file's rank column).

The fast path is pyarrow's multi-threaded CSV reader with a single-space delimiter and
dictionary-encoded id columns; a file it cannot take (tabs, repeated spaces, a bad line) is
re-read line by line in Python, which either parses it (any whitespace is fine) or raises
:class:`~queryeval.errors.InputError` naming the line and the column. A (query, document)
pair may occur only once per file, as trec_eval requires.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from queryeval.errors import InputError
from queryeval.metrics.ranking import (
    Columns,
    DuplicateEntryError,
    RankingArrays,
    RankingResult,
    arrays_from_columns,
    evaluate_arrays,
)
from queryeval.metrics.ranking._columns import first_duplicate, name_at, names_at, names_list

_QRELS_COLUMNS = ("qid", "iter", "docid", "relevance")
#: Bytes per parse block of the fast reader (blocks are parsed in parallel).
_BLOCK_SIZE = 1 << 24
_RUN_COLUMNS = ("qid", "Q0", "docid", "rank", "score", "tag")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


# --------------------------------------------------------------------------- slow, exact path


def _parse_python(path: Path, kind: str) -> Columns:
    """Line-by-line reader: any whitespace; the first bad line raises an InputError."""
    names = _QRELS_COLUMNS if kind == "qrels" else _RUN_COLUMNS
    value_col = 3 if kind == "qrels" else 4
    q_index: dict[str, int] = {}
    d_index: dict[str, int] = {}
    q_codes: list[int] = []
    d_codes: list[int] = []
    values: list[float] = []
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"not UTF-8 text ({exc.reason})", path=path, line=lineno) from None
            parts = line.split()
            if not parts:
                continue
            if len(parts) != len(names):
                raise InputError(
                    f"expected {len(names)} whitespace-separated columns "
                    f"({' '.join(names)}), got {len(parts)}",
                    path=path, line=lineno,
                )
            text = parts[value_col]
            field = f"column {value_col + 1} ({names[value_col]})"
            if kind == "qrels":
                try:
                    value: float = int(text)
                except ValueError:
                    raise InputError(
                        f"relevance must be an integer, got {text!r:.80}",
                        path=path, line=lineno, field=field,
                    ) from None
                if not _INT64_MIN <= value <= _INT64_MAX:  # the engine's arrays are int64
                    raise InputError(f"relevance {text!r:.80} is out of range (64-bit integers)",
                                     path=path, line=lineno, field=field)
            else:
                try:
                    value = float(text)
                except ValueError:
                    raise InputError(
                        f"score must be a number, got {text!r}", path=path, line=lineno, field=field
                    ) from None
                if math.isnan(value):
                    raise InputError("score is NaN", path=path, line=lineno, field=field)
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


# --------------------------------------------------------------------------- fast path


#: What Python's ``str.split()`` treats as whitespace (ASCII and Unicode), in RE2 syntax.
_WHITESPACE = (r"[\t-\r\x{1c}-\x{20}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}"
               r"\x{202f}\x{205f}\x{3000}]")


def _bad_names(names) -> bool:
    """An empty id (from repeated spaces) or one holding other whitespace (a tab, a no-break
    space): only the exact path splits such lines the way ``str.split()`` does. One regex
    pass over the distinct names, not the rows."""
    import pyarrow.compute as pc

    if len(names) == 0:
        return False
    return bool(pc.any(pc.match_substring_regex(names, "^$|" + _WHITESPACE)).as_py())


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
    try:
        table = pacsv.read_csv(
            path,
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


def _read_columns(path: str | Path, kind: str) -> Columns:
    from queryeval.io.files import check_input

    path = Path(path)
    check_input(path, "trec")  # a FIFO or a device is named as such (is_file() said "no such file")
    cols = _parse_arrow(path, kind)
    if cols is None:
        cols = _parse_python(path, kind)
    return cols


def read_qrels_columns(path: str | Path) -> Columns:
    """Read a qrels file into dictionary-encoded columns (the engine's input)."""
    return _read_columns(path, "qrels")


def read_run_columns(path: str | Path) -> Columns:
    """Read a run file into dictionary-encoded columns (the engine's input)."""
    return _read_columns(path, "run")


# --------------------------------------------------------------------------- to the engine


def _doc_mapping(qrels: Columns, run: Columns) -> np.ndarray:
    """For each distinct qrels docid, its code among the run docids (-1: never retrieved)."""
    if not isinstance(run.names_doc, np.ndarray) and not isinstance(qrels.names_doc, np.ndarray):
        import pyarrow.compute as pc

        mapped = pc.index_in(qrels.names_doc, value_set=run.names_doc)
        return mapped.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    run_names = names_at(run.names_doc, np.arange(len(run.names_doc))).tolist()
    index = {name: i for i, name in enumerate(run_names)}
    names = names_at(qrels.names_doc, np.arange(len(qrels.names_doc))).tolist()
    return np.fromiter((index.get(n, -1) for n in names), dtype=np.int64, count=len(names))


def _row_lines(path: Path, rows: Sequence[int]) -> list[int]:
    """1-based line numbers of 0-based data rows (blank lines are not rows)."""
    wanted = sorted(set(rows))
    found: dict[int, int] = {}
    row = -1
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if raw.strip():
                row += 1
                if row in wanted:
                    found[row] = lineno
                    if len(found) == len(wanted):
                        break
    return [found[r] for r in rows]


def build_arrays(
    qrels_path: str | Path, run_path: str | Path, missing_query: str = "zero"
) -> RankingArrays:
    """Read both files and build the engine's arrays without any per-query Python dict.

    The qrels file is read in a second thread while the run is read (pyarrow releases the
    GIL); a bad qrels file is still reported before a bad run file.
    """
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(read_qrels_columns, qrels_path)
        try:
            run = read_run_columns(run_path)
        except InputError:
            pending.result()  # raises the qrels error first, if there is one
            raise
        qrels = pending.result()
    try:
        arrays = arrays_from_columns(qrels, run, _doc_mapping(qrels, run), missing_query)
    except DuplicateEntryError as exc:
        path = Path(qrels_path if exc.what == "qrels" else run_path)
        first, second = _row_lines(path, exc.rows)
        raise InputError(
            f"query {exc.qid!r}, document {exc.docid!r} also on line {first}; "
            "each (query, document) pair may occur once",
            path=path, line=second,
        ) from None
    return arrays


def evaluate_files(
    qrels_path: str | Path,
    run_path: str | Path,
    metrics: str | Sequence[str],
    *,
    per_query: bool = False,
    missing_query: str = "zero",
) -> RankingResult:
    """Evaluate a TREC run file against a TREC qrels file (see ``ranking.evaluate``)."""
    arrays = build_arrays(qrels_path, run_path, missing_query)
    if arrays.n_queries == 0:
        what = ("its queries are not in the run (missing_query='skip')" if arrays.n_missing
                else "the file has no judgement")
        raise InputError(f"no query to evaluate: {what}", path=qrels_path)
    return evaluate_arrays(arrays, metrics, per_query=per_query)


# --------------------------------------------------------------------------- dict shapes


def _to_dicts(cols: Columns, cast) -> dict[str, dict]:
    order = np.argsort(cols.q, kind="stable")
    q = cols.q[order]
    docs = names_at(cols.names_doc, cols.doc[order]).tolist()
    values = cols.value[order].tolist()
    bounds = np.flatnonzero(np.diff(q)) + 1
    starts = [0, *bounds.tolist()]
    ends = [*bounds.tolist(), len(values)]
    qids = names_list(cols.names_q)
    out: dict[str, dict] = {}
    for a, b in zip(starts, ends, strict=False):
        if b > a:
            out[qids[int(q[a])]] = dict(zip(docs[a:b], map(cast, values[a:b]), strict=False))
    return out


def _check_unique(path: Path, cols: Columns, what: str) -> None:
    dup = first_duplicate(cols.q, cols.doc, len(cols.names_doc))
    if dup is not None:
        first, second = _row_lines(path, dup)
        qid = name_at(cols.names_q, int(cols.q[dup[0]]))
        docid = names_at(cols.names_doc, cols.doc[[dup[0]]])[0]
        raise InputError(
            f"query {qid!r}, document {docid!r} also on line {first}; "
            f"each (query, document) pair may occur once in a {what} file",
            path=path, line=second,
        )


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """Read a qrels file as ``{qid: {docid: relevance}}`` (pytrec_eval's shape)."""
    cols = read_qrels_columns(path)
    _check_unique(Path(path), cols, "qrels")
    return _to_dicts(cols, int)


def read_run(path: str | Path) -> dict[str, dict[str, float]]:
    """Read a run file as ``{qid: {docid: score}}`` (pytrec_eval's shape)."""
    cols = read_run_columns(path)
    _check_unique(Path(path), cols, "run")
    return _to_dicts(cols, float)
