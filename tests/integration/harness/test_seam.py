"""What reaches the model: only natural messages and literal time steps, never a command line."""

from __future__ import annotations

import asyncio

from tickloop.harness import Agent, memory_session
from tickloop.models import OfflineModel
from tickloop.protocol.policy import DEFAULT_POLICY_TEXT

from .conftest import ChatFactory


async def test_a_tick_3_session_sends_the_natural_message_and_exactly_three_time_steps(
    make_chat: ChatFactory,
) -> None:
    """Over a whole scripted /tick 3 session the model sees "hello" and three literal time steps only."""
    chat = await make_chat()
    for line in ("hello", "/tick 3", "/tick status", "/tick policies", "/help", "/nope"):
        await chat.say(line)
    last_call = chat.model.calls[-1]
    user_texts = [m.content for m in last_call if m.role == "user"]
    assert user_texts == ["hello", DEFAULT_POLICY_TEXT, DEFAULT_POLICY_TEXT, DEFAULT_POLICY_TEXT]
    every_text = [m.content for call in chat.model.calls for m in call]
    assert not any(text.lstrip().startswith("/") for text in every_text)
    assert len(chat.model.calls) == 4
    assert sum(r["type"] == "tick_enqueued" for r in chat.records()) == 3


async def test_without_the_tick_plugin_nothing_reaches_the_model_without_a_person() -> None:
    """No goal driver, auto-continue or compaction: without the plugin the model is called once per line."""
    model = OfflineModel()
    agent = Agent(model, memory_session("quiet"))
    await agent.start()
    for line in ("hello", "/tick 3", "are you there?"):
        agent.submit(line)
        async with asyncio.timeout(5):
            await agent.wait_idle()
    for _ in range(50):
        await asyncio.sleep(0)
    assert [call[-1].content for call in model.calls] == ["hello", "are you there?"]
    assert not agent.commands.names().count("tick")
    await agent.close()
    assert len(model.calls) == 2
