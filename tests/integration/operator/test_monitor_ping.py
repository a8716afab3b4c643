"""The monitor's own heartbeat: healthchecks-style pings to a local HTTP server the test starts."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tickloop.config import Settings
from tickloop.operator.conditions import MonitorSettings
from tickloop.operator.monitor import run_monitor
from tickloop.operator.store import Store, open_store

NOW = datetime(2026, 7, 7, 12, 0, tzinfo=UTC)
KEY = "5f1c8a52-9d1e-4c43-b0b5-2e6d1f0a7c11"  # a check's key: secret, never in a log line


@dataclass
class PingSink:
    """What the ping server received, and how it answers."""

    base: str = ""
    pings: list[tuple[str, str]] = field(default_factory=list)  #: (path, body)
    status: int = 200
    delay_s: float = 0.0


@pytest.fixture
def sink() -> Iterator[PingSink]:
    """A real HTTP server on 127.0.0.1 that records every POST."""
    found = PingSink()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
            found.pings.append((self.path, body))
            time.sleep(found.delay_s)
            self.send_response(found.status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"OK")

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (base class signature)
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.base = f"http://127.0.0.1:{server.server_address[1]}/ping/{KEY}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _settings(url: str, **monitor: Any) -> Settings:
    return msgspec.convert({"monitor": {"pingUrl": url, **monitor}}, Settings)


def _run(tmp_path: Path, settings: Settings, store_url: str | None = None) -> tuple[Any, list[str]]:
    lines: list[str] = []
    url = store_url or f"sqlite:///{tmp_path / 'store.db'}"

    def opened() -> Store:
        return open_store(url)

    report = run_monitor(
        open_store=opened,
        load_settings=lambda: settings,
        now=NOW,
        env={"TICKLOOP_STATE_DIR": str(tmp_path / "state")},
        profiles=None,
        log=lines.append,
    )
    return report, lines


def _paths(sink: PingSink) -> list[str]:
    return [path for path, _ in sink.pings]


def test_a_good_pass_pings_start_then_success(tmp_path: Path, sink: PingSink) -> None:
    """A pass that ran pings URL/start before it reads the store and URL after, with its summary."""
    report, lines = _run(tmp_path, _settings(sink.base))
    assert report is not None
    assert lines == []
    assert sink.pings == [(f"/ping/{KEY}/start", ""), (f"/ping/{KEY}", "0 profile(s) flagged, 0 notice(s)")]


def test_a_failed_pass_pings_start_then_fail_with_the_reason(tmp_path: Path, sink: PingSink) -> None:
    """A pass whose store is unreachable pings URL/fail with the error, and still returns quietly."""
    report, lines = _run(tmp_path, _settings(sink.base), store_url="postgresql://nobody@127.0.0.1:1/none")
    assert report is None
    assert any("monitor: failed: StoreError" in line for line in lines)
    assert _paths(sink) == [f"/ping/{KEY}/start", f"/ping/{KEY}/fail"]
    assert sink.pings[1][1].startswith("StoreError: ")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("failure", ["refused", "HTTP 500", "timeout"])
def test_a_failed_ping_is_logged_and_never_fails_the_monitor(
    tmp_path: Path, sink: PingSink, failure: str
) -> None:
    """A ping that is refused, answered 500 or too slow is logged without the check's key; the pass
    still runs and returns its report, within the ping timeout."""
    url = sink.base
    if failure == "refused":
        url = f"http://127.0.0.1:{_closed_port()}/ping/{KEY}"
    shown = url.removesuffix(f"/ping/{KEY}") + "/…"
    sink.status = 500 if failure == "HTTP 500" else 200
    sink.delay_s = 20.0 if failure == "timeout" else 0.0
    started = time.monotonic()
    report, lines = _run(tmp_path, _settings(url, pingTimeoutS=0.3))
    assert report is not None
    assert time.monotonic() - started < 15  # two pings of at most 0.3 s each, not the 20 s delay
    assert [line.split(" failed: ")[0] for line in lines] == [
        f"monitor: ping start to {shown}",
        f"monitor: ping success to {shown}",
    ]
    expected = {"refused": "Connection refused", "HTTP 500": "HTTP 500", "timeout": "timed out"}[failure]
    assert all(expected in line for line in lines), lines
    assert not any(KEY in line for line in lines)


def test_the_cli_monitor_pings_and_exits_zero(tmp_path: Path, sink: PingSink) -> None:
    """`tickloop operator monitor` as the scheduler runs it: exit 0 and a start and success ping."""
    (tmp_path / "config.toml").write_text(f'[monitor]\npingUrl = "{sink.base}"\npingTimeoutS = 2\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env.update(
        TICKLOOP_STORE=f"sqlite:///{tmp_path / 'store.db'}",
        TICKLOOP_CONFIG=str(tmp_path / "config.toml"),
        TICKLOOP_STATE_DIR=str(tmp_path / "state"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "tickloop", "operator", "init", "--profile", "p", "--goal", "g"],
        env=env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "tickloop", "operator", "monitor"],
        env=env, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _paths(sink) == [f"/ping/{KEY}/start", f"/ping/{KEY}"]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://hc.example/x", "is not an http:// or https:// URL with a host"),
        ("http:///x", "is not an http:// or https:// URL with a host"),
        ("javascript:alert(1)", "is not an http:// or https:// URL with a host"),
        ("https://user:pw@hc.example/x", "credentials in the URL are not supported"),
        ("https://hc.example/x?create=1", "must not have a query or fragment"),
    ],
)
def test_a_bad_ping_url_is_refused_naming_the_setting(url: str, message: str) -> None:
    """A pingUrl that is not a plain http(s) URL is a settings error naming monitor.pingUrl."""
    with pytest.raises(msgspec.ValidationError, match=r"monitor\.pingUrl") as caught:
        msgspec.convert({"pingUrl": url}, MonitorSettings)
    assert message in str(caught.value)
    assert "pw" not in str(caught.value)
