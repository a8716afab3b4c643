"""What the sessions of a run need, checked before the first one starts.

A run whose every session would crash on the same missing workspace root, or be refused by the
same dead endpoint, stops here with one ``ConfigError`` (exit 2) instead of recording a grid of
failures: each model resolves (its key is set), each endpoint accepts a TCP connection, and the
toolsets the spec enables open (the workspace root exists).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from urllib.parse import urlsplit

from tickloop.config import Settings
from tickloop.errors import ConfigError
from tickloop.experiment.spec import Spec

CONNECT_TIMEOUT_S = 3.0


def check_models(spec: Spec, settings: Settings, env: Mapping[str, str]) -> None:
    """Every model of the spec resolves: known, valid, its key set (``get_model`` says which)."""
    from tickloop.models.registry import get_model  # noqa: PLC0415

    for name in spec.models:
        get_model(name, settings, env)


def spec_toolsets(spec: Spec) -> tuple[str, ...]:
    """Every toolset some session of the spec enables, over all its ``tools`` levels."""
    return tuple(sorted(spec.every_toolset))


def check_tools(spec: Spec, settings: Settings) -> None:
    """The spec's toolsets open with the config's ``[tools]`` (the workspace root exists)."""
    enabled = spec_toolsets(spec)
    if not enabled:
        return
    from tickloop.harness.tools import open_toolbox, tools_settings  # noqa: PLC0415

    try:
        open_toolbox(tools_settings(settings.tools, enable=enabled))
    except ConfigError as exc:
        raise ConfigError(f"experiment tools {list(enabled)}: {exc.message}") from None


async def check_endpoints(spec: Spec, settings: Settings, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Each endpoint the spec uses accepts a connection within ``timeout_s`` (all tried at once)."""
    from tickloop.models.registry import endpoints  # noqa: PLC0415

    found = endpoints(settings)
    names = [n for n in spec.models if n in found]
    await asyncio.gather(*(_reach(n, found[n].base_url, timeout_s) for n in names))


async def _reach(name: str, base_url: str, timeout_s: float) -> None:
    parts = urlsplit(base_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(parts.hostname, port), timeout_s)
    except (OSError, TimeoutError) as exc:
        why = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or type(exc).__name__)
        raise ConfigError(
            f"model {name!r}: its endpoint {parts.hostname}:{port} cannot be reached ({why}); "
            "no session was started. Is the server running and the base URL right?"
        ) from None
    writer.close()
    await writer.wait_closed()


async def preflight(spec: Spec, settings: Settings, env: Mapping[str, str]) -> None:
    """Everything above, in order of cost."""
    check_models(spec, settings, env)
    check_tools(spec, settings)
    await check_endpoints(spec, settings)
