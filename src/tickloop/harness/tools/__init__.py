"""Tool calling inside a turn: the ``[tools]`` settings, the workspace toolset, MCP servers.

Off by default. ``[tools] enabled = ["workspace"]`` (or ``tickloop chat --tools workspace``) turns on
the built-in workspace toolset; each ``[tools.mcp.NAME]`` table adds one MCP server's tools::

    [tools]
    enabled = ["workspace"]
    maxRounds = 8
    [tools.workspace]
    root = "."
    overwrite = false
    [tools.mcp.files]
    command = ["python", "-m", "my_server"]
    [tools.mcp.remote]
    url = "http://127.0.0.1:8931/mcp"
    tokenEnv = "REMOTE_MCP_TOKEN"
"""

# No `from __future__ import annotations`: msgspec reads these annotations at runtime.

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from tickloop.errors import ConfigError
from tickloop.harness.tools.base import (
    CallResult,
    CallStatus,
    FunctionTool,
    Tool,
    Toolbox,
    ToolError,
    ToolOutput,
    ToolProvider,
    ToolSet,
)

__all__ = [
    "CallResult",
    "CallStatus",
    "FunctionTool",
    "McpServerSettings",
    "Tool",
    "ToolError",
    "ToolOutput",
    "ToolProvider",
    "ToolSet",
    "Toolbox",
    "ToolsSettings",
    "WorkspaceToolSettings",
    "open_toolbox",
    "tools_settings",
]

_STRUCT: dict[str, Any] = {"frozen": True, "forbid_unknown_fields": True, "rename": "camel", "kw_only": True}


class WorkspaceToolSettings(msgspec.Struct, **_STRUCT):
    """``[tools.workspace]``: the directory the workspace tools are jailed in."""

    #: the workspace directory (relative to the working directory)
    root: str = "."
    #: let ``write_file`` replace an existing file (default: create only)
    overwrite: bool = False


class McpServerSettings(msgspec.Struct, **_STRUCT):
    """``[tools.mcp.NAME]``: a stdio ``command`` or a streamable-HTTP ``url``."""

    #: the server's command line (stdio); it runs as long as the chat, in its own process group
    command: list[str] = msgspec.field(default_factory=list)
    #: a streamable-HTTP endpoint, e.g. ``http://127.0.0.1:8931/mcp``
    url: str = ""
    #: environment variable holding the bearer token for ``url``
    token_env: str = ""
    #: extra environment variables for a stdio server
    env: dict[str, str] = msgspec.field(default_factory=dict)
    #: seconds the server may take to start and list its tools
    start_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=600)] = 30.0
    #: seconds one call may take before it is an error result
    call_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 120.0


class ToolsSettings(msgspec.Struct, **_STRUCT):
    """``[tools]``: which toolsets are on, and the per-turn bounds."""

    #: built-in toolsets offered to the model (``workspace``); also ``tickloop chat --tools``
    enabled: list[Literal["workspace"]] = msgspec.field(default_factory=list)
    #: tool rounds (model -> calls -> results) one turn may take; one more ends it as ``error``
    max_rounds: Annotated[int, msgspec.Meta(ge=1, le=64)] = 8
    #: characters of a tool's result the model and the transcript get
    max_result_chars: Annotated[int, msgspec.Meta(ge=256, le=1_000_000)] = 16_000
    #: the workspace toolset's options
    workspace: WorkspaceToolSettings = msgspec.field(default_factory=WorkspaceToolSettings)
    #: MCP servers whose tools are offered as ``SERVER__tool`` (extra ``mcp``)
    mcp: dict[str, McpServerSettings] = msgspec.field(default_factory=dict)


def tools_settings(raw: dict[str, Any], *, enable: Sequence[str] = ()) -> ToolsSettings:
    """Validate ``[tools]``; ``enable`` adds toolsets (``--tools workspace``). ``ConfigError`` names
    the key that is wrong."""
    try:
        settings = msgspec.convert(raw, ToolsSettings, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid configuration in [tools]: {exc}") from None
    for name in enable:
        if name != "workspace":
            raise ConfigError(f"--tools {name!r}: the only built-in toolset is 'workspace'")
    for name, server in settings.mcp.items():
        if bool(server.command) == bool(server.url):
            raise ConfigError(f'[tools.mcp.{name}]: give exactly one of command = [...] or url = "..."')
    enabled = sorted({*settings.enabled, *enable})
    return msgspec.structs.replace(settings, enabled=enabled)


def open_toolbox(settings: ToolsSettings) -> Toolbox:
    """The chat's toolbox: the workspace toolset if enabled, then every MCP server (each started by
    ``Toolbox.start``, which the agent awaits when it starts)."""
    providers: list[ToolProvider] = []
    if "workspace" in settings.enabled:
        providers.append(_workspace_provider(settings.workspace))
    if settings.mcp:
        providers.extend(_mcp_providers(settings))
    return Toolbox(providers, result_cap=settings.max_result_chars)


def _workspace_provider(workspace: WorkspaceToolSettings) -> ToolProvider:
    from tickloop.harness.tools.workspace import WorkspaceOptions, WorkspaceTools  # noqa: PLC0415

    root = Path(workspace.root).expanduser()
    try:
        return WorkspaceTools(WorkspaceOptions(root, overwrite=workspace.overwrite))
    except ToolError as exc:
        raise ConfigError(str(exc)) from None


def _mcp_providers(settings: ToolsSettings) -> list[ToolProvider]:
    """One provider per ``[tools.mcp.NAME]`` server, by name; each is rooted at the workspace root."""
    from tickloop.harness.tools.mcp import McpProvider, McpServerOptions  # noqa: PLC0415

    return [
        McpProvider(
            McpServerOptions(
                name=name,
                command=tuple(s.command),
                url=s.url,
                token_env=s.token_env,
                env=s.env,
                start_timeout_s=s.start_timeout_s,
                call_timeout_s=s.call_timeout_s,
                root=Path(settings.workspace.root).expanduser(),
            )
        )
        for name, s in sorted(settings.mcp.items())
    ]
