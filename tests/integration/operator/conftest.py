"""Fixtures for operator process tests: a calendar server slow enough to signal a tick mid-work."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class SlowCalendar(BaseHTTPRequestHandler):
    """Serves an empty calendar after one second: a tick that spends its time waiting on the network."""

    def do_GET(self) -> None:
        time.sleep(1.0)
        body = b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\nEND:VCALENDAR\r\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/calendar")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the tick was killed meanwhile
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002  (the stdlib's signature)
        """Quiet."""


@pytest.fixture
def slow_calendar_url() -> Iterator[str]:
    """The URL of an empty calendar that takes one second to arrive."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowCalendar)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/cal.ics"
    server.shutdown()
    server.server_close()
