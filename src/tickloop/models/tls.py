"""What an endpoint's HTTP client verifies TLS with.

Loading the system's trust store into a TLS context costs about 250 M instructions (callgrind;
40-100 ms of CPU), paid by every process that builds a client: each one-shot tick that calls a
model, and an experiment run before its first request. An ``https`` endpoint needs it. A plain
``http`` endpoint (a llama.cpp, vLLM or Ollama server on this machine or a private network, the
common case for ticks and experiments) never negotiates TLS, so its client gets a context that
trusts nothing, built in about 10 M. It still requires a certificate and checks the host name, so
if such a server redirects the request to an ``https`` address, the handshake fails closed
(``redirected_to_tls`` words that error). Behind an ``https://`` proxy (``HTTP_PROXY`` and the
like, which the client honours) TLS is spoken to the proxy, so the system's trust store is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import ssl


def needs_trust_store(base_url: str, environ: Mapping[str, str]) -> bool:
    """The client may speak TLS: an ``https`` endpoint, or any behind an ``https://`` proxy."""
    if urlsplit(base_url).scheme.lower() != "http":
        return True
    return any(
        name.lower().endswith("_proxy")
        and name.lower() != "no_proxy"
        and value.strip().lower().startswith("https:")
        for name, value in environ.items()
    )


def verify_for(base_url: str, environ: Mapping[str, str]) -> ssl.SSLContext | bool:
    """``verify=`` for the endpoint's ``httpx`` client: ``True`` (the system's trust store), or a
    context that trusts nothing for a plain ``http`` endpoint."""
    if needs_trust_store(base_url, environ):
        return True
    import ssl  # noqa: PLC0415  (the model path only, which imports it anyway)

    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verify_mode CERT_REQUIRED, check_hostname on


def redirected_to_tls(base_url: str, cause: str) -> bool:
    """A plain ``http`` endpoint's request failed on a certificate: the server sent it on to TLS."""
    return urlsplit(base_url).scheme.lower() == "http" and "CERTIFICATE_VERIFY_FAILED" in cause
