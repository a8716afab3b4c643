"""The MCP server: :class:`tickloop.mcp.face.Face` registered on the official SDK's ``MCPServer``.

Imported only by ``tickloop mcp serve`` (the SDK costs tens of times a bare interpreter to import).
Every tool is a thin call of the face; a library error (bad input, an unknown or another profile's
id, a refused transition) becomes a tool error carrying its message, and nothing is written. Tool
schemas are strict (``additionalProperties: false``): an argument a tool does not take is refused
by name instead of being ignored.
"""

# No ``from __future__ import annotations``: the SDK reads each tool's signature with eval_str, and
# the tools are closures whose annotations must be real objects.

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from mcp.server.lowlevel import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import Completion, EmptyResult, ResourceTemplateReference, ToolAnnotations
from mcp_types import (
    INVALID_PARAMS,
    ListResourcesResult,
    PaginatedRequestParams,
    Resource,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)
from pydantic import Field, StrictInt, StrictStr

from tickloop import __version__
from tickloop.errors import TickloopError
from tickloop.mcp import extras
from tickloop.mcp.face import RESOURCES, TOOLS, Face, View
from tickloop.mcp.watch import Watcher
from tickloop.operator.service import TASK_ACTIONS

T = TypeVar("T")

SERVER_NAME = "tickloop-operator"
INSTRUCTIONS = (
    "The tickloop operator's face for agents: read its goal, board, plan, progress, intents and "
    "monitor; add tasks, notes and draft goals; stage intents for the gate. Nothing here executes an "
    "intent, approves or denies one, or activates a goal: those belong to the person."
)
_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False)
_WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

Id = Annotated[StrictInt, Field(ge=1, le=2**63 - 1)]
Limit = Annotated[StrictInt, Field(ge=1, le=200)]
# an enum in the schema; the face still checks it, so a refusal names the argument the same way
Action = Annotated[StrictStr, Field(json_schema_extra={"enum": sorted(TASK_ACTIONS)})]
AGENT_HEADER = "x-tickloop-agent"


class StrictServer(MCPServer[Any]):
    """``MCPServer`` that refuses a tool call with an argument the tool does not take, and keeps
    the :class:`~tickloop.mcp.watch.Watcher` of its subscriptions (the transports run it)."""

    watcher: Watcher

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            unknown = sorted(set(arguments) - set(tool.parameters.get("properties", {})))
            if unknown:
                raise ToolError(
                    f"{name}: unknown argument(s) {unknown}; it takes {sorted(tool.parameters['properties'])}"
                )
        return await super().call_tool(name, arguments, context)


def agent_of(ctx: Context[Any, Any]) -> str | None:
    """The HTTP agent's token name, set by the guard (``tickloop.mcp.http``); None on stdio."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", None)
    found = None if headers is None else headers.get(AGENT_HEADER)
    return found if isinstance(found, str) else None


def _tool(call: Callable[[], T]) -> T:
    try:
        return call()
    except TickloopError as exc:
        raise ToolError(str(exc)) from None


def _resource(read: Callable[[], View], *, as_text: bool) -> Callable[[], str]:
    def handler() -> str:
        try:
            view = read()
        except TickloopError as exc:
            raise ResourceError(str(exc)) from None
        return view.text if as_text else extras.as_json(view)

    return handler


def build(face: Face) -> StrictServer:
    """A server exposing exactly ``RESOURCES``, ``TOOLS``, ``extras.TEMPLATES`` and ``extras.PROMPTS``
    of ``face``, with completions for ids and resource subscriptions."""
    server = StrictServer(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    for name, description in RESOURCES.items():
        read = _reader(face, name)
        server.resource(
            f"tickloop://{name}", name=name, description=description, mime_type="application/json"
        )(_resource(read, as_text=False))
        server.resource(
            f"tickloop://{name}.txt", name=f"{name}.txt", description=description, mime_type="text/plain"
        )(_resource(read, as_text=True))
    _register_tools(server, face)
    _register_extras(server, face)
    return server


def _register_extras(server: StrictServer, face: Face) -> None:
    for template, description in extras.TEMPLATES.items():
        server.resource(template, description=description, mime_type="application/json")(
            _template(face, template)
        )
    for name, description in extras.PROMPTS.items():
        server.prompt(name=name, description=description)(_prompt(face, name))
    # the SDK leaves completion() untyped
    server.completion()(_completer(face))  # type: ignore[no-untyped-call]
    server.watcher = Watcher(lambda uri: extras.read_uri(face, uri), lambda: extras.listing(face))
    _register_subscriptions(server)
    _register_listing(server, face)


def _template(face: Face, template: str) -> Callable[[str], str]:
    def read(value: str) -> str:
        try:
            return extras.as_json(extras.read_template(face, template, value))
        except TickloopError as exc:
            raise ResourceError(str(exc)) from None

    # the SDK passes the URI's parameter by its name
    def by_since(since: str) -> str:
        return read(since)

    def by_id(id: str) -> str:  # noqa: A002  (the template's parameter name)
        return read(id)

    return by_since if template.endswith("{since}") else by_id


def _prompt(face: Face, name: str) -> Callable[[], str]:
    def handler() -> str:
        try:
            return extras.get_prompt(face, name)
        except TickloopError as exc:
            raise ToolError(str(exc)) from None

    return handler


def _completer(face: Face) -> Callable[..., Any]:
    async def complete(ref: Any, argument: Any, _context: Any) -> Completion | None:
        if not isinstance(ref, ResourceTemplateReference):
            return None
        values = await anyio.to_thread.run_sync(
            lambda: extras.complete(face, ref.uri, argument.name, argument.value)
        )
        return Completion(values=values, has_more=False)

    return complete


def connection_of(ctx: Any, watcher: Watcher) -> Any:
    """The client's connection, which the watcher sends to: one per client, where ``ctx.session`` is
    made anew for each request. The watcher forgets it when it closes."""
    connection = ctx.session._connection  # ServerSession has no public accessor (SDK 2.3)
    if not connection.state.get("tickloop.watched"):
        connection.state["tickloop.watched"] = True
        connection.exit_stack.callback(watcher.forget, connection)
    return connection


def _register_subscriptions(server: StrictServer) -> None:
    watcher = server.watcher

    async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        try:
            await watcher.subscribe(str(params.uri), connection_of(ctx, watcher))
        except TickloopError as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        return EmptyResult()

    async def unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        watcher.unsubscribe(str(params.uri), connection_of(ctx, watcher))
        return EmptyResult()

    lowlevel = server._lowlevel_server  # MCPServer has no decorator for these (SDK 2.3)
    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)


WAITING = "Waiting for the person's decision; subscribe to it, or watch the list, to learn of the decision."
#: what the server promises to announce: the resource list changes as intents are staged and
#: decided; the prompts and tools are fixed (a prompt's text is built from the store at each get)
NOTIFICATIONS = NotificationOptions(resources_changed=True, prompts_changed=False, tools_changed=False)


def _register_listing(server: StrictServer, face: Face) -> None:
    """``resources/list``: the fixed resources, then one per intent waiting for the person; the
    session that lists is told of every later change of that list (``listChanged``)."""

    async def list_resources(ctx: Any, _params: PaginatedRequestParams) -> ListResourcesResult:
        fixed = await server.list_resources()
        waiting = await anyio.to_thread.run_sync(lambda: extras.waiting(face))
        await server.watcher.listed(connection_of(ctx, server.watcher))
        listed = [
            Resource(uri=uri, name=uri.removeprefix(extras.SCHEME), title=title, description=WAITING,
                     mime_type="application/json")
            for uri, title in waiting
        ]  # fmt: skip
        return ListResourcesResult(resources=[*fixed, *listed])

    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("resources/list", PaginatedRequestParams, list_resources)
    plain_options = lowlevel.create_initialization_options

    def options(notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any) -> Any:
        return plain_options(notification_options or NOTIFICATIONS, *args, **kwargs)

    # both transports (the SDK's HTTP app, our stdio) ask the low-level server with no arguments
    setattr(lowlevel, "create_initialization_options", options)  # noqa: B010  (mypy: no method assignment)


def _reader(face: Face, name: str) -> Callable[[], View]:
    return lambda: face.read(name)


def _register_tools(server: MCPServer[Any], face: Face) -> None:
    def add_task(title: StrictStr, priority: StrictInt = 0, notes: StrictStr = "") -> dict[str, Any]:
        return _tool(lambda: face.add_task(title, priority, notes))

    def set_task_status(task_id: Id, action: Action) -> dict[str, Any]:
        """action: block, unblock or done."""
        return _tool(lambda: face.set_task_status(task_id, action))

    def stage_intent(
        type: StrictStr,  # noqa: A002  (the wire name agents see)
        title: StrictStr,
        ctx: Context[Any, Any],
        recipient: StrictStr = "",
        payload: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        return _tool(lambda: face.stage_intent(type, title, recipient, payload, agent=agent_of(ctx)))

    def explain_intent(intent_id: Id) -> dict[str, Any]:
        return _tool(lambda: face.explain_intent(intent_id))

    def search_memory(query: StrictStr, limit: Limit = 20) -> dict[str, Any]:
        return _tool(lambda: face.search_memory(query, limit))

    def add_memory_note(text: StrictStr) -> dict[str, Any]:
        return _tool(lambda: face.add_memory_note(text))

    def progress(limit: Limit = 20) -> dict[str, Any]:
        return _tool(lambda: face.progress(limit))

    def draft_goal(title: StrictStr, body: StrictStr = "") -> dict[str, Any]:
        return _tool(lambda: face.draft_goal(title, body))

    tools: dict[str, Callable[..., dict[str, Any]]] = {
        "add_task": add_task,
        "set_task_status": set_task_status,
        "stage_intent": stage_intent,
        "explain_intent": explain_intent,
        "search_memory": search_memory,
        "add_memory_note": add_memory_note,
        "progress": progress,
        "draft_goal": draft_goal,
    }
    read_only = {"explain_intent", "search_memory", "progress"}
    if set(tools) != set(TOOLS):
        raise RuntimeError("tickloop.mcp: the registered tools differ from face.TOOLS")
    for name, fn in tools.items():
        annotations = _READ_ONLY if name in read_only else _WRITES
        server.add_tool(fn, name=name, description=TOOLS[name], annotations=annotations)
        made = server._tool_manager.get_tool(name)
        assert made is not None
        made.parameters["additionalProperties"] = False
