"""A real dashboard for browser tests: `tickloop web` as a subprocess on a random port, a real store,
the fast tick and the executor as the scheduler runs them, and an SMTP sink (aiosmtpd)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from tickloop.operator.store import Store, open_store

SENDER = "operator@example.com"
PERSON = "person@example.com"
#: Debian's chromium; Playwright's own browser download is never used
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: where the screenshots go (README names it; gitignored)
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "web"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class MailSink:
    """What the SMTP server received."""

    port: int = 0
    envelopes: list[Envelope] = field(default_factory=list)

    async def handle_DATA(self, _server: SMTP, _session: Session, envelope: Envelope) -> str:  # noqa: N802
        self.envelopes.append(envelope)
        return "250 OK"


class _Bound(Controller):
    def __init__(self, handler: MailSink, **kwargs: Any) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        handler.port = self._sock.getsockname()[1]
        super().__init__(handler, hostname="127.0.0.1", port=handler.port, **kwargs)

    def _create_server(self) -> Any:
        return self.loop.create_server(self._factory_invoker, sock=self._sock, ssl=self.ssl_context)


@contextmanager
def mail_sink() -> Iterator[MailSink]:
    sink = MailSink()
    controller = _Bound(sink, loop=asyncio.new_event_loop())
    controller.start()
    try:
        yield sink
    finally:
        controller.stop()
        controller.loop.close()


@dataclass
class World:
    """One operator's files: the store URL, config, state dir and the environment of its processes."""

    root: Path
    store_url: str
    env: dict[str, str]

    def tickloop(
        self, *args: str, stdin: str | None = None, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        env = {**self.env, **extra}
        return subprocess.run([sys.executable, "-m", "tickloop", *args], env=env, cwd=self.root, input=stdin,
                              capture_output=True, text=True, check=False, timeout=60)  # fmt: skip

    def store(self) -> Store:
        return open_store(self.store_url)


def make_world(root: Path, store_url: str, config: str) -> World:
    (root / "config.toml").write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env.update(
        TICKLOOP_STORE=store_url,
        TICKLOOP_CONFIG=str(root / "config.toml"),
        TICKLOOP_STATE_DIR=str(root / "state"),
        XDG_STATE_HOME=str(root / "xdg-state"),
        XDG_DATA_HOME=str(root / "xdg-data"),
    )
    return World(root, store_url, env)


@dataclass
class Dashboard:
    """A running `tickloop web`: its base URL and the one-time login URL it printed."""

    base: str
    login_url: str
    proc: subprocess.Popen[str]
    output: list[str]


_LOGIN = re.compile(r"log in \(once, within 24 h\) at (\S+)")


@contextmanager
def dashboard(world: World, *args: str) -> Iterator[Dashboard]:
    """Start `tickloop web --port N ARGS` and wait for its login URL; SIGINT it afterwards."""
    port = free_port()
    cmd = [sys.executable, "-m", "tickloop", "web", "--port", str(port), "--poll", "0.5", *args]
    proc = subprocess.Popen(cmd, env=world.env, cwd=world.root, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)  # fmt: skip
    output: list[str] = []
    stream = proc.stdout
    assert stream is not None
    reader = threading.Thread(target=lambda: output.extend(iter(stream.readline, "")), daemon=True)
    reader.start()
    try:
        login = _wait_for_login(proc, output)
        _wait_for_port(port)
        yield Dashboard(f"http://127.0.0.1:{port}", login, proc, output)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        reader.join(timeout=5)
        stream.close()


def _wait_for_login(proc: subprocess.Popen[str], output: list[str]) -> str:
    """Read the server's output on a thread (which also keeps the pipe drained) until the URL shows."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for line in list(output):
            found = _LOGIN.search(line)
            if found:
                return found.group(1)
        if proc.poll() is not None and time.monotonic() > deadline - 25:
            break
        time.sleep(0.05)
    raise AssertionError(f"tickloop web printed no login URL: {''.join(output)}")


def _wait_for_port(port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


def wait_until(check: Any, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")
