"""The "chat session active" flag a voice arbiter consults before speaking up."""

from __future__ import annotations

import json
from pathlib import Path

from tickloop.harness import ChatPresence, chat_active


def test_the_flag_is_up_exactly_while_the_chat_runs(tmp_path: Path) -> None:
    """chat_active is true inside ChatPresence and false after it ends."""
    path = tmp_path / "state" / "chat-active.json"
    assert not chat_active(path)
    with ChatPresence(path, "demo"):
        assert chat_active(path)
        assert json.loads(path.read_text())["sessionId"] == "demo"
    assert not chat_active(path)
    assert not path.exists()


def test_a_flag_left_by_a_dead_process_does_not_count(tmp_path: Path) -> None:
    """A crashed chat (kill -9) never leaves proactive messages suppressed forever."""
    path = tmp_path / "chat-active.json"
    path.write_text(json.dumps({"pid": 2**22 + 12345, "sessionId": "x", "since": ""}))
    assert not chat_active(path)
    path.write_text("garbage")
    assert not chat_active(path)
