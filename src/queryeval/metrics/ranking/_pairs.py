"""Index of a run's (query, document) pairs: duplicate detection and judgement look-ups.

The run's entries are grouped in one contiguous segment per query (``seg_start``/``seg_len``
tile the flat arrays). Two interchangeable layouts, same answers (tests hold them to it):

* ``table``: one row per segment, each entry packed as ``doc << pb | position`` and the rows
  sorted independently (``ndarray.sort(axis=1)``: many small, cache-resident sorts, several
  times faster than one global sort). Rows shorter than the longest are padded with
  ``n_docs << pb`` (greater than any document). Used while the padding stays under the
  number of entries (always for a run of fixed depth, the usual TREC run).
* ``sorted``: one global int64 sort of packed ``(query, document, row)`` keys.

A look-up is a vectorised binary search (one gather per halving step) in the table's row, or a
``searchsorted`` in the global keys; with many look-ups into few (query, document) cells, one
gather from a dense grid built from the table.
"""

from __future__ import annotations

import numpy as np

#: The table layout is used while rows x width <= this many times the number of entries.
_PAD_FACTOR = 2
#: Look-ups use a dense (row, document) grid when it is estimated cheaper than the search
#: (many judgements per query, few distinct documents: e.g. 1,000 judged of 5,000 documents
#: per query; ``RunPairs._auto_method``) and has at most ``_DIRECT_MAX`` cells.
_DIRECT_MAX = 1 << 26


def bits(n: int) -> int:
    """Bits needed to hold the values 0 .. n-1 (at least 1)."""
    return max(int(n - 1).bit_length(), 1)


def sorted_pairs(
    q: np.ndarray, n_q: int, doc: np.ndarray, n_docs: int
) -> tuple[np.ndarray, np.ndarray]:
    """Keys ``q << b | doc`` sorted and, aligned, the row each came from. One int64 sort.

    ``b = bits(n_docs)``, so a key orders as the pair ``(q, doc)``. When the row also fits in
    63 bits it is packed below the key, and a value sort (SIMD, several times faster than an
    argsort) does the work; a shift and a mask unpack it.
    """
    n = int(q.size)
    db = bits(n_docs)
    key = q.astype(np.int64)
    key <<= db
    key |= doc
    if n == 0:
        return key, np.zeros(0, dtype=np.int64)
    rb = bits(n)
    if bits(n_q) + db + rb <= 63:
        key <<= rb
        key |= np.arange(n, dtype=np.int64)
        key.sort()
        rows = key & ((1 << rb) - 1)
        key >>= rb
        return key, rows
    rows = np.argsort(key, kind="stable")
    return key[rows], rows


class RunPairs:
    """Which flat entry holds (query, document), and the first duplicated pair if any.

    Args:
        doc: document code of every flat entry (segments tile it).
        seg_start, seg_len: per query index, its segment (length 0: not in the run).
        n_docs: number of document codes (codes are ``0 .. n_docs-1``).
        layout: ``"auto"``, ``"table"`` or ``"sorted"``.

    Attributes:
        duplicate: flat positions ``(i, j)``, ``i < j``, of one duplicated pair, or None.
    """

    def __init__(
        self,
        doc: np.ndarray,
        seg_start: np.ndarray,
        seg_len: np.ndarray,
        n_docs: int,
        layout: str = "auto",
    ) -> None:
        self._n_docs = max(int(n_docs), 1)
        present = np.flatnonzero(seg_len > 0)
        present = present[np.argsort(seg_start[present], kind="stable")]
        width = int(seg_len.max()) if seg_len.size else 0
        if layout == "auto":
            fits = present.size * width <= _PAD_FACTOR * max(int(doc.size), 1)
            layout = "table" if fits else "sorted"
        if layout == "table":
            self._build_table(doc, seg_start, seg_len, present, width)
        elif layout == "sorted":
            self._build_sorted(doc, seg_start, seg_len, present)
        else:
            raise ValueError(f"layout must be auto, table or sorted, got {layout!r}")
        self.layout = layout

    # ------------------------------------------------------------------ table layout

    def _build_table(self, doc, seg_start, seg_len, present, width) -> None:
        nq = seg_len.size
        pb = bits(width)
        limit = (self._n_docs + 1) << pb
        dtype = np.int32 if limit < 2**31 else np.int64
        lens = seg_len[present]
        starts = seg_start[present]
        n_rows = present.size
        if n_rows and np.all(lens == width) and np.array_equal(starts, np.arange(n_rows) * width):
            table = doc[: n_rows * width].astype(dtype).reshape(n_rows, width)
            table <<= pb
            table |= np.arange(width, dtype=dtype)
        else:
            table = np.full((n_rows, max(width, 1)), self._n_docs << pb, dtype=dtype)
            row = np.repeat(np.arange(n_rows, dtype=np.int64), lens)
            flat = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(
                int(lens.sum()), dtype=np.int64
            )
            pos = flat - np.repeat(starts, lens)
            table[row, pos] = (doc[flat].astype(dtype) << pb) | pos.astype(dtype)
        table.sort(axis=1)
        self._table = table
        self._pb = pb
        self._row_of_q = np.full(nq, -1, dtype=np.int64)
        self._row_of_q[present] = np.arange(n_rows)
        self._row_start = starts.astype(np.int64)
        self.duplicate = None
        if width > 1 and n_rows:
            hi = table >> pb
            same = (hi[:, 1:] == hi[:, :-1]) & (hi[:, 1:] < self._n_docs)
            if same.any():
                r, c = np.unravel_index(int(np.argmax(same)), same.shape)
                mask = (1 << pb) - 1
                i, j = sorted((int(table[r, c]) & mask, int(table[r, c + 1]) & mask))
                self.duplicate = (int(starts[r]) + i, int(starts[r]) + j)

    def _lookup_table(self, q: np.ndarray, d: np.ndarray) -> np.ndarray:
        out = np.full(q.size, -1, dtype=np.int64)
        row = self._row_of_q[q]
        ok = np.flatnonzero(row >= 0)
        table = self._table
        if ok.size == 0 or table.size == 0:
            return out
        width = table.shape[1]
        flat = table.ravel()
        itype = np.int32 if flat.size < 2**31 else np.int64  # half the index traffic
        target = (d[ok] << self._pb).astype(flat.dtype)
        # Branchless lower bound, every lane in step: ceil(log2(width)) gathers; ``base`` is
        # the absolute index into the flattened table.
        base = (row[ok] * width).astype(itype)
        n = width
        while n > 1:
            half = n >> 1
            step = flat[base + half] < target
            base += step.astype(itype) * itype(half)
            n -= half
        row_end = (row[ok] + 1) * width
        base += flat[base] < target
        found = base < row_end
        entry = flat[np.minimum(base, flat.size - 1)].astype(np.int64)
        found &= (entry >> self._pb) == (target.astype(np.int64) >> self._pb)
        pos = entry & ((1 << self._pb) - 1)
        out[ok[found]] = self._row_start[row[ok[found]]] + pos[found]
        return out

    def _lookup_direct(self, q: np.ndarray, d: np.ndarray) -> np.ndarray:
        """Many look-ups into few (query, document) cells: a dense (row, doc) -> entry grid,
        one scatter and one gather (no search). The grid holds entry + 1 (0: absent) in
        int32 when the entries allow: zeroed pages from the allocator instead of a fill of
        -1, and half the memory traffic of int64."""
        table, pb = self._table, self._pb
        rows, width = table.shape
        n_docs = self._n_docs
        cells = rows * n_docs
        last = int(self._row_start[-1]) + width if rows else 0
        gtype = np.int32 if last < 2**31 - 1 and cells < 2**31 else np.int64
        grid = np.zeros(cells, dtype=gtype)
        doc = (table >> pb).astype(gtype)
        pos = (table & ((1 << pb) - 1)).astype(gtype)
        cell = np.arange(rows, dtype=gtype)[:, None] * gtype(n_docs) + doc
        val = self._row_start.astype(gtype)[:, None] + pos + gtype(1)
        real = doc < n_docs  # not padding
        if real.all():
            grid[cell.ravel()] = val.ravel()
        else:
            grid[cell[real]] = val[real]
        out = np.full(q.size, -1, dtype=np.int64)
        row = self._row_of_q[q]
        ok = np.flatnonzero(row >= 0)
        out[ok] = grid[row[ok].astype(gtype) * gtype(n_docs) + d[ok].astype(gtype)]
        out[ok] -= 1
        return out

    # ------------------------------------------------------------------ sorted layout

    def _build_sorted(self, doc, seg_start, seg_len, present) -> None:
        nq = seg_len.size
        lens = seg_len[present]
        entry_q = np.repeat(present.astype(np.int64), lens)  # segments tile doc in this order
        self._keys, self._flat = sorted_pairs(entry_q, nq, doc, self._n_docs)
        self._db = bits(self._n_docs)
        self.duplicate = None
        same = np.flatnonzero(self._keys[1:] == self._keys[:-1])
        if same.size:
            i, j = sorted((int(self._flat[same[0]]), int(self._flat[same[0] + 1])))
            self.duplicate = (i, j)

    def _lookup_sorted(self, q: np.ndarray, d: np.ndarray) -> np.ndarray:
        out = np.full(q.size, -1, dtype=np.int64)
        keys = self._keys
        if keys.size == 0 or q.size == 0:
            return out
        key = (q.astype(np.int64) << self._db) | d
        at = np.minimum(np.searchsorted(keys, key), keys.size - 1)
        found = keys[at] == key
        out[found] = self._flat[at[found]]
        return out

    # ------------------------------------------------------------------ look-up

    def _auto_method(self, n_lookups: int) -> str:
        """``direct`` when its estimated cost is below the search's (measured, ns: ~0.5 a
        grid cell, ~2 a table entry, ~13 a look-up; the search ~5.5 a look-up and halving
        step) and the grid has at most ``_DIRECT_MAX`` cells."""
        rows, width = self._table.shape
        cells = rows * self._n_docs
        if cells > _DIRECT_MAX:
            return "search"
        steps = bits(width) + 1
        direct = cells + 4 * self._table.size + 26 * n_lookups
        return "direct" if direct < 11 * n_lookups * steps else "search"

    def lookup(self, q: np.ndarray, d: np.ndarray, method: str = "auto") -> np.ndarray:
        """Flat entry of each (query index, document code) pair; -1 where the run lacks it.

        ``d`` must hold valid codes (``0 <= d < n_docs``). ``method`` (table layout only):
        ``"auto"``, ``"search"`` (binary search in the rows) or ``"direct"`` (dense grid);
        same answers.
        """
        q = np.asarray(q, dtype=np.int64)
        d = np.asarray(d, dtype=np.int64)
        if self.layout == "table":
            if method == "auto":
                method = self._auto_method(q.size)
            if method == "direct":
                return self._lookup_direct(q, d)
            if method != "search":
                raise ValueError(f"method must be auto, search or direct, got {method!r}")
            return self._lookup_table(q, d)
        return self._lookup_sorted(q, d)
