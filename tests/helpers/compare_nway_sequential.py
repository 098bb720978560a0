"""What the tests of compare nway sequential share with other test files: ``decided`` (moved here from test_compare_nway_sequential.py)."""

from __future__ import annotations

import pytest

from helpers.run_sequential import files, seq_run  # noqa: F401 - lab is a fixture


@pytest.fixture(scope="module")
def decided(lab, tmp_path_factory):
    root = tmp_path_factory.mktemp("nway_seq")
    assert seq_run(lab, root / "good", "good", "-q", "--no-report") == 0
    assert seq_run(lab, root / "bad", "bad", "-q", "--no-report") == 0
    return {"good": root / "good", "bad": root / "bad",
            "seq": {k: files(root / k)["metrics"]["sequential"] for k in ("good", "bad")}}
