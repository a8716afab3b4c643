"""The ledger on disk: durable appends, safe names inside the audit dir, private permissions, crash tails."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tickloop.audit import open_session_ledger, read_ledger, session_file_name, verify_file
from tickloop.audit.ledger import LedgerFile
from tickloop.errors import LedgerError
from tickloop.protocol.ledger import RecordType, record

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def rejected(session: str = "s", n: int = 0) -> dict[str, object]:
    return record(
        RecordType.COMMAND_REJECTED,
        recorded_at=NOW,
        session_id=session,
        rule="command.extra_argument",
        token=f"t{n}",
    )


@pytest.mark.parametrize(
    "session_id",
    [
        "../x",
        "a/b",
        "CON",
        "nul\x00byte",
        "x" * 300,
        "..",
        ".",
        "a\\b",
        "~root",
        "ünïcødé",
        "a b",
        "_5F",
        "é" * 200,
    ],
)
def test_hostile_session_ids_stay_inside_the_audit_dir(tmp_path: Path, session_id: str) -> None:
    """No session id can name a file outside the audit dir, a hidden file, or a device name."""
    with open_session_ledger(tmp_path / "audit", session_id) as ledger:
        ledger.append(rejected(session_id))
    files = list((tmp_path / "audit").iterdir())
    assert len(files) == 1
    name = files[0].name
    assert name.startswith("session-")
    assert name.endswith(".jsonl")
    assert len(name) <= 255
    assert "/" not in name
    assert "\\" not in name
    assert "\x00" not in name
    assert ".." not in name
    assert list(tmp_path.iterdir()) == [tmp_path / "audit"]


@settings(max_examples=3_000, deadline=None)
@given(st.text(min_size=1, max_size=150), st.text(min_size=1, max_size=150))
def test_different_session_ids_never_share_a_file(a: str, b: str) -> None:
    """The name mapping is injective: two sessions never write into one ledger."""
    try:
        name_a, name_b = session_file_name(a), session_file_name(b)
    except LedgerError:
        return  # lone surrogates: refused, never written
    assert (name_a == name_b) == (a == b)


def test_empty_or_unencodable_session_ids_are_refused() -> None:
    """A session id must be a non-empty, well-formed string."""
    for bad in ("", "\ud800"):
        with pytest.raises(LedgerError):
            session_file_name(bad)


def test_audit_dir_is_0700_and_files_are_0600(tmp_path: Path) -> None:
    """A ledger is session metadata: only its owner may read it, whatever the umask."""
    old = os.umask(0)
    try:
        with open_session_ledger(tmp_path / "audit", "s") as ledger:
            ledger.append(rejected())
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "audit").stat().st_mode) == 0o700
    assert stat.S_IMODE(ledger.path.stat().st_mode) == 0o600


def test_appends_stamp_gapless_seq_across_reopen(tmp_path: Path) -> None:
    """seq continues where the file left off when a later process reopens the ledger."""
    with open_session_ledger(tmp_path, "s", chain=True) as ledger:
        for i in range(3):
            ledger.append(rejected(n=i))
    with open_session_ledger(tmp_path, "s", chain=True) as ledger:
        assert ledger.append(rejected(n=3))["seq"] == 4
    report, _ = verify_file(ledger.path)
    assert report.ok, report.violations
    assert report.chained
    assert [r["seq"] for r in read_ledger(ledger.path).records()] == [1, 2, 3, 4]


def test_each_append_is_fsynced_before_it_returns(tmp_path: Path) -> None:
    """With the default policy every record is durable when append returns; batching says so."""
    calls: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "fsync", counting)
        with LedgerFile(tmp_path / "a.jsonl") as durable:
            for i in range(5):
                durable.append(rejected(n=i))
                assert len(calls) == i + 1
        calls.clear()
        with LedgerFile(tmp_path / "b.jsonl", fsync_every=4) as batched:
            for i in range(5):
                batched.append(rejected(n=i))
            assert len(calls) == 1
        assert len(calls) == 2  # close() syncs the rest


def test_reopen_after_a_torn_write_cuts_only_the_unacknowledged_tail(tmp_path: Path) -> None:
    """A crash mid-append loses only the record that was never acknowledged; earlier lines survive."""
    path = tmp_path / "s.jsonl"
    with LedgerFile(path, chain=True) as ledger:
        ledger.append(rejected(n=1))
        ledger.append(rejected(n=2))
    intact = path.read_bytes()
    path.write_bytes(intact + b'{"schema":"tickloop.au')
    assert read_ledger(path).torn_tail == b'{"schema":"tickloop.au'
    with LedgerFile(path, chain=True) as ledger:
        assert ledger.torn_repaired
        ledger.append(rejected(n=3))
    assert path.read_bytes().startswith(intact)
    report, read = verify_file(path)
    assert report.ok, report.violations
    assert read.torn_tail is None


def test_refuses_to_append_after_a_corrupt_last_line(tmp_path: Path) -> None:
    """A complete but unreadable last line is not guessed around: appending stops with the line number."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"garbage\n")
    with pytest.raises(LedgerError, match="line 1"):
        LedgerFile(path)


def test_kill_9_mid_stream_never_damages_earlier_lines(tmp_path: Path) -> None:
    """A process killed while appending leaves a ledger whose complete lines all verify."""
    code = (
        "import sys; from pathlib import Path; from datetime import UTC, datetime\n"
        "from tickloop.audit.ledger import LedgerFile\n"
        "from tickloop.protocol.ledger import RecordType, record\n"
        "now = datetime(2026, 1, 1, tzinfo=UTC)\n"
        "with LedgerFile(Path(sys.argv[1]), chain=True) as f:\n"
        "    i = 0\n"
        "    while True:\n"
        "        i += 1\n"
        "        rec = record(RecordType.COMMAND_REJECTED, recorded_at=now, session_id='s',\n"
        "                     rule='command.extra_argument', token=f't{i}')\n"
        "        f.append(rec)\n"
        "        if i == 50: print('ready', flush=True)\n"
    )
    path = tmp_path / "s.jsonl"
    with subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        proc.kill()
    report, _ = verify_file(path)
    assert report.ok, report.violations
    assert report.records >= 50
