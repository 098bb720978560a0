"""The compiled reader's file read (``trec_readers._read_whole``: into a numpy array sized from
fstat): the bytes the file holds, also when it grew or shrank between the fstat and the
read, and the same columns as the exact reader."""

from __future__ import annotations

import os

import pytest

from queryeval.metrics.ranking._columns import names_list
from queryeval.suite import trec, trec_readers

TEXT = b"".join(b"q%d Q0 d%d %d %r t\n" % (i // 7, i % 11, i, 1 / (i + 1)) for i in range(300))


def _fstat_off_by(monkeypatch, delta: int) -> None:
    """os.fstat reports ``delta`` bytes more than the file holds (the file shrank or grew
    between the fstat and the read)."""
    real = os.fstat

    def fstat(fd):
        st = real(fd)
        fields = list(st)
        fields[6] = max(0, st.st_size + delta)  # st_size
        return os.stat_result(fields)

    monkeypatch.setattr(os, "fstat", fstat)


@pytest.mark.parametrize("delta", [0, -1, -100, -len(TEXT), 1, 4096])
def test_read_whole_gives_the_files_bytes(tmp_path, monkeypatch, delta) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(TEXT)
    _fstat_off_by(monkeypatch, delta)
    assert bytes(trec_readers._read_whole(path)) == TEXT


def test_read_whole_of_an_empty_file(tmp_path) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(b"")
    assert bytes(trec_readers._read_whole(path)) == b""


@pytest.mark.skipif(trec.native_reader() is None, reason="compiled reader not built")
@pytest.mark.parametrize("delta", [0, -50, 50])
def test_compiled_columns_equal_the_exact_readers(tmp_path, monkeypatch, delta) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(TEXT)
    want = trec._parse_python(path, "run")
    _fstat_off_by(monkeypatch, delta)
    got = trec._parse_native(path, "run")
    assert got is not None
    assert names_list(got.names_doc) == names_list(want.names_doc)
    assert names_list(got.names_q) == names_list(want.names_q)
    assert got.doc.tolist() == list(want.doc) and got.q.tolist() == list(want.q)
    assert got.value.tolist() == list(want.value)


@pytest.mark.skipif(trec.native_reader() is None, reason="compiled reader not built")
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_bad_byte_anywhere_refuses_the_file(threads) -> None:
    """UTF-8 is checked in 64 KiB blocks as the scan reaches them (no pass of its own): a
    byte that is not UTF-8 at a block's edge, inside a line that straddles one, in a
    comment line or in the last line past the last block the scan started still refuses
    the file (None: the exact reader then names it)."""
    import random

    mod = trec.native_reader()
    rng = random.Random(5)
    lines = []
    for i in range(1400):
        if i % 97 == 0:
            lines.append(b"# comment " + b"c" * rng.randrange(0, 300) + b"\n")
        lines.append(b"q%d Q0 d%d %d 0.5 t %s\n" % (i // 9, i, i, b"x" * rng.randrange(0, 200)))
    # a last line longer than a block (no newline): its end lies past the block checked at
    # its start
    lines.append(b"q9 Q0 last 1 0.5 t " + b"y" * 100_000)
    data = b"".join(lines)
    assert mod.scan(data, threads, True, False) is not None
    n = len(data)
    spots = {0, n - 1, n - 2, n - 1500, n - 70_000}
    for edge in range(1 << 16, n, 1 << 16):
        spots |= {edge - 1, edge, edge + 1}
    third = n // 3  # near where 2 and 3 threads split the file
    spots |= {third, 2 * third, n // 2}
    spots |= {rng.randrange(n) for _ in range(40)}
    for at in sorted(spots):
        bad = data[:at] + b"\xff" + data[at + 1:]
        assert mod.scan(bad, threads, True, False) is None, at
