"""Sixteen agents at once, each through its own `tickloop mcp serve` process on one store."""

from __future__ import annotations

import asyncio

import pytest
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
