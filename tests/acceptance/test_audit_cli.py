"""`tickloop audit verify|show` as a person runs them: exit codes, summaries, violations by line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).parents[1] / "golden" / "ledgers"


def tickloop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tickloop", *args], capture_output=True, text=True, check=False, timeout=120
    )


def test_verify_ok_exits_0_with_one_summary_line() -> None:
    """A valid ledger verifies with exit 0 and a single summary line."""
    result = tickloop("audit", "verify", str(GOLDEN / "valid.jsonl"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines() == [
        (
            f"{GOLDEN / 'valid.jsonl'}: ok: 17 records, 2 runs, 4 time steps enqueued, session 'golden', "
            "hash chain intact, no macs, file name not checked (not a session file name)"
        )
    ]


def test_verify_violation_exits_1_listing_line_and_rule() -> None:
    """A broken ledger exits 1 and lists each violation as path:line: rule: message."""
    result = tickloop("audit", "verify", str(GOLDEN / "enqueue_beyond_target.jsonl"))
    assert result.returncode == 1
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"{GOLDEN / 'enqueue_beyond_target.jsonl'}:17: verify.enqueue_beyond_target: ")


def test_verify_missing_file_is_a_clear_usage_error(tmp_path: Path) -> None:
    """Verifying a path that does not exist says so and exits 2, with no traceback."""
    result = tickloop("audit", "verify", str(tmp_path / "nope.jsonl"))
    assert result.returncode == 2
    assert "cannot read ledger" in result.stderr
    assert "Traceback" not in result.stderr


def test_show_prints_a_table_even_with_bad_lines() -> None:
    """`audit show` renders every record, marking unreadable lines instead of failing."""
    result = tickloop("audit", "show", str(GOLDEN / "malformed.jsonl"))
    assert result.returncode == 0, result.stderr
    assert "loop_armed" in result.stdout
    assert "unreadable" in result.stdout
