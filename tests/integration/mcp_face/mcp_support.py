"""A real store with a profile, and `tickloop mcp serve` as a subprocess that the SDK's client starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CallToolResult


class Operator:
    """One store URL (SQLite file or a PostgreSQL schema), the CLI on it, and MCP clients to it."""

    def __init__(self, url: str, tmp_path: Path) -> None:
        self.url = url
        self.tmp_path = tmp_path
        self.env = {**os.environ, "TICKLOOP_STORE": url}

    def config(self, text: str) -> None:
        """Write a TOML config file every later process reads."""
        path = self.tmp_path / "config.toml"
        path.write_text(text, encoding="utf-8")
        self.env["TICKLOOP_CONFIG"] = str(path)

    def cli(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "tickloop.cli", *args],
            capture_output=True,
            text=True,
            env=self.env,
            check=False,
            timeout=120,
        )
        if ok:
            assert done.returncode == 0, done.stderr
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self.cli(*args, "--json").stdout)

    def params(self, profile: str = "me") -> StdioServerParameters:
        names = ("TICKLOOP_", "XDG_", "PYTHON")
        env = {k: v for k, v in self.env.items() if k.startswith(names)}
        argv = ["-m", "tickloop", "mcp", "serve", "--profile", profile]
        return StdioServerParameters(command=sys.executable, args=argv, env=env)

    @asynccontextmanager
    async def client(self, profile: str = "me") -> AsyncIterator[Client]:
        async with Client(self.params(profile)) as client:
            yield client


def data(result: CallToolResult) -> Any:
    """A successful tool result's JSON."""
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


def error(result: CallToolResult) -> str:
    """A failed tool result's message."""
    assert result.is_error, result.content
    return str(result.content[0].text)  # type: ignore[union-attr]


def make_operator(url: str, tmp_path: Path) -> Operator:
    op = Operator(url, tmp_path)
    op.cli("operator", "init", "--profile", "me", "--goal", "Ship v1", "--task", "write tests")
    op.cli("operator", "init", "--profile", "other", "--goal", "Someone else's goal", "--task", "theirs")
    return op


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def op(request: pytest.FixtureRequest, tmp_path: Path) -> Operator:
    """Profiles `me` and `other` (each with an active goal and a task) on SQLite and on PostgreSQL."""
    url = f"sqlite://{tmp_path / 'op.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    return make_operator(url, tmp_path)


@pytest.fixture
def sqlite_op(tmp_path: Path) -> Operator:
    """The same, on a SQLite file only."""
    return make_operator(f"sqlite://{tmp_path / 'op.db'}", tmp_path)
