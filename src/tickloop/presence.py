"""The "a chat session is active" presence flag.

A later component (the voice arbiter) suppresses proactive messages while a person is in a live
conversation. It asks ``chat_active(path)``; ``tickloop chat`` holds a ``ChatPresence`` for its whole
life. The flag is a small JSON file ``{"pid", "sessionId", "since"}``; a file whose process is gone
(a crash) does not count, so a kill -9 never leaves the arbiter muted.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from tickloop.clock import Clock, SystemClock, utc_iso
from tickloop.system import pid_alive

PRESENCE_FILE = "chat-active.json"


def presence_path(state_dir: Path | None = None) -> Path:
    """``$XDG_STATE_HOME/tickloop/chat-active.json`` unless a directory is given."""
    if state_dir is None:
        from tickloop.dirs import user_state_path  # noqa: PLC0415  (only when the flag is used)

        state_dir = user_state_path()
    return state_dir / PRESENCE_FILE


class ChatPresence:
    """Context manager: the flag exists while the chat runs, and is removed when it ends."""

    def __init__(self, path: Path, session_id: str, *, clock: Clock | None = None) -> None:
        self.path = path
        self.session_id = session_id
        self.clock = clock or SystemClock()

    def __enter__(self) -> ChatPresence:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        body = {"pid": os.getpid(), "sessionId": self.session_id, "since": utc_iso(self.clock.now())}
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(body), encoding="utf-8")
        tmp.replace(self.path)
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(FileNotFoundError):
            if _read_pid(self.path) == os.getpid():
                self.path.unlink()


def chat_active(path: Path | None = None) -> bool:
    """True while a live ``tickloop chat`` holds the flag (its process still exists)."""
    pid = _read_pid(path or presence_path())
    return pid is not None and pid_alive(pid)


def _read_pid(path: Path) -> int | None:
    try:
        pid = json.loads(path.read_text(encoding="utf-8")).get("pid")
    except (OSError, ValueError, AttributeError):
        return None
    return pid if isinstance(pid, int) and pid > 0 else None
