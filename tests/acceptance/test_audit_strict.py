"""`tickloop audit verify|replay` and `chat` on hostile ledgers, as a person runs them."""

from __future__ import annotations

import os
import shutil
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


def test_verify_takes_several_files_and_a_directory_and_prints_a_total(tmp_path: Path) -> None:
    """One summary line per file, violations under their file, then a total; exit 1 if any fails."""
    audit = tmp_path / "audit"
    audit.mkdir()
    for name in ("valid", "steps_mismatch"):
        shutil.copy(GOLDEN / f"{name}.jsonl", audit / f"{name}.jsonl")
    (audit / "notes.txt").write_text("not a ledger")
    result = tickloop("audit", "verify", str(audit), str(GOLDEN / "valid_keyed.jsonl"))
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{audit / 'steps_mismatch.jsonl'}:11: verify.steps_mismatch: ")
    assert lines[1].startswith(f"{audit / 'steps_mismatch.jsonl'}: 1 violation(s): 17 records")
    assert lines[2].startswith(f"{audit / 'valid.jsonl'}: ok: 17 records")
    assert lines[3].startswith(f"{GOLDEN / 'valid_keyed.jsonl'}: ok: 17 records")
    assert "macs not checked (no --key-env)" in lines[3]
    assert lines[4] == "total: 3 files, 2 ok, 1 with violation(s); 51 records, 1 violation(s)"
    assert len(lines) == 5


def test_verify_of_clean_files_exits_0_and_an_unreadable_one_exits_2(tmp_path: Path) -> None:
    """All files holding is exit 0; a missing one among them is named on its line and exits 2."""
    ok = tickloop("audit", "verify", str(GOLDEN / "valid.jsonl"), str(GOLDEN / "valid_unchained.jsonl"))
    assert ok.returncode == 0, ok.stdout
    total = "total: 2 files, 2 ok, 0 with violation(s); 34 records, 0 violation(s)"
    assert ok.stdout.splitlines()[-1] == total
    missing = tickloop("audit", "verify", str(GOLDEN / "valid.jsonl"), str(tmp_path / "gone.jsonl"))
    assert missing.returncode == 2
    assert f"{tmp_path / 'gone.jsonl'}: cannot read ledger" in missing.stdout
    assert missing.stdout.splitlines()[-1].endswith("1 unreadable; 17 records, 0 violation(s)")


def test_an_empty_directory_is_a_usage_error(tmp_path: Path) -> None:
    """A directory holding no *.jsonl says so and exits 2."""
    result = tickloop("audit", "verify", str(tmp_path))
    assert result.returncode == 2
    assert "no *.jsonl ledger in this directory" in result.stderr


def test_require_chain_and_require_key_refuse_what_the_plain_check_only_notes(tmp_path: Path) -> None:
    """--require-chain fails an unchained file; --require-key needs --key-env and fails an unkeyed part."""
    plain = tickloop("audit", "verify", str(GOLDEN / "valid_unchained.jsonl"))
    assert plain.returncode == 0
    assert "no hash chain" in plain.stdout
    chain = tickloop("audit", "verify", "--require-chain", str(GOLDEN / "valid_unchained.jsonl"))
    assert chain.returncode == 1
    assert ":1: verify.unchained: " in chain.stdout
    no_key = tickloop("audit", "verify", "--require-key", str(GOLDEN / "valid.jsonl"))
    assert no_key.returncode == 2
    assert "--require-key needs --key-env" in no_key.stderr
    env_key = {"GOLDEN_KEY": "golden-audit-key"}
    keyed = tickloop_env(env_key, "audit", "verify", "--key-env", "GOLDEN_KEY", str(GOLDEN / "unkeyed.jsonl"))
    assert keyed.returncode == 0, keyed.stdout
    assert "keyed chain on lines 7-18 only" in keyed.stdout
    required = tickloop_env(
        env_key, "audit", "verify", "--key-env", "GOLDEN_KEY", "--require-key", str(GOLDEN / "unkeyed.jsonl")
    )
    assert required.returncode == 1
    assert ":1: verify.unkeyed: " in required.stdout


def tickloop_env(extra: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TICKLOOP_CONFIG": os.devnull, **extra}
    return subprocess.run(
        [sys.executable, "-m", "tickloop", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env=env,
    )


def _chat_with(cwd: Path, tick: str, script: str, extra: dict[str, str] | None = None) -> None:
    (cwd / "config.toml").write_text(f"[tick]\ndelayMs = 0\n{tick}\n")
    env = {**os.environ, "TICKLOOP_CONFIG": str(cwd / "config.toml"), **(extra or {})}
    result = subprocess.run(
        [sys.executable, "-m", "tickloop", "chat", "--session", "m"],
        input=script,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_turning_the_key_on_then_the_chain_off_never_reads_as_tampering(tmp_path: Path) -> None:
    """An unkeyed session later keyed, then unchained, verifies under each rule part by part."""
    key = {"M_KEY": "a test key, not a secret"}
    _chat_with(tmp_path, "chain = true", "hello\n/tick 1\n")
    _chat_with(tmp_path, 'auditKeyEnv = "M_KEY"', "/tick 1\n", key)
    ledger = tmp_path / ".tickloop-audit" / session_file_name("m")
    keyed = tickloop_env(key, "audit", "verify", "--strict", "--key-env", "M_KEY", str(ledger))
    assert keyed.returncode == 0, keyed.stdout
    assert "keyed chain on lines" in keyed.stdout
    assert "hash chain intact" in keyed.stdout
    required = tickloop_env(key, "audit", "verify", "--key-env", "M_KEY", "--require-key", str(ledger))
    assert required.returncode == 1
    assert ":1: verify.unkeyed: " in required.stdout
    _chat_with(tmp_path, "chain = false", "/tick 1\n")
    plain = tickloop("audit", "verify", "--strict", str(ledger))
    assert plain.returncode == 0, plain.stdout
    assert "chain_broken" not in plain.stdout
    assert "hash chain on lines 1-" in plain.stdout
    modes = [line for line in ledger.read_bytes().splitlines() if b'"type":"ledger_mode"' in line]
    assert len(modes) == 2
    assert b'"chain":true,"keyed":true' in modes[0]
    assert b'"chain":false,"keyed":false' in modes[1]
