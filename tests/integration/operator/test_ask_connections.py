"""A tick's model calls leave no connection behind: each runs in its own event loop, and a pooled
connection (kept for remote endpoints) would outlive that loop, open until garbage collection."""

from __future__ import annotations

from typing import Any

from tickloop.config import Settings
from tickloop.models.openai_compat import OpenAICompatModel
from tickloop.operator.context import ContextPacket
from tickloop.operator.runner import TickContext
from tickloop.operator.schemas import ActionAnswer, action_schema
from tickloop.operator.store import open_store
from tickloop.operator.ticks._ask import ask
from tickloop.testing import FakeClock
from tickloop.testing.openai_server import MODEL_ID, OpenAIServer, Reply

ANSWER: Any = ActionAnswer
INTENT = '{"actionType": "note", "title": "Write the outline", "body": ""}'


def test_each_call_of_a_tick_closes_its_connection_even_when_the_endpoint_keeps_them() -> None:
    """Two calls of one tick (the fast tick and its critique) to an endpoint with keep-alive on (as
    every remote one is): after each call the server sees no open connection."""
    with OpenAIServer(default=Reply(content=INTENT)) as server, open_store("memory://") as store:
        model = OpenAICompatModel("remote-like", base_url=server.base_url, model=MODEL_ID, keep_alive=True)
        ctx = TickContext(
            store=store, profile="p", kind="fast", settings=Settings(), clock=FakeClock(),
            env={}, log=lambda _line: None, owner="test", _model=model,
        )  # fmt: skip
        packet = ContextPacket(goal={"version": 1, "title": "g", "body": "g"}, tick="fast")
        for _ in range(2):
            asked = ask(ctx, "fast", packet, ANSWER, schema=action_schema())
            assert asked.value is not None, asked.error
            assert server.wait_connections_closed(5.0), f"{server.open_connections} connection(s) left open"
        assert len(server.bodies()) == 2
