"""A small MCP server for the tool tests, built with the official SDK, run as a real subprocess.

Tools: ``bump(label)`` appends ``label`` to the file ``$COUNTER_FILE`` (the side-effect counter) and,
for ``label == "slow"``, then sleeps ``$SLOW_S`` seconds; ``echo(text)`` returns its text;
``auth()`` returns the HTTP Authorization header it was called with; ``boom()`` raises; ``die()``
ends the server process; ``whoami()`` returns the client's name and version from ``initialize``;
``grow()`` adds the tool ``extra`` and sends ``notifications/tools/list_changed``; ``get.x`` and
``get_x`` (with ``$COLLIDE`` set) collide once sanitised; ``weather()`` returns structured content (which
breaks its advertised outputSchema with ``$BAD_SCHEMA`` set). With ``$PID_FILE`` set it writes its pid
there; ``--http PORT`` serves streamable HTTP on 127.0.0.1 instead of stdio.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

app = MCPServer("counter")


@app.tool()
async def bump(label: str) -> str:
    """Count one execution, then (for "slow") take a while."""
    with Path(os.environ["COUNTER_FILE"]).open("a", encoding="utf-8") as handle:
        handle.write(label + "\n")
    if label == "slow":
        await asyncio.sleep(float(os.environ.get("SLOW_S", "30")))
    return f"bumped {label}"


@app.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@app.tool()
def auth(ctx: Context) -> str:
    """The Authorization header of the HTTP request that carried this call ("none" over stdio)."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", None)
    return str(headers.get("authorization", "none")) if headers is not None else "none"


@app.tool()
def boom() -> str:
    """Fail."""
    raise RuntimeError("boom from the server")


@app.tool()
def die() -> str:
    """End the server process at once."""
    os._exit(3)


@app.tool()
def whoami(ctx: Context) -> str:
    """The client's name and version, as it introduced itself."""
    params = ctx.request_context.session.client_params
    info = None if params is None else params.client_info
    return "unknown" if info is None else f"{info.name} {info.version}"


def extra() -> str:
    """A tool that appears after grow()."""
    return "extra is here"


@app.tool()
async def grow(ctx: Context) -> str:
    """Add the tool ``extra`` and tell the client the list changed."""
    app.add_tool(extra, name="extra")
    await ctx.request_context.session.send_tool_list_changed()
    return "grown"


def get_dot_x() -> str:
    """The first of two names that collide once sanitised."""
    return "get.x"


def get_under_x() -> str:
    """The second of them."""
    return "get_x"


class Weather(BaseModel):
    """What ``weather`` returns."""

    temperature: float


@app.tool()
def weather() -> Annotated[CallToolResult, Weather]:
    """Structured content valid for the outputSchema it declares (except with ``$BAD_SCHEMA`` set),
    and a text that differs from it."""
    text = TextContent(type="text", text="it is warm")
    return CallToolResult(content=[text], structured_content={"temperature": 36.5})


if os.environ.get("BAD_SCHEMA"):
    # advertise a schema the result does not meet: the client, not the server, must catch it
    schema = app._tool_manager.get_tool("weather").output_schema
    assert schema is not None
    schema["properties"]["temperature"]["type"] = "string"


if os.environ.get("COLLIDE"):
    app.add_tool(get_dot_x, name="get.x")
    app.add_tool(get_under_x, name="get_x")


if __name__ == "__main__":
    if os.environ.get("PID_FILE"):
        Path(os.environ["PID_FILE"]).write_text(str(os.getpid()))
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()
