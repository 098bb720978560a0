"""What the tests of charts share with other test files: ``HOSTILE``, ``pair`` (moved here from test_charts.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.sdmx_variants import FRANCE, USA

HOSTILE = '<script>alert("x")</script> \'q\' & <b>'


@pytest.fixture(scope="module")
def pair(tmp_path_factory, examples_dir):
    from helpers.sdmx_variants import variant_responses as _responses
    from queryeval.run.config import RunConfig
    from queryeval.run.evaluate import start_run
    from queryeval.run.results import RunResults

    tmp = tmp_path_factory.mktemp("charts")

    def run(name: str, responses: Path, label: str) -> Path:
        return start_run(RunConfig(suite=str(examples_dir / "sdmx" / "suite"), name=label,
                                   responses=str(responses), out=str(tmp / name),
                                   reports=False)).log.paths.batch

    a = run("a", examples_dir / "sdmx" / "responses.jsonl", "base")
    records = RunResults.open(a).records
    b = run("b", _responses(records, tmp / "b.jsonl", fix={FRANCE}, empty={USA}), HOSTILE)
    c = run("c", _responses(records, tmp / "c.jsonl", empty={r["case_id"] for r in records}),
            "silent")
    return a, b, c
