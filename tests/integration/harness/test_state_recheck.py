"""The timer re-checks that the state is still identical before it enqueues (seed 000, run state machine).

A person's message is cancelled by an earlier hook, so these tests change the state the other ways the
spec allows: input queued by an embedder (``Agent.enqueue``) or by another plugin while a step waits.
"""

from __future__ import annotations

import pytest

from tickloop.protocol.envelope import USER_SOURCE, Message, Source, is_time_step
from tickloop.testing.harness import ManualTimers

from .conftest import ChatFactory

OTHER_PLUGIN = Source("plugin", "another-plugin")


@pytest.mark.parametrize("source", [USER_SOURCE, OTHER_PLUGIN], ids=["embedder", "another-plugin"])
@pytest.mark.parametrize("let_it_run", [False, True], ids=["still-queued", "turn-done"])
async def test_input_queued_another_way_cancels_the_scheduled_step_as_a_state_change(
    make_chat: ChatFactory, source: Source, let_it_run: bool
) -> None:
    """Input queued during the delay (not typed) cancels the step with cancel.state_changed, and no
    time step is sent."""
    timers = ManualTimers()
    chat = await make_chat(timers=timers)
    await chat.say("hello")
    chat.agent.submit("/tick 3")
    assert chat.types() == ["loop_armed", "tick_scheduled"]
    chat.agent.enqueue(Message(role="user", content=("queued by the embedder",), source=source))
    if let_it_run:
        await chat.turns_done()  # the queued input became its own turn: the session revision moved
    timers.fire_next()
    assert [(r["type"], r.get("rule")) for r in chat.records()[2:]] == [
        ("tick_cancelled_before_enqueue", "cancel.state_changed"),
        ("loop_stopped", "cancel.state_changed"),
    ]
    await chat.turns_done()
    assert [c[-1].content for c in chat.model.calls] == ["hello", "queued by the embedder"]
    assert not any(is_time_step(t.input) for t in chat.agent.session.turns)
    assert chat.plugin.run is None
