"""The compiled reader's file read (``trec._read_whole``: into a numpy array sized from
fstat): the bytes the file holds, also when it grew or shrank between the fstat and the
read, and the same columns as the exact reader."""

from __future__ import annotations

import os

import pytest

from queryeval.metrics.ranking._columns import names_list
from queryeval.suite import trec

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
    assert bytes(trec._read_whole(path)) == TEXT


def test_read_whole_of_an_empty_file(tmp_path) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(b"")
    assert bytes(trec._read_whole(path)) == b""


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
