"""A small MCP server for the tool tests, built with the official SDK, run as a real subprocess.

Tools: ``bump(label)`` appends ``label`` to the file ``$COUNTER_FILE`` (the side-effect counter) and,
for ``label == "slow"``, then sleeps ``$SLOW_S`` seconds; ``echo(text)`` returns its text;
``auth()`` returns the HTTP Authorization header it was called with; ``boom()`` raises; ``die()``
ends the server process. With ``$PID_FILE`` set it writes its pid there; ``--http PORT`` serves
streamable HTTP on 127.0.0.1 instead of stdio.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer

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


if __name__ == "__main__":
    if os.environ.get("PID_FILE"):
        Path(os.environ["PID_FILE"]).write_text(str(os.getpid()))
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()
