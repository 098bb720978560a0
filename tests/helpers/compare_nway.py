"""What the tests of compare nway share with other test files: ``_run`` (moved here from test_compare_nway.py)."""

from __future__ import annotations

from pathlib import Path

from queryeval.run.config import RunConfig
from queryeval.run.evaluate import start_run


def _run(examples_dir: Path, out: Path, responses: Path) -> Path:
    return start_run(RunConfig(suite=str(examples_dir / "sdmx" / "suite"),
                               responses=str(responses), out=str(out),
                               reports=False)).log.paths.batch
