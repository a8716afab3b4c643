"""Issue 26 item 1: every reader of a ledger or transcript has the depth bound. A record nested 1,000
levels deep (about 2 KB) is an unreadable line to each of them, never a RecursionError: ``audit show``,
the dashboard's session page, and the experiment export's readers (verify, replay and ``chat`` are
tested in tests/acceptance/test_audit_strict.py, the transcript reader in test_depth_bound.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bench.bench_audit import SESSION, write_session

from tickloop.audit import session_file_name
from tickloop.errors import LedgerError

DEEP = b'{"a":' + b"[" * 1000 + b"]" * 1000 + b"}\n"


@pytest.fixture
def session(tmp_path: Path) -> tuple[Path, Path]:
    """A session's transcript dir and audit dir, the ledger ending in the deep record."""
    ledger, sessions = write_session(tmp_path, 40)
    audit = tmp_path / "audit"
    audit.mkdir()
    shutil.copy(ledger, audit / session_file_name(SESSION))
    with (audit / session_file_name(SESSION)).open("ab") as handle:
        handle.write(DEEP)
    return sessions, audit


def test_audit_show_marks_the_deep_record_unreadable(session: tuple[Path, Path]) -> None:
    _, audit = session
    result = subprocess.run(
        [sys.executable, "-m", "tickloop", "audit", "show", str(audit / session_file_name(SESSION))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "unreadable" in result.stdout
    assert "nested deeper" in result.stdout


def test_the_dashboard_session_page_skips_the_deep_record(session: tuple[Path, Path]) -> None:
    from tickloop.web.pages import session_page  # noqa: PLC0415

    sessions, audit = session
    page = session_page(sessions, audit, SESSION)
    lines = (audit / session_file_name(SESSION)).read_bytes().count(b"\n")
    assert len(page.records) == lines - 1  # every record but the deep one


def test_the_experiment_export_readers_refuse_the_deep_record_by_line(session: tuple[Path, Path]) -> None:
    from tickloop.experiment import dataset  # noqa: PLC0415

    sessions, audit = session
    ledger = audit / session_file_name(SESSION)
    last = ledger.read_bytes().count(b"\n")
    with pytest.raises(LedgerError, match=rf"line {last}: nested deeper"):
        dataset._ledger_facts(ledger)
    transcript = sessions / session_file_name(SESSION)
    with transcript.open("ab") as handle:
        handle.write(DEEP)
    assert dataset._replies(transcript)  # the deep line skipped, the replies read
