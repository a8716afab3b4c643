"""A chat on real files (session JSONL + audit ledger) driven in-process, and its ledger checks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tickloop.audit import read_ledger, session_file_name, verify_file
from tickloop.clock import Clock
from tickloop.harness import Agent, AgentEvent, TextStreamed, TickOptions, TickPlugin, open_chat_agent
from tickloop.harness.timers import Timers
from tickloop.models import OfflineModel

WAIT = 5.0  # seconds before a test that would hang fails instead


@dataclass
class Chat:
    """One agent with its model, files and the events it emitted."""

    agent: Agent
    model: OfflineModel
    ledger_path: Path
    events: list[AgentEvent] = field(default_factory=list)
    streamed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def plugin(self) -> TickPlugin:
        plugin = self.agent.plugins[0]
        assert isinstance(plugin, TickPlugin)
        return plugin

    def on_event(self, event: AgentEvent) -> None:
        self.events.append(event)
        if isinstance(event, TextStreamed):
            self.streamed.set()

    async def say(self, line: str) -> None:
        """Submit a line the way the scripted chat does, and wait until the agent is idle."""
        self.agent.submit(line)
        await self.idle()

    async def idle(self) -> None:
        async with asyncio.timeout(WAIT):
            await self.agent.wait_idle()

    async def turns_done(self) -> None:
        """Wait until no turn is active and nothing is queued (a scheduled step may still be pending)."""
        async with asyncio.timeout(WAIT):
            await self.agent.wait_for(lambda: not self.agent.turn_active and not self.agent.queued)

    async def streaming(self) -> None:
        """Wait until the active turn has streamed some text."""
        self.streamed.clear()
        async with asyncio.timeout(WAIT):
            await self.streamed.wait()

    def notices(self) -> list[str]:
        return [e.text for e in self.events if type(e).__name__ == "Notice"]  # type: ignore[union-attr]

    def records(self) -> list[dict[str, Any]]:
        """The ledger's records, after checking that `tickloop audit verify` would accept it."""
        if not self.ledger_path.exists():
            return []
        report, _ = verify_file(self.ledger_path)
        assert report.ok, report.violations
        return read_ledger(self.ledger_path).records()

    def types(self) -> list[str]:
        return [str(r["type"]) for r in self.records()]

    def user_texts(self, call: int) -> list[str]:
        """The user-role texts the model received on 1-based call ``call``."""
        return [m.content for m in self.model.calls[call - 1] if m.role == "user"]


ChatFactory = Callable[..., Awaitable[Chat]]


@pytest.fixture
async def make_chat(tmp_path: Path) -> AsyncIterator[ChatFactory]:
    """Build started chats on files under tmp_path; close them and verify their ledgers afterwards."""
    chats: list[Chat] = []

    async def factory(
        *,
        model: OfflineModel | None = None,
        delay_ms: int = 0,
        timers: Timers | None = None,
        tick: bool = True,
        policies: dict[str, str] | None = None,
        session_id: str = "s1",
        clock: Clock | None = None,
    ) -> Chat:
        config = {"delayMs": delay_ms, "auditDir": str(tmp_path / "audit"), "policies": policies or {}}
        options = TickOptions.from_mapping(config) if tick else None
        model = model or OfflineModel()
        agent = open_chat_agent(
            model,
            sessions_dir=tmp_path / "sessions",
            session_id=session_id,
            tick=options,
            timers=timers,
            clock=clock,
        )
        chat = Chat(agent, model, tmp_path / "audit" / session_file_name(session_id))
        agent.subscribe(chat.on_event)
        await agent.start()
        chats.append(chat)
        return chat

    yield factory
    for chat in chats:
        await chat.agent.close()
        chat.records()  # every end-to-end ledger passes verification, including the dispose records
