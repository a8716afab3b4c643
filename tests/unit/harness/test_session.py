"""Sessions on disk: append-only, restored on reopen, crash-safe, and confined to their directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tickloop.harness import SessionError, open_session, session_path
from tickloop.harness.catalog import list_sessions, load_session
from tickloop.models import Usage
from tickloop.protocol.envelope import PLUGIN_SOURCE, USER_SOURCE, Message
from tickloop.protocol.predicates import TerminalStatus
from tickloop.testing import FakeClock


def user(text: str) -> Message:
    return Message(role="user", content=(text,), source=USER_SOURCE)


def test_a_closed_session_reopens_with_its_turns_terminals_and_usage(tmp_path: Path) -> None:
    """Reopening a session restores every turn, reply, terminal status and usage."""
    session = open_session(tmp_path, "demo", clock=FakeClock())
    session.start_turn(user("hello"))
    session.add_reply("hi")
    session.end_turn(TerminalStatus.COMPLETED, usage=Usage(3, 1))
    session.start_turn(Message(role="user", content=("tick",), source=PLUGIN_SOURCE, meta={"step": 1}))
    session.end_turn(TerminalStatus.ERROR, detail="boom")
    session.close()
    again = open_session(tmp_path, "demo")
    assert [t.input.text for t in again.turns] == ["hello", "tick"]
    assert again.turns[0].reply is not None
    assert again.turns[0].reply.text == "hi"
    assert again.turns[0].terminal is not None
    assert again.turns[0].terminal.usage == Usage(3, 1)
    assert again.turns[1].input.meta == {"step": 1}
    assert again.view().time_steps == 1
    assert again.view().latest_terminal is TerminalStatus.ERROR
    assert again.recovered == []
    again.close()


def test_a_completed_turn_without_usage_says_the_model_reported_none(tmp_path: Path) -> None:
    """The session file says `usageReported: false` for a turn the model finished without token
    counts, and says nothing about usage for a turn that never finished (interrupted, error)."""
    session = open_session(tmp_path, "quiet", clock=FakeClock())
    for status in (TerminalStatus.COMPLETED, TerminalStatus.INTERRUPTED, TerminalStatus.ERROR):
        session.start_turn(user(str(status)))
        session.end_turn(status)
    session.close()
    lines = [json.loads(line) for line in session_path(tmp_path, "quiet").read_text().splitlines()]
    terminals = [r for r in lines if r["type"] == "terminal"]
    assert [(r["status"], r.get("usageReported"), r.get("usage")) for r in terminals] == [
        ("completed", False, None),
        ("interrupted", None, None),
        ("error", None, None),
    ]
    again = open_session(tmp_path, "quiet")
    assert [t.terminal.usage for t in again.turns if t.terminal is not None] == [None, None, None]
    again.close()


def test_a_turn_left_open_by_a_crash_gets_a_new_interrupted_terminal(tmp_path: Path) -> None:
    """Recovery appends an interrupted terminal for an open turn and rewrites nothing before it."""
    session = open_session(tmp_path, "crash")
    session.start_turn(user("hello"))
    session.close()
    path = session_path(tmp_path, "crash")
    before = path.read_bytes()
    again = open_session(tmp_path, "crash")
    again.close()
    after = path.read_bytes()
    assert after.startswith(before)
    assert b'"status":"interrupted"' in after[len(before) :]
    assert b'"recovered":true' in after[len(before) :]
    assert again.view().latest_terminal is TerminalStatus.INTERRUPTED
    assert [t.turn for t in again.recovered] == [1]


def test_a_torn_last_line_is_cut_and_the_session_still_opens(tmp_path: Path) -> None:
    """A half-written final line (never acknowledged) is dropped instead of breaking the session."""
    session = open_session(tmp_path, "torn")
    session.start_turn(user("hello"))
    session.end_turn(TerminalStatus.COMPLETED)
    session.close()
    path = session_path(tmp_path, "torn")
    with path.open("ab") as handle:
        handle.write(b'{"type":"message","tu')
    again = open_session(tmp_path, "torn")
    again.close()
    assert len(again.turns) == 1
    assert path.read_bytes().endswith(b"\n")


def test_a_corrupt_middle_line_is_an_error_naming_the_line(tmp_path: Path) -> None:
    """A damaged record before the last line fails loudly with the file and line number."""
    session = open_session(tmp_path, "bad")
    session.start_turn(user("hello"))
    session.end_turn(TerminalStatus.COMPLETED)
    session.close()
    path = session_path(tmp_path, "bad")
    lines = path.read_bytes().split(b"\n")
    lines[1] = b"not json"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(SessionError, match="line 2"):
        open_session(tmp_path, "bad")


def test_a_file_of_another_session_is_refused(tmp_path: Path) -> None:
    """A session file whose header names another id is not silently adopted."""
    open_session(tmp_path, "a").close()
    session_path(tmp_path, "a").rename(session_path(tmp_path, "b"))
    with pytest.raises(SessionError, match="not the header of session 'b'"):
        open_session(tmp_path, "b")


@pytest.mark.parametrize("session_id", ["../x", "../../etc/passwd", "a/b", "é" * 300, ".", "..", "CON"])
def test_hostile_session_ids_stay_inside_the_sessions_dir(tmp_path: Path, session_id: str) -> None:
    """Any session id maps to one file directly inside the sessions dir, and reopens as itself."""
    sessions = tmp_path / "sessions"
    session = open_session(sessions, session_id)
    session.close()
    files = list(sessions.iterdir())
    assert len(files) == 1
    assert files[0].parent == sessions
    assert [s.session_id for s in list_sessions(sessions)] == [session_id]
    assert load_session(sessions, session_id).session_id == session_id


@pytest.mark.parametrize("session_id", ["", "\ud800"])
def test_unusable_session_ids_get_a_clear_error(tmp_path: Path, session_id: str) -> None:
    """An empty id or one that is not Unicode is refused before any file is created."""
    with pytest.raises(SessionError, match="invalid session id"):
        open_session(tmp_path / "sessions", session_id)
    assert not list((tmp_path / "sessions").glob("*"))


def test_only_one_turn_may_be_open(tmp_path: Path) -> None:
    """Starting a turn while one is open is refused: one active turn at a time."""
    session = open_session(tmp_path, "one")
    session.start_turn(user("a"))
    with pytest.raises(Exception, match="still open"):
        session.start_turn(user("b"))
    session.close()


def test_listing_and_showing_never_write(tmp_path: Path) -> None:
    """Reading a session with an open turn shows it open and leaves the file untouched."""
    session = open_session(tmp_path, "ro")
    session.start_turn(user("hello"))
    session.close()
    before = session_path(tmp_path, "ro").read_bytes()
    assert list_sessions(tmp_path)[0].last_status == "open"
    assert load_session(tmp_path, "ro").open_turn is not None
    assert session_path(tmp_path, "ro").read_bytes() == before
    with pytest.raises(SessionError, match="no session"):
        load_session(tmp_path, "missing")


def test_a_session_has_one_writer_at_a_time(tmp_path: Path) -> None:
    """A second process (or agent) opening the same session is refused instead of interleaving turns."""
    first = open_session(tmp_path, "busy")
    with pytest.raises(SessionError, match="open in another process"):
        open_session(tmp_path, "busy")
    first.close()
    open_session(tmp_path, "busy").close()


@pytest.mark.parametrize(
    "session_id",
    ["a\nb", "a\rb", "x\x1b]0;pwned\x07", "tab\there", "nul\x00", "del\x7f", "c1\x9b2J", "rtl\u202eevil"],
)
def test_a_session_id_with_a_control_character_is_refused_before_anything_is_made(
    tmp_path: Path, session_id: str
) -> None:
    """A newline, escape, C1 control or bidi override in a session id is refused by name; no file appears."""
    sessions = tmp_path / "sessions"
    with pytest.raises(SessionError, match=r"invalid session id .*control character U\+[0-9A-F]{4}") as err:
        open_session(sessions, session_id)
    assert not sessions.exists()
    assert err.value.message.isprintable()
    with pytest.raises(SessionError, match="invalid session id"):
        load_session(tmp_path, session_id)


def test_printable_session_ids_of_any_script_are_accepted(tmp_path: Path) -> None:
    """Ids with spaces, dots, accents or CJK stay valid: only control characters are refused."""
    for session_id in ("chat one", "v1.2", "café", "会话-7"):
        open_session(tmp_path, session_id).close()
