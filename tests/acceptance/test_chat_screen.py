"""The interactive chat on a real terminal (a pty, rendered by the pyte emulator): the screen a
person reads holds the model's label and every word the transcript stored, interrupted or not, and
hostile model output cannot change the terminal or fake the prompt."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pyte
import pytest

from tickloop.audit import session_file_name

COLUMNS, ROWS = 100, 40


class Terminal:
    """`tickloop chat` on a pseudo-terminal, its output fed to a VT100 screen."""

    def __init__(self, cwd: Path, config: Path, session_id: str) -> None:
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self.stream = pyte.ByteStream(self.screen)
        self.title_changes: list[str] = []
        self.screen.set_title = self.title_changes.append  # type: ignore[method-assign]
        main, child = pty.openpty()
        os.set_blocking(main, False)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
        env.update(TICKLOOP_CONFIG=str(config), TERM="xterm", COLUMNS=str(COLUMNS), LINES=str(ROWS))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tickloop.cli", "chat", "--session", session_id, "--no-tick"],
            stdin=child,
            stdout=child,
            stderr=child,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        os.close(child)
        self.fd = main
        self._resize()

    def _resize(self) -> None:
        import fcntl  # noqa: PLC0415
        import struct  # noqa: PLC0415
        import termios  # noqa: PLC0415

        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))

    def pump(self, seconds: float) -> None:
        """Read whatever the program writes for ``seconds``."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    return
                self.stream.feed(data)

    def wait_for(self, condition: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + 20
        while not condition():
            assert time.monotonic() < deadline, f"timed out waiting for {what}:\n{self.text()}"
            self.pump(0.05)

    def type(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display).rstrip()

    def close(self) -> None:
        self.type(b"\x04")  # Ctrl-D: the chat exits
        try:
            self.proc.wait(timeout=15)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            os.close(self.fd)


def stored_replies(cwd: Path, session_id: str) -> list[str]:
    path = cwd / ".tickloop-sessions" / session_file_name(session_id)
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [r["content"][0]["text"] for r in records if r["type"] == "message" and r["role"] == "assistant"]


@pytest.mark.slow
def test_an_interrupted_reply_on_screen_shows_its_label_and_every_stored_word(tmp_path: Path) -> None:
    """Ctrl-C mid-reply: the screen keeps `offline> ` and exactly the words the transcript stored."""
    reply = " ".join(f"w{i:02d}" for i in range(60))
    config = tmp_path / "slow.toml"
    config.write_text(f'[model.offline]\ntokenDelayMs = 60\nreply = "{reply}"\n')
    term = Terminal(tmp_path, config, "screen")
    try:
        term.wait_for(lambda: "you>" in term.text(), "the prompt")
        term.type(b"hello there\r")
        term.wait_for(lambda: "w05" in term.text(), "the reply to stream")
        term.type(b"\x03")  # Ctrl-C
        term.wait_for(lambda: "[turn 1 interrupted]" in term.text(), "the interrupted terminal")
        term.pump(0.5)
        screen = term.text()
    finally:
        term.close()
    [partial] = stored_replies(tmp_path, "screen")
    assert 5 < len(partial.split()) < 60
    lines = screen.splitlines()
    assert "you> hello there" in lines
    shown = next(line for line in lines if line.startswith("offline> "))
    assert shown == f"offline> {partial}".rstrip()
    assert screen.count("w05") == 1  # shown once, not once more inside a stale prompt


@pytest.mark.slow
def test_hostile_model_output_cannot_retitle_clear_or_fake_the_prompt(tmp_path: Path) -> None:
    """A reply with an OSC title, a screen clear, backspaces, an RTL override and a `you>` line is inert."""
    config = tmp_path / "hostile.toml"
    config.write_text(
        "[model.offline]\n"
        'reply = "T\\u001b]0;pwned\\u0007 C\\u001b[2J\\u001b[H B\\u0007 safe\\b\\b\\b\\bEVIL R\\u202eexe.pdf'
        '\\nyou> approve everything\\rX"\n'
    )
    term = Terminal(tmp_path, config, "hostile")
    try:
        term.wait_for(lambda: "you>" in term.text(), "the prompt")
        term.type(b"hi\r")
        term.wait_for(lambda: "approve everything" in term.text(), "the reply")
        term.pump(0.3)
        screen = term.text()
    finally:
        term.close()
    assert term.title_changes == []
    assert "session hostile" in screen  # the screen was not cleared
    assert "safe\\u0008\\u0008\\u0008\\u0008EVIL" in screen
    assert "\\u202eexe.pdf" in screen
    assert [line for line in screen.splitlines() if line.startswith("you>")] == ["you> hi", "you>"]
    assert "         you> approve everything\\u000dX" in screen.splitlines()
