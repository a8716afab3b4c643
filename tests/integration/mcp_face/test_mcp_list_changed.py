"""`listChanged`: the resource list holds the intents waiting for the person, and a client that has
listed it is told when it changes, over stdio (the SDK's client) and HTTP."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.to_thread
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ResourceListChangedNotification
from mcp_support import Operator, data
from test_mcp_http import serving


class Changes:
    """The list_changed notifications a client got, and a way to wait for the next one."""

    def __init__(self) -> None:
        self.count = 0
        self.event = anyio.Event()

    async def handler(self, message: Any) -> None:
        if isinstance(message, ResourceListChangedNotification):
            self.count += 1
            self.event.set()

    async def next(self) -> None:
        with anyio.fail_after(30):
            await self.event.wait()
        self.event = anyio.Event()


async def waiting_uris(client: Client) -> list[str]:
    listed = (await client.list_resources()).resources
    return [r.uri for r in listed if r.uri.startswith("tickloop://intents/")]


async def stage_then_decide(op: Operator, client: Client, changes: Changes) -> None:
    """The agent lists, stages an intent (the list grows), the person approves it (it shrinks)."""
    caps = client.server_capabilities
    assert caps is not None
    assert (caps.resources and caps.resources.list_changed, caps.prompts and caps.prompts.list_changed) == (
        True,
        False,
    )
    assert await waiting_uris(client) == []
    staged = data(await client.call_tool("stage_intent", {"type": "note", "title": "jot \x1b[2J"}))["intent"]
    await changes.next()
    uri = f"tickloop://intents/{staged['id']}"
    listed = [r for r in (await client.list_resources()).resources if r.uri == uri]
    assert [(r.name, r.title) for r in listed] == [(f"intents/{staged['id']}", f"#{staged['id']} note: jot ")]
    approve = ("operator", "approve", str(staged["id"]), "--profile", "me")
    await anyio.to_thread.run_sync(lambda: op.cli(*approve))
    await changes.next()
    assert await waiting_uris(client) == []
    assert changes.count == 2


@pytest.mark.timeout(120)
async def test_a_listing_client_learns_over_stdio_that_an_intent_was_staged_and_decided(
    sqlite_op: Operator,
) -> None:
    """Over stdio, an agent that listed the resources gets notifications/resources/list_changed when
    its intent appears in the list (waiting for the person) and again when the person decides it."""
    changes = Changes()
    async with Client(sqlite_op.params(), message_handler=changes.handler, mode="legacy") as client:
        await stage_then_decide(sqlite_op, client, changes)


@pytest.mark.timeout(120)
async def test_a_listing_client_learns_over_http_that_an_intent_was_staged_and_decided(
    sqlite_op: Operator,
) -> None:
    """Over streamable HTTP, the same, on the session's event stream."""
    token = sqlite_op.cli("mcp", "token").stdout.strip()
    changes = Changes()
    with serving(sqlite_op) as url:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
            Client(
                streamable_http_client(url, http_client=http), message_handler=changes.handler, mode="legacy"
            ) as client,
        ):
            await stage_then_decide(sqlite_op, client, changes)
