"""`tickloop chat` as a person scripts it: a real subprocess fed lines on stdin (shared by tests)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def run_chat(
    cwd: Path, session: str, script: str, env: Mapping[str, str], *, expect: int = 0
) -> subprocess.CompletedProcess[str]:
    """Run ``tickloop chat --session SESSION`` in ``cwd`` on ``script``; assert its exit code."""
    result = subprocess.run(
        [sys.executable, "-m", "tickloop.cli", "chat", "--session", session],
        input=script,
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == expect, result.stderr
    return result
