"""End to end: an email staged by an agent through MCP waits for the person; approved with the CLI,
a live executor sends it to a real SMTP server. A profile rule allowing email does not let it through."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session
from mcp_support import Operator, data


class Sink:
    """Every message the SMTP server accepted."""

    def __init__(self) -> None:
        self.envelopes: list[Envelope] = []

    async def handle_DATA(self, _server: SMTP, _session: Session, envelope: Envelope) -> str:  # noqa: N802
        self.envelopes.append(envelope)
        return "250 OK"


class _Bound(Controller):
    """aiosmtpd on a socket bound to a free port before the server starts."""

    def __init__(self, handler: Sink) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.bound_port = self._sock.getsockname()[1]
        super().__init__(handler, hostname="127.0.0.1", port=self.bound_port, loop=asyncio.new_event_loop())

    def _create_server(self) -> Any:
        return self.loop.create_server(self._factory_invoker, sock=self._sock, ssl=self.ssl_context)


@pytest.fixture
def smtp_sink() -> Iterator[tuple[Sink, int]]:
    """A real SMTP server on 127.0.0.1."""
    sink = Sink()
    controller = _Bound(sink)
    controller.start()
    try:
        yield sink, controller.bound_port
    finally:
        controller.stop()
        controller.loop.close()


async def test_an_mcp_email_waits_for_approval_then_a_live_executor_sends_it(
    sqlite_op: Operator, smtp_sink: tuple[Sink, int]
) -> None:
    """MCP email: held even with [gate] allow = ["email"]; approved via the CLI, the executor sends it."""
    sink, port = smtp_sink
    op = sqlite_op
    op.config(
        f'[smtp]\nhost = "127.0.0.1"\nport = {port}\nsecurity = "plain"\nsenders = ["operator@example.com"]\n'
        'passwordEnv = ""\n[gate]\nallow = ["email"]\n'
    )
    payload = {"subject": "Minutes", "body": "The minutes are attached in spirit."}
    async with op.client() as client:
        staged = data(
            await client.call_tool(
                "stage_intent", {"type": "email", "title": "Send minutes", "recipient": "ann@example.org",
                                 "payload": payload},
            )
        )  # fmt: skip
        intent_id = staged["intent"]["id"]
        assert staged["intent"]["status"] == "requires_approval"
        assert any(r.startswith("gate.tainted_external") for r in staged["reasons"])
        why = data(await client.call_tool("explain_intent", {"intent_id": intent_id}))
        assert why["ladder"]["cell"].startswith("fires only if the person approves")
        assert why["decisions"] == []
    # the operator's own (cli) intent of the same type IS allowed by the profile rule: the rule works
    own = op.json(
        "operator", "intents", "add", "--profile", "me", "--type", "email", "--title", "own",
        "--recipient", "ann@example.org", "--payload", '{"body": "my own"}',
    )  # fmt: skip
    assert own["verdict"] == "allowed"
    op.env["TICKLOOP_DRY_RUN"] = "0"  # a live executor from here on
    op.cli("operator", "tick", "executor", "--profile", "me", ok=False)
    assert sink.envelopes == []  # armed, but nothing approved: nothing sent (the tier floor refuses `own`)
    op.cli("operator", "approve", str(intent_id), "--profile", "me", "--by", "ann")
    op.cli("operator", "tick", "executor", "--profile", "me", ok=False)
    [envelope] = sink.envelopes
    assert envelope.rcpt_tos == ["ann@example.org"]
    assert b"Minutes" in (envelope.original_content or b"")
    [sent] = [i for i in op.json("operator", "intents", "--profile", "me") if i["id"] == intent_id]
    assert sent["status"] == "sent"
    async with op.client() as client:
        why = data(await client.call_tool("explain_intent", {"intent_id": intent_id}))
        assert [d["kind"] for d in why["decisions"]] == ["approve"]
        assert why["ladder"]["next"].startswith("final: sent")
