"""``tickloop mcp serve``: open the store, check the profile, build the server, run one transport."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any, Literal

from tickloop.errors import ConfigError, extra_hint
from tickloop.mcp import http
from tickloop.mcp import token as tokens
from tickloop.mcp.face import Face, mcp_settings

Transport = Literal["stdio", "http"]


def load_server(face: Face) -> Any:
    """The SDK server for ``face``; a ``ConfigError`` saying how to install the extra if it is missing."""
    try:
        from tickloop.mcp.server import build  # noqa: PLC0415  (the SDK: only this command pays for it)
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] in {"mcp", "pydantic", "uvicorn", "starlette"}:
            raise ConfigError(f"the MCP face needs the `mcp` extra: {extra_hint('mcp')}") from None
        raise
    return build(face)


def http_keyring(announce: Callable[[str], None]) -> tokens.Keyring:
    """The token file as the server reads it; on first use, issue a token and show it once."""
    path = tokens.token_path()
    if not tokens.stored(path):
        made = tokens.issue(path)
        announce(f"tickloop mcp: bearer token issued (shown once, kept as a hash in {path}):\n{made}")
    return tokens.Keyring(path)


def serve(
    profile: str, transport: Transport, options: http.Options, *, announce: Callable[[str], None]
) -> None:
    """Serve ``profile``'s MCP face until the client goes away (stdio) or the process is stopped."""
    from tickloop.operator.service import open_configured_store  # noqa: PLC0415

    if transport == "http":
        for warning in http.check_bind(options):
            announce(warning)
    mcp_settings()  # a bad [mcp] autoAllow stops the start, not the first staging
    store = open_configured_store()
    try:
        store.get_profile(profile)
        server = load_server(Face(store, profile))
        import anyio  # noqa: PLC0415  (comes with the SDK)

        # What start-up made (modules, the SDK's schemas, the server) lives as long as the process;
        # frozen, the cyclic collector stops re-walking it while it collects each request's garbage
        gc.collect()
        gc.freeze()

        if transport == "stdio":
            from tickloop.mcp import stdio  # noqa: PLC0415

            anyio.run(stdio.serve, server)
            return
        keyring = http_keyring(announce)
        anyio.run(lambda: http.serve(server, options, keyring=keyring, announce=announce))
    finally:
        store.close()
