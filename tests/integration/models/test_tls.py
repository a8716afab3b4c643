"""What an endpoint's client verifies TLS with: the system's trust store only where TLS can be spoken.

A plain-http endpoint's client trusts nothing (building the trust store costs ~250 M instructions per
process), yet still fails closed on any TLS it meets: a redirect to https is refused with words.
"""

from __future__ import annotations

import asyncio
import http.server
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.certs import self_signed

from tickloop.errors import ModelError
from tickloop.models import ChatMessage, OpenAICompatModel
from tickloop.models.tls import needs_trust_store

HELLO = [ChatMessage("user", "hello")]


@pytest.mark.parametrize(
    ("base_url", "environ", "needed"),
    [
        ("http://127.0.0.1:8080/v1", {}, False),
        ("HTTP://gpu-box.lan:8000/v1", {}, False),
        ("https://api.openai.com/v1", {}, True),
        ("HTTPS://api.deepseek.com", {}, True),
        ("http://10.0.0.5/v1", {"HTTP_PROXY": "http://proxy:3128"}, False),
        ("http://10.0.0.5/v1", {"http_proxy": "https://proxy:3128"}, True),
        ("http://10.0.0.5/v1", {"ALL_PROXY": " HTTPS://proxy:3128"}, True),
        ("http://10.0.0.5/v1", {"NO_PROXY": "https://x"}, False),  # not a proxy
        ("http://10.0.0.5/v1", {"HTTPS_PROXY": "http://proxy:3128"}, False),
    ],
)
def test_the_trust_store_is_loaded_only_where_tls_can_be_spoken(
    base_url: str, environ: dict[str, str], needed: bool
) -> None:
    assert needs_trust_store(base_url, environ) is needed


def _context(model: OpenAICompatModel) -> ssl.SSLContext:
    client = model._new_client()
    context = client._client._transport._pool._ssl_context
    assert isinstance(context, ssl.SSLContext)
    return context


def test_a_plain_http_client_trusts_nothing_but_still_checks_certificates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real client's context: no CA for http (and still CERT_REQUIRED with host names checked),
    the system's CAs for https."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    plain = _context(OpenAICompatModel("local", base_url="http://127.0.0.1:9/v1", model="m"))
    assert plain.cert_store_stats()["x509_ca"] == 0
    assert plain.verify_mode == ssl.CERT_REQUIRED
    assert plain.check_hostname
    remote = _context(OpenAICompatModel("remote", base_url="https://api.example.com/v1", model="m"))
    assert remote.cert_store_stats()["x509_ca"] > 0
    assert remote.verify_mode == ssl.CERT_REQUIRED


@contextmanager
def _serving(handler: type[http.server.BaseHTTPRequestHandler], tls: ssl.SSLContext | None) -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_a_plain_http_endpoint_that_redirects_to_https_fails_closed_with_words(tmp_path: Path) -> None:
    """A server that sends the request on to an https address (its certificate self-signed, so no
    trust store would accept it either) gets no request over TLS: the handshake is refused, and the
    error says to put the https address in baseUrl."""
    cert, key = self_signed(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    reached: list[str] = []

    class Secure(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            reached.append(self.path)
            self.send_response(500)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    with _serving(Secure, tls) as secure_port:

        class Redirect(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.send_response(307)
                self.send_header("Location", f"https://127.0.0.1:{secure_port}{self.path}")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        with _serving(Redirect, None) as port:
            model = OpenAICompatModel(
                "local", base_url=f"http://127.0.0.1:{port}/v1", model="m", timeout_s=10
            )

            with pytest.raises(ModelError) as caught:
                asyncio.run(model.complete(HELLO))
    assert "set baseUrl to the https address" in str(caught.value)
    assert reached == []
