"""`make demo` keeps working: the operator day and the chat demo, with their key lines asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_demo_runs_an_operator_day_and_a_verified_tick_session() -> None:
    """The demo's executor prints the seed's summary line, the approved email reaches the SMTP sink,
    the doer waits for the person, and the chat's ledger verifies."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = result.stdout
    assert result.returncode == 0, out[-3000:] + result.stderr[-3000:]
    assert "tick done: considered=2 executed=2 skipped=0 failed=0 handoff=1 dry=true" in out
    assert "DRY-RUN spend->notify+handoff: WOULD notify the person to purchase manually" in out
    assert "fast: noop waiting for the person's decision on intent 2" in out
    assert "tick done: considered=1 executed=1 skipped=0 failed=0 handoff=0 dry=false" in out
    assert "SMTP sink received 1 message(s):\n  from operator@example.org to ada@example.org" in out
    assert "⏱ tick (tickloop 3/3)" in out
    assert "⚙ list_dir" in out
    assert "→ ok (" in out
    assert "ok: 11 records, 1 runs, 3 time steps enqueued" in out
