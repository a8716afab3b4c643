"""``inspect view``, Inspect AI's own log viewer, serving a directory of logs for a browser test."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def inspect_view(log_dir: Path, home: Path) -> Iterator[str]:
    """Serve ``log_dir`` with the venv's ``inspect view`` on a free loopback port (``HOME`` set to
    ``home``, so the viewer writes nothing of the developer's); yield its base URL once it answers."""
    port = _free_port()
    child = subprocess.Popen(
        [str(Path(sys.executable).parent / "inspect"), "view", "start", "--log-dir", str(log_dir),
         "--host", "127.0.0.1", "--port", str(port)],
        env={**os.environ, "HOME": str(home)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_http(f"{base}/", child)
        yield base
    finally:
        child.terminate()
        child.wait(timeout=30)


@contextmanager
def inspect_page(log_dir: Path, home: Path) -> Iterator[tuple[str, Any]]:
    """``inspect view`` serving ``log_dir`` and a headless Chromium page (1280 wide) to look at it:
    (the viewer's base URL, the Playwright page)."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415  (only the browser tests need it)

    with inspect_view(log_dir, home) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            yield server, browser.new_page(viewport={"width": 1280, "height": 1000})
        finally:
            browser.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_http(url: str, child: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert child.poll() is None, "inspect view exited"
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.3)
    raise AssertionError(f"{url} did not answer within {timeout} s")
