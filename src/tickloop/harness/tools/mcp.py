"""MCP servers as tool providers, through the official ``mcp`` SDK's client (extra ``mcp``).

Each configured server (``[tools.mcp.NAME]``) gets one long-lived task that owns its connection: it
starts the stdio subprocess (in its own process group, which the SDK terminates as a tree on close)
or connects to a streamable-HTTP URL, initializes the session, lists the tools, then waits until the
chat closes. Owning the connection in one task matters: the SDK's transports are anyio task groups
that must be entered and left by the same task.

A stdio server is stopped as the SDK does it (stdin closed, then its process group terminated if it
has not exited), and then whatever is left of its process group is terminated too: a grandchild
that ignores its stdin does not outlive the chat.

The model sees each tool as ``SERVER__tool``. A server that fails to start, or dies mid-session,
produces a notice; the chat stays usable, and a call to one of its tools gets an error result.

The SDK is imported only here, and this module only when a server is configured.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tickloop.harness.tools.base import FunctionTool, Tool, ToolError
from tickloop.models.base import ToolSpec

if TYPE_CHECKING:
    from mcp import ClientSession

#: OpenAI function names allow ``[A-Za-z0-9_-]{1,64}``
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
SEPARATOR = "__"
#: JSON-RPC error code the SDK gives a request whose connection closed (``mcp_types.CONNECTION_CLOSED``)
CONNECTION_CLOSED = -32000


@dataclass(frozen=True, slots=True)
class McpServerOptions:
    """How to reach one server: ``command`` (stdio) or ``url`` (streamable HTTP, bearer token from
    the environment variable ``token_env``)."""

    name: str
    command: tuple[str, ...] = ()
    url: str = ""
    token_env: str = ""
    env: Mapping[str, str] | None = None
    start_timeout_s: float = 30.0
    call_timeout_s: float = 120.0


def tool_name(server: str, tool: str) -> str:
    return _NAME_UNSAFE.sub("_", f"{server}{SEPARATOR}{tool}")[:64]


class McpProvider:
    """One MCP server's tools. ``await start()`` before use; ``await aclose()`` ends the server."""

    def __init__(self, options: McpServerOptions) -> None:
        self.options = options
        self.name = options.name
        self._notice: Callable[[str], None] = print  # replaced by start(); never used before it
        self._session: ClientSession | None = None
        self._tools: list[Tool] = []
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failure: str | None = None
        self._errlog: Any = None
        self._group_file: Path | None = None

    @property
    def alive(self) -> bool:
        return self._session is not None and self._failure is None

    def tools(self) -> Sequence[Tool]:
        return self._tools

    async def start(self, notice: Callable[[str], None]) -> None:
        """Connect and list the tools; on failure, a notice (the chat goes on without them)."""
        self._notice = notice
        self._task = asyncio.create_task(self._own(), name=f"tickloop-mcp-{self.name}")
        waiter = asyncio.create_task(self._ready.wait())
        await asyncio.wait(
            (self._task, waiter), timeout=self.options.start_timeout_s, return_when="FIRST_COMPLETED"
        )
        waiter.cancel()
        if not self._ready.is_set():
            self._fail(f"did not start within {self.options.start_timeout_s:g} s")
            await self.aclose()

    async def _own(self) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(stack))
                from mcp import ClientSession  # noqa: PLC0415  (extra `mcp`; only when configured)

                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                listed = await session.list_tools()
                self._tools = [self._tool(t.name, t.description or "", t.input_schema) for t in listed.tools]
                self._session = session
                self._ready.set()
                await self._stop.wait()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001  (any failure of a server is a notice, not a crash)
            self._fail(self._start_failure(exc) if not self._ready.is_set() else _describe(exc))
        finally:
            self._session = None
            self._ready.set()
        if not self._stop.is_set():
            self._fail("the server's connection ended")

    def _start_failure(self, exc: BaseException) -> str:
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        if getattr(exc, "code", None) == CONNECTION_CLOSED and self.options.command:
            shown = shlex.join(self.options.command)[:200]
            return f"the server exited during start-up; run `{shown}` by hand to see why"
        if isinstance(exc, ToolError):
            return f"could not start: {exc}"
        if isinstance(exc, ImportError):
            return "the MCP client is not installed: pip install 'tickloop[mcp]'"
        return f"could not start ({_describe(exc)})"

    def _transport(self, stack: contextlib.AsyncExitStack) -> contextlib.AbstractAsyncContextManager[Any]:
        options = self.options
        if options.command:
            from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: PLC0415

            # The SDK starts the server as the leader of a new session, so its pid is its process
            # group id; a one-line sh wrapper writes that pid down before exec'ing the command, so
            # that ``aclose`` can end the whole group (children that outlive the server included).
            if shutil.which(options.command[0]) is None:
                raise ToolError(f"command {options.command[0]!r} not found (not a file, or not on PATH)")
            fd, name = tempfile.mkstemp(prefix="tickloop-mcp-", suffix=".pgid")
            os.close(fd)
            self._group_file = Path(name)
            params = StdioServerParameters(
                command="/bin/sh",
                args=["-c", 'echo $$ > "$0" && exec "$@"', name, *options.command],
                env=dict(options.env or {}),
            )
            # The server's stderr goes nowhere: it must not scribble over the chat's terminal.
            self._errlog = open(os.devnull, "w")  # noqa: SIM115, PTH123  (lives as long as the server)
            return stdio_client(params, errlog=self._errlog)
        from mcp.client.streamable_http import streamable_http_client  # noqa: PLC0415
        from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: PLC0415

        headers = {}
        if options.token_env:
            token = os.environ.get(options.token_env)
            if not token:
                raise ToolError(f"${options.token_env} is not set (tokenEnv of [tools.mcp.{self.name}])")
            headers["Authorization"] = f"Bearer {token}"
        # The transport leaves a client it was given open: the stack closes it after the transport.
        http_client = create_mcp_http_client(headers=headers)
        stack.push_async_callback(http_client.aclose)
        return streamable_http_client(options.url, http_client=http_client)

    def _tool(self, name: str, description: str, schema: Mapping[str, Any]) -> Tool:
        spec = ToolSpec(tool_name(self.name, name), f"[MCP server {self.name}] {description}"[:1024], schema)

        async def call(arguments: Mapping[str, Any]) -> str:
            return await self._call(name, arguments)

        return FunctionTool(spec, call)

    async def _call(self, name: str, arguments: Mapping[str, Any]) -> str:
        session = self._session
        if session is None or self._failure is not None:
            raise ToolError(f"MCP server {self.name} is not available ({self._failure or 'not started'})")
        try:
            async with asyncio.timeout(self.options.call_timeout_s):
                result = await session.call_tool(name, dict(arguments))
        except TimeoutError:
            waited = self.options.call_timeout_s
            raise ToolError(f"MCP server {self.name}: no answer within {waited:g} s") from None
        except Exception as exc:  # noqa: BLE001  (a dying server surfaces as many exception types)
            ended = self._task is not None and self._task.done()
            if getattr(exc, "code", None) == CONNECTION_CLOSED or ended:
                self._fail("the connection closed (the server exited or crashed)")
            raise ToolError(f"MCP server {self.name}: {_describe(exc)}") from None
        text = "\n".join(_block_text(block) for block in result.content)
        if result.is_error:
            raise ToolError(f"{name} reported an error: {text}")
        return text

    def _fail(self, why: str) -> None:
        if self._failure is None:
            self._failure = why
            self._notice(f"MCP server {self.name}: {why}; its tools answer with an error")

    async def aclose(self) -> None:
        """Close the session and end the server (its whole process group, for stdio)."""
        self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            try:
                await asyncio.wait_for(task, timeout=10)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()
            except Exception:  # noqa: BLE001, S110  (already reported through the notice)
                pass
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None
        if self._group_file is not None:
            await _end_group(self._group_file)
            self._group_file = None


async def _end_group(group_file: Path) -> None:
    """SIGTERM what is left of the server's process group, SIGKILL it after a second; forget the file."""
    try:
        pgid = int(group_file.read_text().strip() or 0)
    except (OSError, ValueError):
        pgid = 0
    group_file.unlink(missing_ok=True)
    if pgid <= 1:
        return
    for sig, grace in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            await asyncio.sleep(0.02)
            try:
                os.killpg(pgid, 0)
            except (ProcessLookupError, PermissionError):
                return


def _block_text(block: Any) -> str:
    text = getattr(block, "text", None)
    if isinstance(text, str):
        return text
    return f"[{getattr(block, 'type', 'content')} content not shown]"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions[:3])
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:300]
