"""Fixtures for the MCP face's tests (the helpers live in mcp_support)."""

from __future__ import annotations

from mcp_support import op, sqlite_op

__all__ = ["op", "sqlite_op"]
