"""Streamable HTTP for the MCP face, behind a guard: loopback by default, a bearer token, an Origin
allowlist, a request size cap and a per-client rate limit.

The guard is a plain ASGI wrapper around the SDK's app, checked in this order, each answering with
an empty body: too many requests from this client -> 429; a foreign ``Origin`` -> 403 (DNS-rebinding
defence, as the MCP specification asks of local servers); a missing or wrong token -> 401. Bodies
over the cap get the SDK's 413. A request without ``Origin`` (a non-browser client) passes that check.

"This client" is the agent whose token the request presents, or, for a request without a valid
token, its address: wrong-token requests from 127.0.0.1 drain the address's bucket, never the
bucket of an agent that connects from the same address. The token is looked up in the token file
as it is now (:class:`tickloop.mcp.token.Keyring`), so a rotated or revoked token gets 401 at once.
The agent's name reaches the tools as the ``x-tickloop-agent`` header, set here (a client's own is
dropped), and becomes the origin ``mcp:NAME`` of the intents it stages.
"""

from __future__ import annotations

import socket
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tickloop.errors import ValidationError
from tickloop.mcp import token as tokens
from tickloop.system import is_loopback_host

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

PATH = "/mcp"
AGENT_HEADER = b"x-tickloop-agent"
DEFAULT_PORT = 8765
DEFAULT_MAX_BODY = 2 * 1024 * 1024
DEFAULT_RATE_PER_MINUTE = 600
INSECURE_WARNING = (
    "tickloop mcp: WARNING: serving the MCP face over plain HTTP on a non-loopback address: the "
    "bearer token and every answer cross the network unencrypted. Use --certfile/--keyfile."
)


@dataclass(frozen=True)
class Options:
    """How the HTTP transport listens and whom it lets in."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    allow_remote: bool = False
    certfile: Path | None = None
    keyfile: Path | None = None
    insecure_http: bool = False
    origins: tuple[str, ...] = ()
    max_body: int = DEFAULT_MAX_BODY
    rate_per_minute: int = DEFAULT_RATE_PER_MINUTE

    @property
    def tls(self) -> bool:
        return self.certfile is not None


def check_bind(options: Options) -> list[str]:
    """Refuse an unsafe listening setup (``ValidationError`` naming the flag); return warnings to print.

    Loopback needs nothing. Any other host needs ``--allow-remote`` and either TLS (both
    ``--certfile`` and ``--keyfile``) or an explicit ``--insecure-http``, which warns."""
    if (options.certfile is None) != (options.keyfile is None):
        raise ValidationError("TLS needs both --certfile and --keyfile")
    if is_loopback_host(options.host):
        return []
    if not options.allow_remote:
        raise ValidationError(
            f"--host {options.host} is not a loopback address: other machines could reach the operator's "
            "MCP face. Add --allow-remote (with --certfile/--keyfile for TLS) if that is what you want"
        )
    if options.tls:
        return []
    if not options.insecure_http:
        raise ValidationError(
            f"--host {options.host} with --allow-remote needs TLS (--certfile and --keyfile), "
            "or --insecure-http to accept plain HTTP on the network"
        )
    return [INSECURE_WARNING]


def allowed_origins(options: Options, port: int) -> frozenset[str]:
    """The Origin values let in: this server's own loopback origins plus ``--allow-origin``."""
    scheme = "https" if options.tls else "http"
    own = {f"{scheme}://127.0.0.1:{port}", f"{scheme}://localhost:{port}", f"{scheme}://[::1]:{port}"}
    if not is_loopback_host(options.host):
        own.add(f"{scheme}://{options.host}:{port}")
    return frozenset(own | {o.rstrip("/") for o in options.origins})


@dataclass
class RateLimit:
    """A token bucket per client: it refills at ``per_minute`` requests a minute and holds at most
    ``burst`` (a tenth of a minute's worth, at least 1), so a client may send ``burst`` requests at
    once and then one every ``60 / per_minute`` seconds."""

    per_minute: int
    clock: Callable[[], float] = time.monotonic
    max_clients: int = 10_000
    _buckets: OrderedDict[str, tuple[float, float]] = field(default_factory=OrderedDict)

    @property
    def burst(self) -> float:
        return max(1.0, self.per_minute / 10)

    def allow(self, client: str) -> bool:
        """Spend one request for ``client``; False when its bucket is empty."""
        now = self.clock()
        level, then = self._buckets.pop(client, (self.burst, now))
        level = min(self.burst, level + (now - then) * self.per_minute / 60)
        allowed = level >= 1
        self._buckets[client] = (level - 1 if allowed else level, now)
        while len(self._buckets) > self.max_clients:
            self._buckets.popitem(last=False)
        return allowed


class Guard:
    """The ASGI wrapper that checks every HTTP request before the SDK sees it."""

    def __init__(
        self, app: App, *, keyring: tokens.Keyring, origins: frozenset[str], rate: RateLimit
    ) -> None:
        self.app = app
        self.keyring = keyring
        self.origins = origins
        self.rate = rate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        wanted = _wanted(scope.get("headers", []))
        agent = self._agent(wanted.get(b"authorization", b""))
        client = scope.get("client")
        bucket = f"agent:{agent}" if agent else f"addr:{client[0] if client else '?'}"
        if not self.rate.allow(bucket):
            await _reply(send, 429, [(b"retry-after", b"1")])
            return
        origin = wanted.get(b"origin")
        if origin is not None and origin.decode("latin-1").rstrip("/") not in self.origins:
            await _reply(send, 403)
            return
        if agent is None:
            await _reply(send, 401, [(b"www-authenticate", b"Bearer")])
            return
        await self.app(_with_agent(scope, agent, claimed=AGENT_HEADER in wanted), receive, send)

    def _agent(self, header: bytes) -> str | None:
        scheme, _, presented = header.decode("latin-1").partition(" ")
        # look up even a malformed header, so the time taken says nothing about what was wrong
        found = self.keyring.who(presented.strip())
        return found if scheme.lower() == "bearer" else None


_WANTED = frozenset({b"authorization", b"origin", AGENT_HEADER})


def _wanted(headers: list[tuple[bytes, bytes]]) -> dict[bytes, bytes]:
    """The headers the guard reads (the last of each name), without copying the others: this runs
    on every request."""
    found = {}
    for key, value in headers:
        name = key.lower()
        if name in _WANTED:
            found[name] = bytes(value)
    return found


def _with_agent(scope: Scope, agent: str, *, claimed: bool) -> Scope:
    """``scope`` with the agent's name as a header; one the client sent itself (``claimed``) is dropped."""
    headers = scope.get("headers", [])
    kept = [(k, v) for k, v in headers if k.lower() != AGENT_HEADER] if claimed else headers
    return {**scope, "headers": [*kept, (AGENT_HEADER, agent.encode("ascii"))]}


async def _reply(send: Send, status: int, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-length", b"0"), *(headers or [])],
        }
    )
    await send({"type": "http.response.body", "body": b""})


def bind(options: Options) -> socket.socket:
    """A listening socket on ``options.host``/``port`` (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in options.host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and without
    # it Nagle's algorithm meets the client's delayed ACK and every answer waits ~40 ms
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((options.host, options.port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


async def serve(
    server: Any, options: Options, *, keyring: tokens.Keyring, announce: Callable[[str], None]
) -> None:
    """Serve ``server`` (an ``MCPServer``) over streamable HTTP until interrupted."""
    import uvicorn  # noqa: PLC0415  (comes with the `mcp` extra; only this path needs it)
    from mcp.server.transport_security import TransportSecuritySettings  # noqa: PLC0415

    sock = bind(options)
    port = sock.getsockname()[1]
    origins = allowed_origins(options, port)
    hosts = [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"{options.host}:{port}"]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=is_loopback_host(options.host),
        allowed_hosts=hosts,
        allowed_origins=sorted(origins),
    )
    app = server.streamable_http_app(
        streamable_http_path=PATH,
        max_request_body_size=options.max_body,
        transport_security=security,
        host=options.host,
    )
    guarded = Guard(app, keyring=keyring, origins=origins, rate=RateLimit(options.rate_per_minute))
    config = uvicorn.Config(
        guarded,
        log_level="warning",
        ssl_certfile=None if options.certfile is None else str(options.certfile),
        ssl_keyfile=None if options.keyfile is None else str(options.keyfile),
        server_header=False,
    )
    scheme = "https" if options.tls else "http"
    shown = f"[{options.host}]" if ":" in options.host else options.host
    import anyio  # noqa: PLC0415  (comes with the SDK)

    web = uvicorn.Server(config)
    async with anyio.create_task_group() as tasks:
        watcher = getattr(server, "watcher", None)
        if watcher is not None:
            tasks.start_soon(watcher.run)
        tasks.start_soon(
            _announce_started, web, announce, f"tickloop mcp: serving on {scheme}://{shown}:{port}{PATH}"
        )
        await web.serve(sockets=[sock])
        tasks.cancel_scope.cancel()


async def _announce_started(web: Any, announce: Callable[[str], None], line: str) -> None:
    """Say "serving on" once uvicorn has started, its SIGINT and SIGTERM handlers in place: a client
    that stops the server as soon as it reads the line always gets a graceful shutdown."""
    import anyio  # noqa: PLC0415

    while not web.started:
        await anyio.sleep(0.005)
    announce(line)
