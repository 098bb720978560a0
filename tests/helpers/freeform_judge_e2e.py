"""What the tests of freeform judge e2e share with other test files: ``EXAMPLE`` (moved here from test_freeform_judge_e2e.py)."""

from __future__ import annotations

from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "freeform"
