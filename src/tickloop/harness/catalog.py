"""Read-only views of the sessions directory, for ``tickloop sessions list|show``.

Reading never writes: a turn a crash left open shows as open here, and gets its ``interrupted``
terminal only when the session is reopened for chat.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tickloop.harness.jsonl import MemoryLog, SessionError, read_records
from tickloop.harness.session import Session, check_header, replay, session_path


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One line of ``sessions list``."""

    session_id: str
    path: Path
    turns: int
    last_status: str  #: the newest turn's terminal status, ``open``, or ``empty``
    created_at: str


def load_session(sessions_dir: Path, session_id: str) -> Session:
    """The session as its file holds it, in memory only (no recovery record is written)."""
    path = session_path(sessions_dir, session_id)
    if not path.is_file():
        raise SessionError(f"no session {session_id!r} in {sessions_dir}")
    return _load(path, session_id)


def _load(path: Path, session_id: str | None) -> Session:
    records = read_records(path)
    if not records:
        raise SessionError(f"{path} is empty")
    header = records[0]
    sid = session_id if session_id is not None else str(header.get("id"))
    check_header(path, header, sid)
    session = Session(session_id=sid, log=MemoryLog())
    replay(session, path, records[1:])
    return session


def list_sessions(sessions_dir: Path) -> list[SessionSummary]:
    """Every readable session in ``sessions_dir``, oldest first; unreadable files are skipped."""
    if not sessions_dir.is_dir():
        return []
    out = []
    for path in sorted(sessions_dir.glob("session-*.jsonl")):
        try:
            session = _load(path, None)
            created = str(read_records(path)[0].get("createdAt", ""))
        except SessionError:
            continue
        out.append(_summary(session, path, created))
    return sorted(out, key=lambda s: s.created_at)


def _summary(session: Session, path: Path, created: str) -> SessionSummary:
    last = "empty"
    if session.turns:
        terminal = session.turns[-1].terminal
        last = "open" if terminal is None else str(terminal.status)
    return SessionSummary(session.session_id, path, len(session.turns), last, created)
