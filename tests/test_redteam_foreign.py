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
from queryeval.suite.foreign.records import read_hf_records

datasets = pytest.importorskip("datasets")

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
