"""TREC qrels and run files: fast readers straight to the ranking engine's arrays.

Formats (one judgement or retrieved document per line), read by trec_eval 10.0's rules
(``get_qrels.c``, ``get_trec_results.c``; every rule is listed in docs/ranking.md):

* qrels: ``qid iter docid relevance``: exactly 4 fields; relevance read like C's ``atol``
  (the longest ``[+-]digits`` prefix: ``1_0`` is 1, ``2.7`` is 2, ``abc`` is 0); a line whose
  first byte is ``#`` is a comment;
* run: ``qid Q0 docid rank score tag [anything]``: at least 6 fields, the rest of the line is
  ignored; the score read like C's ``strtod`` (the longest number prefix: ``1.5abc`` is 1.5,
  ``0_5`` is 0, ``0x1p3`` is 8); a line whose first non-blank character is ``#`` is a
  comment. ``Q0``, ``rank`` and ``tag`` are ignored: the order is trec_eval's.

Fields are separated by C whitespace (space, tab, CR, VT, FF); blank lines are skipped.
``strict=True`` refuses everything trec_eval reads by a lenient rule: comments, extra run
columns, numbers with trailing text or underscores (reported as ``InputError``).

Three readers give the same columns. The compiled one (``queryeval._trecread``, a small C
extension built by ``pip install``) applies every rule above in two passes over the
file's bytes, split at line boundaries over threads; without it (no compiler at install
time, or ``QUERYEVAL_NO_EXT=1``) pyarrow's multi-threaded CSV reader reads the plain files
(single spaces, no comments). A file neither takes (a bad line; for pyarrow also tabs, repeated
spaces, comments, lenient numbers, a lone CR, a leading BOM) is read line by line in Python, which either parses it or raises
:class:`~queryeval.errors.InputError` naming the line and the column. A (query, document)
pair may occur only once per file, as trec_eval requires.
"""

from __future__ import annotations

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
from queryeval.suite.trec_readers import (
    _parse_arrow,
    _parse_native,
    _parse_python,
    is_comment,
    native_reader,
)

# --------------------------------------------------------------------------- which reader


def _read_columns(path: str | Path, kind: str, strict: bool = False) -> Columns:
    from queryeval.io.files import check_input

    path = Path(path)
    check_input(path, "trec")  # a FIFO or a device is named as such (is_file() said "no such file")
    if native_reader() is not None:
        cols = _parse_native(path, kind, strict)
        # refused: a line to refuse, which the exact reader names (pyarrow would refuse it too)
        return cols if cols is not None else _parse_python(path, kind, strict)
    cols = _parse_arrow(path, kind)
    if cols is None:
        cols = _parse_python(path, kind, strict)
    return cols


def read_qrels_columns(path: str | Path, *, strict: bool = False) -> Columns:
    """Read a qrels file into dictionary-encoded columns (the engine's input)."""
    return _read_columns(path, "qrels", strict)


def read_run_columns(path: str | Path, *, strict: bool = False) -> Columns:
    """Read a run file into dictionary-encoded columns (the engine's input)."""
    return _read_columns(path, "run", strict)


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


def _row_lines(path: Path, rows: Sequence[int], kind: str) -> list[int]:
    """1-based line numbers of 0-based data rows (blank and comment lines are not rows)."""
    from queryeval.io.files import open_input

    wanted = sorted(set(rows))
    found: dict[int, int] = {}
    row = -1
    with open_input(path, "trec") as fh:
        for lineno, raw in enumerate(fh, 1):
            if raw.strip() and not is_comment(raw.decode("utf-8", "replace"), kind):
                row += 1
                if row in wanted:
                    found[row] = lineno
                    if len(found) == len(wanted):
                        break
    if len(found) < len(wanted):  # shortened since it was read
        raise InputError("the file changed while it was being read; run again", path=path)
    return [found[r] for r in rows]


def build_arrays(
    qrels_path: str | Path, run_path: str | Path, missing_query: str = "zero",
    *, strict: bool = False,
) -> RankingArrays:
    """Read both files and build the engine's arrays without any per-query Python dict.

    The qrels file is read in a second thread while the run is read (the compiled reader and
    pyarrow release the GIL); a bad qrels file is still reported before a bad run file.
    """
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(read_qrels_columns, qrels_path, strict=strict)
        try:
            run = read_run_columns(run_path, strict=strict)
        except InputError:
            pending.result()  # raises the qrels error first, if there is one
            raise
        qrels = pending.result()
    try:
        arrays = arrays_from_columns(qrels, run, _doc_mapping(qrels, run), missing_query)
    except DuplicateEntryError as exc:
        path = Path(qrels_path if exc.what == "qrels" else run_path)
        first, second = _row_lines(path, exc.rows, exc.what)
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
    relevance_level: int = 1,
    judged_only: bool = False,
    strict: bool = False,
    max_docs: int | None = None,
) -> RankingResult:
    """Evaluate a TREC run file against a TREC qrels file (see ``ranking.evaluate``;
    ``strict`` refuses what trec_eval reads by a lenient rule, see the module docstring)."""
    arrays = build_arrays(qrels_path, run_path, missing_query, strict=strict)
    if arrays.n_queries == 0:
        what = ("its queries are not in the run (missing_query='skip')" if arrays.n_missing
                else "the file has no judgement")
        raise InputError(f"no query to evaluate: {what}", path=qrels_path)
    return evaluate_arrays(arrays, metrics, per_query=per_query,
                           relevance_level=relevance_level, judged_only=judged_only,
                           max_docs=max_docs)


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
        first, second = _row_lines(path, dup, what)
        qid = name_at(cols.names_q, int(cols.q[dup[0]]))
        docid = names_at(cols.names_doc, cols.doc[[dup[0]]])[0]
        raise InputError(
            f"query {qid!r}, document {docid!r} also on line {first}; "
            f"each (query, document) pair may occur once in a {what} file",
            path=path, line=second,
        )


def read_qrels(path: str | Path, *, strict: bool = False) -> dict[str, dict[str, int]]:
    """Read a qrels file as ``{qid: {docid: relevance}}`` (pytrec_eval's shape)."""
    cols = read_qrels_columns(path, strict=strict)
    _check_unique(Path(path), cols, "qrels")
    return _to_dicts(cols, int)


def read_run(path: str | Path, *, strict: bool = False) -> dict[str, dict[str, float]]:
    """Read a run file as ``{qid: {docid: score}}`` (pytrec_eval's shape)."""
    cols = read_run_columns(path, strict=strict)
    _check_unique(Path(path), cols, "run")
    return _to_dicts(cols, float)
