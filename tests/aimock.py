"""``@copilotkit/aimock`` (an OpenAI-compatible mock nobody here wrote) as a model for the tests.

``running(tmp_path, fixtures)`` starts aimock's own CLI on a free loopback port with those fixtures
and yields an ``Aimock``: its base URL, and ``requests()``, the chat requests it received (its
journal), so a test reads exactly what reached the model.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests import peers


@dataclass(frozen=True, slots=True)
class Aimock:
    base_url: str  #: ``http://127.0.0.1:PORT/v1``
    root: str  #: ``http://127.0.0.1:PORT``

    def requests(self) -> list[dict[str, Any]]:
        """The bodies of the chat-completions requests aimock received, oldest first."""
        url = f"{self.root}/__aimock/journal?path=/v1/chat/completions"
        with urllib.request.urlopen(url, timeout=10) as answer:
            entries = json.loads(answer.read())
        entries = entries if isinstance(entries, list) else entries.get("entries", [])
        chats = [e for e in entries if isinstance(e.get("body"), dict) and "messages" in e["body"]]
        return [e["body"] for e in sorted(chats, key=lambda e: e["timestamp"])]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running(tmp_path: Path, fixtures: list[dict[str, Any]]) -> Iterator[Aimock]:
    """aimock on a free loopback port, serving ``fixtures``; stopped on exit."""
    cli = peers.require(peers.AIMOCK / "dist" / "cli.js")
    path = tmp_path / "aimock-fixtures.json"
    path.write_text(json.dumps({"fixtures": fixtures}), encoding="utf-8")
    port, log_path = _free_port(), tmp_path / "aimock.log"
    node = str(peers.require(peers.NODE))
    command = [node, str(cli), "-p", str(port), "-f", str(path), "--log-level", "warn"]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_for_port(port, proc, log_path)
            yield Aimock(f"http://127.0.0.1:{port}/v1", f"http://127.0.0.1:{port}")
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            time.sleep(0.1)
        else:
            return
    proc.kill()
    proc.wait(timeout=10)
    pytest.fail(f"aimock did not start: {log_path.read_text()!r}")
