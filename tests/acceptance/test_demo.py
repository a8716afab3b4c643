"""`make demo` keeps working: its scripted chat runs three time steps and the ledger verifies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_demo_runs_a_verified_tick_session() -> None:
    """The demo's chat runs `/tick 3` on the offline model and its ledger passes verification."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "⏱ tick (tickloop 3/3)" in result.stdout
    assert "loop_complete" in result.stdout
    assert "ok: 11 records, 1 runs, 3 time steps enqueued" in result.stdout
