"""What ``queryeval run`` imports: not scipy.stats (about 0.5 s of CPU, issue 25's fixed costs).

The statistics module imports scipy only inside ``paired_t_test``; a run, with or without its
report, reads its batch back (``qe.Run.batch_id`` loads ``report/compare.py`` and
``metrics/stats.py``) but tests nothing. Checked in a fresh interpreter, since the test
process itself has imported scipy long before.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "examples" / "sdmx" / "suite"
RESPONSES = REPO / "examples" / "sdmx" / "responses.jsonl"

PROBE = """
import json, sys
from queryeval.cli.app import main
code = main(sys.argv[1:])
scipy = sorted(m for m in sys.modules if m.startswith("scipy"))
print(json.dumps({"code": code, "modules": scipy}))
"""


@pytest.mark.parametrize("report", [[], ["--no-report"]])
def test_a_recorded_run_does_not_import_scipy_stats(tmp_path, report):
    argv = ["run", str(SUITE), "--responses", str(RESPONSES), "--out", str(tmp_path / "out"),
            "-q", *report]
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["code"] == 0
    assert "scipy.stats" not in seen["modules"], seen["modules"]
    assert list((tmp_path / "out").rglob("batch_*.json"))  # it did run and read its batch back


def test_the_t_test_still_uses_scipy():
    """The lazily imported t-test against a hand computation. d = b - a = [1, 2, 3, 5]: mean
    2.75, sd 1.70783, t = 2.75 / (1.70783 / 2) = 3.22047 on 3 df; Student's t with 3 df has
    the closed form F(t) = 1/2 + (a / (1 + a^2) + atan(a)) / pi, a = t / sqrt(3), so the
    two-sided p = 2 (1 - F(t)) = 0.048567."""
    from queryeval.metrics.stats import paired_t_test

    res = paired_t_test([0, 0, 0, 0], [1, 2, 3, 5])
    assert res.statistic == pytest.approx(3.22047, abs=1e-5)
    assert res.p_value == pytest.approx(0.048567, abs=1e-6)
