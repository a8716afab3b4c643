"""`tickloop audit verify|replay|seal` on hostile input, and the keyed chain and seal, as real subprocesses.

Peak memory is the child's own ``ru_maxrss`` (``resource.getrusage(RUSAGE_CHILDREN)`` read in a
wrapper process that runs only that one command).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.chat_process import run_chat

from tickloop.audit import session_file_name

TICKLOOP = [sys.executable, "-m", "tickloop.cli"]
GOLDEN = Path(__file__).parents[1] / "golden" / "ledgers"
MB = 1 << 20
#: Runs one tickloop command as a child and prints its exit code and peak RSS (KiB) as JSON.
MEASURE = (
    "import json, resource, subprocess, sys\n"
    "cmd = [sys.executable, '-m', 'tickloop.cli', *sys.argv[1:]]\n"
    "r = subprocess.run(cmd, capture_output=True, timeout=60)\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "print(json.dumps({'rc': r.returncode, 'kib': peak, 'out': r.stdout.decode(errors='replace')[-2000:],"
    " 'err': r.stderr.decode(errors='replace')[-2000:]}))\n"
)


def measured(*args: str) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-c", MEASURE, *args], capture_output=True, text=True, timeout=90, check=True
    )
    return dict(json.loads(result.stdout))


def tickloop(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TICKLOOP, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env or dict(os.environ),
    )


def test_dev_zero_is_refused_at_once_in_bounded_memory() -> None:
    """`verify /dev/zero` ends within the time limit with a clear error, never reading it."""
    run = measured("audit", "verify", "/dev/zero")
    assert run["rc"] == 2
    assert "not a regular file" in str(run["err"])
    assert int(str(run["kib"])) < 100 * 1024


def test_a_200_mb_line_is_one_violation_in_bounded_memory(tmp_path: Path) -> None:
    """A 200 MB record is reported as too large, read in chunks: peak RSS stays under 100 MB."""
    path = tmp_path / "huge.jsonl"
    valid = (GOLDEN / "valid.jsonl").read_bytes()
    with path.open("wb") as handle:
        handle.write(valid)
        block = b"x" * MB
        for _ in range(200):
            handle.write(block)
        handle.write(b"\n")
    run = measured("audit", "verify", str(path))
    assert run["rc"] == 1
    assert "18: verify.record_too_large: a record of 209715200 bytes" in str(run["out"])
    assert int(str(run["kib"])) < 100 * 1024
    replayed = measured("audit", "replay", str(path), "--sessions-dir", str(tmp_path))
    assert replayed["rc"] == 2  # no transcript of session "golden" there: a clear error, bounded too
    assert "cannot read transcript" in str(replayed["err"])
    assert int(str(replayed["kib"])) < 100 * 1024


def test_binary_data_and_directories_end_with_clear_errors(tmp_path: Path) -> None:
    """Random bytes are violations by line; a directory without ledgers is refused by name; neither
    gives a traceback."""
    blob = tmp_path / "blob.bin"
    blob.write_bytes(bytes(range(256)) * 64 + b"\n\x00\xff\n")
    result = tickloop("audit", "verify", str(blob))
    assert result.returncode == 1
    assert "verify.malformed" in result.stdout
    directory = tickloop("audit", "verify", str(tmp_path))
    assert directory.returncode == 2
    assert f"{tmp_path}: no *.jsonl ledger in this directory" in directory.stderr
    for output in (result.stderr, directory.stderr):
        assert "Traceback" not in output


def test_only_the_first_100_violations_are_listed_then_a_count(tmp_path: Path) -> None:
    """A file of 150 bad lines lists 100 violations, then says how many more there are."""
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"nope\n" * 150)
    result = tickloop("audit", "verify", str(path))
    assert result.returncode == 1
    listed = [line for line in result.stdout.splitlines() if ": verify.malformed: " in line]
    assert len(listed) == 100
    assert "... and 50 more violation(s) not listed" in result.stdout
    assert "150 violation(s)" in result.stdout.splitlines()[-1]


def test_max_record_bytes_is_configurable() -> None:
    """The cap is a flag: the golden record of 4 KiB passes at the default and fails under 2 KiB."""
    path = str(GOLDEN / "record_too_large.jsonl")
    assert tickloop("audit", "verify", path).returncode == 0
    small = tickloop("audit", "verify", "--max-record-bytes", "2048", path)
    assert small.returncode == 1
    assert "verify.record_too_large" in small.stdout


def test_strict_makes_open_runs_and_torn_tails_violations() -> None:
    """Without --strict an open run is reported in the summary; with it, it is a violation."""
    path = str(GOLDEN / "open_run.jsonl")
    relaxed = tickloop("audit", "verify", path)
    assert relaxed.returncode == 0
    assert "1 open run" in relaxed.stdout
    strict = tickloop("audit", "verify", "--strict", path)
    assert strict.returncode == 1
    assert "verify.open_run" in strict.stdout
    torn = tickloop("audit", "verify", "--strict", str(GOLDEN / "torn_tail.jsonl"))
    assert torn.returncode == 1
    assert "verify.torn_tail" in torn.stdout


def test_keyed_chain_verifies_with_its_key_and_not_with_another(tmp_path: Path) -> None:
    """--key-env NAME checks every record's HMAC; a wrong key, or an edit without the key, fails."""
    env = {**os.environ, "GOLDEN_KEY": "golden-audit-key", "WRONG_KEY": "guess"}
    keyed = str(GOLDEN / "valid_keyed.jsonl")
    good = tickloop("audit", "verify", "--key-env", "GOLDEN_KEY", keyed, env=env)
    assert good.returncode == 0, good.stdout
    assert "keyed chain verified" in good.stdout
    wrong = tickloop("audit", "verify", "--key-env", "WRONG_KEY", keyed, env=env)
    assert wrong.returncode == 1
    assert "verify.mac_mismatch" in wrong.stdout
    unchained = tickloop("audit", "verify", "--key-env", "GOLDEN_KEY", str(GOLDEN / "valid.jsonl"), env=env)
    assert unchained.returncode == 1
    missing = tickloop("audit", "verify", "--key-env", "NOT_SET_ANYWHERE", keyed, env=env)
    assert missing.returncode == 2
    assert "NOT_SET_ANYWHERE" in missing.stderr


def test_seal_then_verify_sealed_proves_the_prefix(tmp_path: Path) -> None:
    """A seal printed now still matches after appends, and stops matching after any edit before it."""
    path = tmp_path / "l.jsonl"
    lines = (GOLDEN / "valid.jsonl").read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:10]))
    sealed = tickloop("audit", "seal", str(path))
    assert sealed.returncode == 0
    line = sealed.stdout.strip()
    assert line.startswith("tickloop-seal v1 records=10 sha256:")
    path.write_bytes(b"".join(lines))
    assert tickloop("audit", "verify", "--sealed", line, str(path)).returncode == 0
    path.write_bytes(b"".join(lines).replace(b"09:00:02.000Z", b"09:00:02.001Z", 1))
    edited = tickloop("audit", "verify", "--sealed", line, str(path))
    assert edited.returncode == 1
    assert "verify.seal_mismatch" in edited.stdout
    bad = tickloop("audit", "verify", "--sealed", "not a seal", str(path))
    assert bad.returncode == 2
    assert "not a seal line" in bad.stderr


def test_keyed_chat_ledger_from_audit_key_env(workdir: Path) -> None:
    """`[tick] auditKeyEnv` names the variable; chat writes macs with it and verify --key-env checks them."""
    (workdir / "c.toml").write_text('[tick]\ndelayMs = 0\nauditKeyEnv = "MY_AUDIT_KEY"\n')
    env = {**os.environ, "TICKLOOP_CONFIG": str(workdir / "c.toml"), "MY_AUDIT_KEY": "s3cret-key-value"}
    run_chat(workdir, "k", "hello\n/tick 2\n", env)
    path = workdir / ".tickloop-audit" / session_file_name("k")
    assert b"s3cret-key-value" not in path.read_bytes()
    assert all(b'"mac":"hmac-sha256:' in line for line in path.read_bytes().splitlines())
    checked = tickloop("audit", "verify", "--key-env", "MY_AUDIT_KEY", str(path), env=env)
    assert checked.returncode == 0, checked.stdout
    assert "keyed chain verified" in checked.stdout


def test_chat_refuses_to_start_when_the_audit_key_variable_is_missing(workdir: Path) -> None:
    """`auditKeyEnv` naming an unset variable stops chat at startup (exit 2), naming the variable."""
    (workdir / "c.toml").write_text('[tick]\nauditKeyEnv = "NO_SUCH_AUDIT_KEY"\n')
    env = {k: v for k, v in os.environ.items() if k != "NO_SUCH_AUDIT_KEY"}
    env["TICKLOOP_CONFIG"] = str(workdir / "c.toml")
    result = run_chat(workdir, "k", "hello\n", env, expect=2)
    assert "NO_SUCH_AUDIT_KEY" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (workdir / ".tickloop-sessions").exists()
