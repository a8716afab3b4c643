"""`tickloop audit verify|replay` and `chat` on hostile ledgers, as a person runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tickloop.audit import session_file_name

GOLDEN = Path(__file__).parents[1] / "golden" / "ledgers"
DEEP = b'{"a":' + b"[" * 1000 + b"]" * 1000 + b"}"


def tickloop(*args: str, cwd: Path | None = None, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TICKLOOP_CONFIG": os.devnull}
    return subprocess.run(
        [sys.executable, "-m", "tickloop", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        cwd=cwd,
        env=env,
        input=stdin,
    )


def _deep_ledger(directory: Path, session: str = "golden") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / session_file_name(session)
    path.write_bytes((GOLDEN / "valid_unchained.jsonl").read_bytes() + DEEP + b"\n")
    return path


def test_verify_reports_a_deep_record_as_malformed_not_a_traceback(tmp_path: Path) -> None:
    """A 1,000-deep record is one verify.malformed line naming line 18, exit 1, no traceback."""
    path = _deep_ledger(tmp_path)
    result = tickloop("audit", "verify", str(path))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert f"{path}:18: verify.malformed: nested deeper than" in result.stdout


def test_replay_reports_a_deep_record_as_malformed_not_a_traceback(tmp_path: Path) -> None:
    """Replay of the same ledger says the same and exits 1; the transcript is never the reason."""
    path = _deep_ledger(tmp_path / ".tickloop-audit")
    sessions = tmp_path / ".tickloop-sessions"
    sessions.mkdir()
    (sessions / session_file_name("golden")).write_text('{"type":"session","id":"golden","version":1}\n')
    result = tickloop("audit", "replay", str(path), "--sessions-dir", str(sessions))
    assert "Traceback" not in result.stderr
    assert result.returncode == 1, result.stderr
    assert f"{path}:18: verify.malformed: nested deeper than" in result.stdout


def test_chat_refuses_a_session_whose_ledger_ends_in_a_deep_record(tmp_path: Path) -> None:
    """`chat --session` refuses with one line naming the ledger file and the line, exit 2."""
    path = _deep_ledger(tmp_path / ".tickloop-audit")
    result = tickloop("chat", "--session", "golden", cwd=tmp_path, stdin="hello\n")
    assert result.returncode == 2, result.stdout
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"tickloop: {path}: line 18 is not a valid record (nested deeper than 32 levels); not appending"
    ]
