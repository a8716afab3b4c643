"""Real servers for the side-effect tests: an SMTP server (aiosmtpd) and an HTTP sink, on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session

from tickloop.notify.smtp import SmtpSettings

SENDER = "operator@example.com"
PERSON = "person@example.com"
SMTP_USER = "operator"
SMTP_PASSWORD = "correct horse battery staple"


@dataclass
class MailSink:
    """What the SMTP server received: one envelope per accepted message, and every login attempt."""

    port: int = 0
    envelopes: list[Envelope] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)

    async def handle_DATA(self, _server: SMTP, _session: Session, envelope: Envelope) -> str:  # noqa: N802
        self.envelopes.append(envelope)
        return "250 OK"

    def authenticate(
        self, _server: SMTP, _session: Session, _envelope: Envelope, _mechanism: str, data: Any
    ) -> AuthResult:
        assert isinstance(data, LoginPassword)
        login, password = data.login.decode(), data.password.decode()
        self.logins.append((login, password))
        # handled=False: the server itself answers 535 to a failure (else the client waits for a reply).
        return AuthResult(success=(login, password) == (SMTP_USER, SMTP_PASSWORD), handled=False)


class _BoundController(Controller):
    """An aiosmtpd Controller on a socket bound to an ephemeral port before the server starts."""

    def __init__(self, handler: MailSink, **kwargs: Any) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        handler.port = self._sock.getsockname()[1]
        super().__init__(handler, hostname="127.0.0.1", port=handler.port, **kwargs)

    def _create_server(self) -> Any:
        return self.loop.create_server(self._factory_invoker, sock=self._sock, ssl=self.ssl_context)


@pytest.fixture
def mail_sink() -> Iterator[MailSink]:
    """A real SMTP server on 127.0.0.1 (plain, AUTH LOGIN/PLAIN allowed without TLS for the test)."""
    sink = MailSink()
    controller = _BoundController(
        sink, authenticator=sink.authenticate, auth_require_tls=False, loop=asyncio.new_event_loop()
    )
    controller.start()
    try:
        yield sink
    finally:
        controller.stop()
        controller.loop.close()


@dataclass(frozen=True)
class TlsFiles:
    """A self-signed certificate for 127.0.0.1 and its key."""

    cert: Path
    key: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert, self.key)
        return context


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """A throwaway certificate made with the openssl CLI (SAN IP:127.0.0.1), valid for one day."""
    folder = tmp_path_factory.mktemp("tls")
    files = TlsFiles(cert=folder / "cert.pem", key=folder / "key.pem")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(files.key),
            "-out",
            str(files.cert),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return files


@pytest.fixture(params=["starttls", "ssl"])
def tls_sink(request: pytest.FixtureRequest, tls_files: TlsFiles) -> Iterator[tuple[MailSink, SmtpSettings]]:
    """A real SMTP server on STARTTLS (required) or implicit TLS, and settings that trust its certificate."""
    sink = MailSink()
    context = tls_files.server_context()
    tls = (
        {"tls_context": context, "require_starttls": True}
        if request.param == "starttls"
        else {"ssl_context": context}
    )
    controller = _BoundController(sink, loop=asyncio.new_event_loop(), **tls)
    controller.start()
    settings = SmtpSettings(
        host="127.0.0.1",
        port=sink.port,
        security=request.param,
        senders=[SENDER],
        ca_file=str(tls_files.cert),
        timeout_s=5,
    )
    try:
        yield sink, settings
    finally:
        controller.stop()
        controller.loop.close()


@pytest.fixture
def smtp(mail_sink: MailSink) -> SmtpSettings:
    """SMTP settings pointing at the test server, with one allowed sender."""
    return SmtpSettings(
        host="127.0.0.1", port=mail_sink.port, security="plain", senders=[SENDER], timeout_s=5
    )


@dataclass
class HttpSink:
    """Requests an HTTP server received: (method, path, parsed JSON body)."""

    url: str = ""
    requests: list[tuple[str, str, Any]] = field(default_factory=list)
    status: int = 200


@pytest.fixture
def http_sink() -> Iterator[HttpSink]:
    """A real HTTP server on 127.0.0.1 that records every POST and answers with ``sink.status``."""
    sink = HttpSink()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            sink.requests.append(("POST", self.path, json.loads(raw or b"null")))
            self.send_response(sink.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (base class signature)
            """Quiet: the test asserts on ``sink.requests``."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    sink.url = f"127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield sink
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
