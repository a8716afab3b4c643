"""Sixteen agents at once, each through its own `tickloop mcp serve` process on one store."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_support import Operator, data

CLIENTS = 16


async def _agent(op: Operator, n: int) -> tuple[int, int]:
    async with op.client() as client:
        staged = await client.call_tool("stage_intent", {"type": "note", "title": f"note {n}"})
        task = await client.call_tool("add_task", {"title": f"task {n}"})
        return data(staged)["intent"]["id"], data(task)["task"]["id"]


@pytest.mark.slow
async def test_sixteen_clients_stage_and_add_at_once_without_lost_or_doubled_rows(op: Operator) -> None:
    """16 concurrent MCP clients on SQLite and PostgreSQL: every intent and task stored exactly once."""
    made = await asyncio.gather(*(_agent(op, n) for n in range(CLIENTS)))
    intents = op.json("operator", "intents", "--profile", "me")
    tasks = op.json("operator", "board", "--profile", "me")["tasks"]
    assert sorted(i["title"] for i in intents) == sorted(f"note {n}" for n in range(CLIENTS))
    assert len({i["id"] for i in intents}) == CLIENTS
    assert {i["id"] for i in intents} == {intent for intent, _ in made}
    assert all(i["status"] in {"ready", "requires_approval"} for i in intents)  # each gate-stamped once
    titles = sorted(t["title"] for t in tasks)
    assert titles == sorted([*(f"task {n}" for n in range(CLIENTS)), "write tests"])
    assert {task for _, task in made} <= {t["id"] for t in tasks}


async def _http_agent(url: str, token: str, n: int) -> tuple[int, int]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        mail = {
            "type": "email",
            "title": f"mail {n}",
            "recipient": f"p{n}@example.org",
            "payload": {"body": "hi"},
        }
        staged = await client.call_tool("stage_intent", mail)
        task = await client.call_tool("add_task", {"title": f"task {n}"})
        return data(staged)["intent"]["id"], data(task)["task"]["id"]


@pytest.mark.slow
async def test_sixteen_http_sessions_on_one_server_share_the_store_safely(op: Operator) -> None:
    """16 concurrent sessions on one HTTP server (its worker threads share one store): each row once."""
    token = op.cli("mcp", "token").stdout.strip()
    argv = [sys.executable, "-m", "tickloop", "mcp", "serve", "--profile", "me", "--transport", "http"]
    flags = ["--port", "0", "--rate-limit", "100000"]
    proc = subprocess.Popen([*argv, *flags], stderr=subprocess.PIPE, text=True, env=op.env)
    assert proc.stderr is not None
    try:
        url = proc.stderr.readline().split("serving on ", 1)[1].strip()
        made = await asyncio.gather(*(_http_agent(url, token, n) for n in range(CLIENTS)))
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        proc.stderr.close()
    intents = op.json("operator", "intents", "--profile", "me")
    assert sorted(i["title"] for i in intents) == sorted(f"mail {n}" for n in range(CLIENTS))
    assert {i["id"] for i in intents} == {intent for intent, _ in made}
    assert {i["status"] for i in intents} == {"requires_approval"}
    tasks = op.json("operator", "board", "--profile", "me")["tasks"]
    assert len(tasks) == CLIENTS + 1
    assert {task for _, task in made} <= {t["id"] for t in tasks}
