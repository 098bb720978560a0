"""Hostile foreign suites (suite/foreign/records.py): a saved HF dataset whose state.json
names a data file outside its folder, or whose data file is a symbolic link to another
dataset (both read that other dataset as the suite: its rows would be sent to the system
under test); a Parquet bomb (792 bytes that decode to 2 GB: one 1 MiB value in a zstd
dictionary page, repeated 2,000 times)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from queryeval.errors import InputError
from queryeval.suite.foreign import records
from queryeval.suite.foreign.records import read_hf_records, read_parquet_records

datasets = pytest.importorskip("datasets")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

DATA = "data-00000-of-00001.arrow"


def saved(folder: Path, question: str) -> Path:
    datasets.Dataset.from_dict({"question": [question], "answer": ["a"]}).save_to_disk(
        str(folder))
    return folder


def test_a_data_file_named_outside_the_folder_is_refused(tmp_path):
    saved(tmp_path / "secret", "SECRET question")
    evil = saved(tmp_path / "evil", "q")
    for name in (f"../secret/{DATA}", str(tmp_path / "secret" / DATA)):
        state = json.loads((evil / "state.json").read_text())
        state["_data_files"] = [{"filename": name}]
        (evil / "state.json").write_text(json.dumps(state))
        with pytest.raises(InputError, match="not a file name inside the folder") as err:
            read_hf_records(evil)
        assert "SECRET" not in str(err.value)


def test_a_data_file_linked_out_of_the_folder_is_refused(tmp_path):
    saved(tmp_path / "secret", "SECRET question")
    evil = saved(tmp_path / "evil", "q")
    os.remove(evil / DATA)
    os.symlink(tmp_path / "secret" / DATA, evil / DATA)
    with pytest.raises(InputError, match="symbolic link"):
        read_hf_records(evil)


def test_a_plain_saved_dataset_still_reads(tmp_path):
    rows = read_hf_records(saved(tmp_path / "ok", "q1"))
    assert [r.data for r in rows] == [{"question": "q1", "answer": "a"}]


def bomb(path: Path, rows: int = 2000) -> Path:
    value = "a" * (1 << 20)
    column = pa.array([value], pa.string()).dictionary_encode().take(pa.array([0] * rows))
    pq.write_table(pa.table({"question": column, "answer": ["1"] * rows}), path,
                   compression="zstd", use_dictionary=True)
    assert path.stat().st_size < 10_000  # a few hundred bytes on disk
    return path


def test_a_parquet_bomb_is_refused_while_decoding(tmp_path, monkeypatch):
    # the old reader decoded all 2 GB (read_table + to_pylist) before looking at a row
    monkeypatch.setattr(records, "MAX_DECODED_BYTES", 32 << 20)
    with pytest.raises(InputError, match="decodes to more than 32 MiB"):
        read_parquet_records(bomb(tmp_path / "bomb.parquet"))


def test_a_parquet_declaring_more_than_the_cap_is_refused_before_reading(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "MAX_DECODED_BYTES", 512 << 10)  # the value alone is 1 MiB
    with pytest.raises(InputError, match=r"decodes to more than 0\.5 MiB of data \(1,04"):
        read_parquet_records(bomb(tmp_path / "bomb.parquet", rows=3))


def test_a_small_parquet_still_reads_every_row(tmp_path):
    path = tmp_path / "ok.parquet"
    pq.write_table(pa.table({"question": [f"q{i}" for i in range(1000)],
                             "answer": [str(i) for i in range(1000)]}), path)
    rows = read_parquet_records(path)
    assert [r.data["answer"] for r in rows] == [str(i) for i in range(1000)]
    assert rows[999].where == {"record": "999"}


def beir_folder(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "title": "", "text": "t"}) + "\n")
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "question?"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return root


@pytest.mark.parametrize("name", ["queries.jsonl", "corpus.jsonl", "qrels/test.tsv"])
def test_a_beir_file_linked_out_of_the_folder_is_refused(tmp_path, name):
    from queryeval.suite.foreign import load_beir

    folder = beir_folder(tmp_path / "beir")
    assert len(load_beir(folder).cases) == 1
    other = beir_folder(tmp_path / "private")
    (folder / name).unlink()
    os.symlink(other / name, folder / name)
    with pytest.raises(InputError, match="symbolic link"):
        load_beir(folder)
