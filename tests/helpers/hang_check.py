"""Run a snippet in a fresh interpreter and fail the test if it does not return within a
generous grace: separates "returns" from "hangs" (catastrophic backtracking, an exponent
tower), never a speed target (those live in bench/)."""

from __future__ import annotations

import subprocess
import sys


def in_child(code: str, grace_s: float = 60) -> str:
    """``code``'s stdout, stripped; AssertionError when it runs past ``grace_s`` or fails."""
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=grace_s)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"ran past {grace_s} s") from None
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()
