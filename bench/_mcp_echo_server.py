"""The MCP server ``bench_tools`` calls: one ``echo`` tool, built with the official SDK, over stdio."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

app = MCPServer("bench")


@app.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


if __name__ == "__main__":
    app.run()
