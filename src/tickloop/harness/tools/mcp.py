"""MCP servers as tool providers, through the official ``mcp`` SDK's client (extra ``mcp``).

Each configured server (``[tools.mcp.NAME]``) gets one long-lived task that owns its connection: it
starts the stdio subprocess (in its own process group, which the SDK terminates as a tree on close)
or connects to a streamable-HTTP URL, initializes the session, lists the tools, then waits until the
chat closes. Owning the connection in one task matters: the SDK's transports are anyio task groups
that must be entered and left by the same task.

A stdio server is stopped as the SDK does it (stdin closed, then its process group terminated if it
has not exited), and then whatever is left of its process group is terminated too: a grandchild
that ignores its stdin does not outlive the chat.

The model sees each tool as ``SERVER__tool``. Two tools whose names collide once sanitised
(``get.x`` and ``get_x``) are refused with a notice rather than one shadowing the other, and
``notifications/tools/list_changed`` lists the server's tools again. A server that fails to start,
or dies mid-session, produces a notice; the chat stays usable, and a call to one of its tools gets
an error result saying the server is not available. A call cut off by the server's crash or by
``callTimeoutS`` has outcome ``unknown`` (``OutcomeUnknownError``), as an interrupted call does: the model
is told it may or may not have taken effect, and it is never re-run. HTTP refusals name their
status (401, 403, 429 with its ``Retry-After``). The client introduces itself as ``tickloop`` with
its version, and a stdio server's stderr goes to ``STATE/mcp-logs/NAME.log``.

What a result becomes (text, images for a vision model, validated ``structuredContent``) is
``mcp_content``; the person's ``/mcp`` commands over resources and prompts are ``mcp_commands``,
through ``McpProvider.request``.

The SDK is imported only in these modules, and they only when a server is configured.
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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tickloop.errors import extra_hint
from tickloop.harness.tools.base import (
    CALL_PROGRESS,
    FunctionTool,
    OutcomeUnknownError,
    Tool,
    ToolError,
    ToolOutput,
)
from tickloop.harness.tools.mcp_content import joined_text, tool_output
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
    #: the workspace directory, declared to the server as the client's one root
    root: Path | None = None


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
        self._relist = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failure: str | None = None
        self._errlog: Any = None
        self._log_path: Path | None = None
        self._refusal: tuple[int, dict[str, str]] | None = None
        self._schemas: dict[str, Any] = {}
        self._group_file: Path | None = None

    @property
    def alive(self) -> bool:
        return self._session is not None and self._failure is None

    @property
    def failure(self) -> str | None:
        """Why this server is not available (it failed to start or died), or None."""
        return self._failure

    @property
    def prefix(self) -> str:
        """What every one of this server's tool names starts with."""
        return tool_name(self.name, "")

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

                session = await stack.enter_async_context(
                    ClientSession(
                        read,
                        write,
                        list_roots_callback=self._roots,
                        message_handler=self._on_message,
                        client_info=_client_info(),
                    )
                )
                await session.initialize()
                await self._list(session)
                self._session = session
                self._ready.set()
                await self._serve_relists(session)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001  (any failure of a server is a notice, not a crash)
            self._fail(self._start_failure(exc) if not self._ready.is_set() else _describe(exc))
        finally:
            self._session = None
            self._ready.set()
        if not self._stop.is_set():
            self._fail("the server's connection ended")

    async def _list(self, session: ClientSession) -> None:
        """List the server's tools; a name that collides once sanitised is refused with a notice."""
        listed = await session.list_tools()
        tools: dict[str, Tool] = {}
        self._schemas = {t.name: t.output_schema for t in listed.tools}
        for t in listed.tools:
            made = self._tool(t.name, t.description or "", t.input_schema)
            if made.spec.name in tools:
                self._notice(
                    f"MCP server {self.name}: tool {t.name[:80]!r} is refused: its name becomes "
                    f"{made.spec.name!r}, as another tool's does"
                )
                continue
            tools[made.spec.name] = made
        self._tools = list(tools.values())

    async def _serve_relists(self, session: ClientSession) -> None:
        """Until the chat closes, list the tools again whenever the server says they changed."""
        while not self._stop.is_set():
            relist = asyncio.create_task(self._relist.wait())
            stop = asyncio.create_task(self._stop.wait())
            await asyncio.wait((relist, stop), return_when="FIRST_COMPLETED")
            relist.cancel()
            stop.cancel()
            if self._relist.is_set() and not self._stop.is_set():
                self._relist.clear()
                await self._list(session)

    async def _roots(self, context: Any) -> Any:  # noqa: ARG002  (the SDK passes it by name)
        """``roots/list``: the workspace directory (none when no workspace is configured)."""
        from mcp.types import ListRootsResult, Root  # noqa: PLC0415

        root = self.options.root
        roots = [] if root is None else [Root(uri=root.resolve().as_uri(), name="workspace")]  # type: ignore[arg-type]
        return ListRootsResult(roots=roots)

    async def _on_message(self, message: Any) -> None:
        from mcp.types import ToolListChangedNotification  # noqa: PLC0415

        if isinstance(message, ToolListChangedNotification):
            self._relist.set()

    def _start_failure(self, exc: BaseException) -> str:
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        if getattr(exc, "code", None) == CONNECTION_CLOSED and self.options.command:
            shown = shlex.join(self.options.command)[:200]
            return f"the server exited during start-up; run `{shown}` by hand to see why"
        if isinstance(exc, ToolError):
            return f"could not start: {exc}"
        if isinstance(exc, ImportError):
            return f"the MCP client is not installed: {extra_hint('mcp')}"
        refused = self._refused(exc)
        if refused is not None:
            return f"could not start: {refused}"
        log = f"; its stderr is in {self._log_path}" if self._log_path is not None else ""
        return f"could not start ({_describe(exc)}){log}"

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
            # The server's stderr goes to a log file: it must not scribble over the chat's terminal.
            self._log_path = _log_path(self.name)
            self._errlog = self._log_path.open("a", encoding="utf-8")  # lives as long as the server
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
        # the SDK turns a refused request into a bare "error response": keep the status to name it
        http_client.event_hooks["response"].append(self._note_refusal)
        stack.push_async_callback(http_client.aclose)
        return streamable_http_client(options.url, http_client=http_client)

    async def _note_refusal(self, response: Any) -> None:
        if response.status_code >= 400:
            self._refusal = (int(response.status_code), dict(response.headers))

    def _refused(self, exc: BaseException) -> str | None:
        refusal, self._refusal = self._refusal, None
        return _http_refusal(exc, self.options.token_env, refusal)

    def _tool(self, name: str, description: str, schema: Mapping[str, Any]) -> Tool:
        spec = ToolSpec(tool_name(self.name, name), f"[MCP server {self.name}] {description}"[:1024], schema)

        async def call(arguments: Mapping[str, Any]) -> str | ToolOutput:
            return await self._call(name, arguments)

        return FunctionTool(spec, call)

    async def _call(self, name: str, arguments: Mapping[str, Any]) -> str | ToolOutput:
        session = self._session
        if session is None or self._failure is not None:
            raise ToolError(f"MCP server {self.name} is not available ({self._failure or 'not started'})")
        try:
            async with asyncio.timeout(self.options.call_timeout_s):
                result = await session.call_tool(name, dict(arguments), progress_callback=_progress())
        except TimeoutError:
            waited = self.options.call_timeout_s
            raise OutcomeUnknownError(f"MCP server {self.name}: no answer within {waited:g} s") from None
        except Exception as exc:  # noqa: BLE001  (a dying server surfaces as many exception types)
            ended = self._task is not None and self._task.done()
            if getattr(exc, "code", None) == CONNECTION_CLOSED or ended:
                self._fail("the connection closed (the server exited or crashed)")
                raise OutcomeUnknownError(f"MCP server {self.name}: the connection closed mid-call") from None
            refused = self._refused(exc)
            raise ToolError(f"MCP server {self.name}: {refused or _describe(exc)}") from None
        if result.is_error:
            raise ToolError(f"{name} reported an error: {joined_text(result.content)}")
        return tool_output(result, self._schemas.get(name))

    async def request(self, what: str, ask: Callable[[ClientSession], Awaitable[Any]]) -> Any:
        """``ask(session)`` for a person's ``/mcp`` command, bounded by ``callTimeoutS``; any failure
        is a ``ToolError`` that says what happened."""
        session = self._session
        if session is None or self._failure is not None:
            raise ToolError(f"MCP server {self.name} is not available ({self._failure or 'not started'})")
        try:
            async with asyncio.timeout(self.options.call_timeout_s):
                return await ask(session)
        except TimeoutError:
            waited = self.options.call_timeout_s
            raise ToolError(f"MCP server {self.name}: no answer to {what} within {waited:g} s") from None
        except Exception as exc:  # noqa: BLE001  (the server's refusal, or its death: both a message)
            refused = self._refused(exc)
            raise ToolError(f"MCP server {self.name}: {what}: {refused or _describe(exc)}") from None

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


def _progress() -> Any:
    """The SDK's progress callback for the running call (the SDK then sends a ``progressToken``),
    or None when nobody listens."""
    listener = CALL_PROGRESS.get()
    if listener is None:
        return None

    async def heard(progress: float, total: float | None, message: str | None) -> None:
        listener(progress, total, message or "")

    return heard


def _client_info() -> Any:
    from mcp.types import Implementation  # noqa: PLC0415

    from tickloop import __version__  # noqa: PLC0415

    return Implementation(name="tickloop", version=__version__)


def log_path(server: str) -> Path:
    """Where a stdio server's stderr goes: ``$XDG_STATE_HOME/tickloop/mcp-logs/SERVER.log``."""
    from tickloop.dirs import user_state_path  # noqa: PLC0415

    return user_state_path() / "mcp-logs" / f"{_NAME_UNSAFE.sub('_', server)}.log"


def server_logs(tool_names: Sequence[str]) -> dict[str, Path]:
    """The stderr logs that exist of the servers whose tools (``SERVER__tool``) were called."""
    servers = sorted({name.split(SEPARATOR, 1)[0] for name in tool_names if SEPARATOR in name})
    return {server: path for server in servers if (path := log_path(server)).is_file()}


def _log_path(server: str) -> Path:
    """``log_path(server)``, its directory made (0700)."""
    path = log_path(server)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


_REFUSALS = {
    401: "HTTP 401 Unauthorized: the server refused the bearer token{token}",
    403: "HTTP 403 Forbidden: the server refused this client (its Origin or its permissions)",
    429: "HTTP 429 Too Many Requests: the server is rate-limiting this client{retry}",
}


def _http_refusal(
    exc: BaseException, token_env: str, seen: tuple[int, dict[str, str]] | None = None
) -> str | None:
    """``HTTP 401 ...`` for the refusal ``seen`` on the wire, or an HTTP status error anywhere in
    ``exc`` (a group, a cause); else None."""
    found = seen or _find_status(exc, 0)
    if found is None:
        return None
    status, headers = found
    retry = headers.get("retry-after") if headers is not None else None
    template = _REFUSALS.get(status, "HTTP {status}: the server refused the request")
    return template.format(
        status=status,
        token=f" in ${token_env}" if token_env else " (none was sent: set tokenEnv)",
        retry=f"; retry after {retry[:20]} s" if retry else "",
    )


def _find_status(exc: BaseException, depth: int) -> tuple[int, Any] | None:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int) and status >= 400:
        return status, getattr(response, "headers", None)
    inner: list[BaseException] = list(exc.exceptions) if isinstance(exc, BaseExceptionGroup) else []
    inner += [e for e in (exc.__cause__, exc.__context__) if e is not None]
    for item in inner if depth < 6 else []:
        found = _find_status(item, depth + 1)
        if found is not None:
            return found
    return None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions[:3])
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:300]
