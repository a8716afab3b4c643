"""What the tick plugin tells the person: one word per final state, and one line when their message
cancels a pending step (the interactive chat showed nothing)."""

from __future__ import annotations

from tickloop.models import OfflineModel

from .conftest import ChatFactory


async def test_stop_with_a_step_pending_says_cancelled_as_status_does(make_chat: ChatFactory) -> None:
    """/tick stop before the next step is sent answers "cancelled (stop.user)", the word /tick status uses."""
    chat = await make_chat(delay_ms=60_000)
    await chat.say("hello")
    chat.agent.submit("/tick 3")
    result = chat.agent.submit("/tick stop")
    assert result is not None
    run_id = chat.records()[0]["runId"]
    assert result.text == f"run {run_id} cancelled (stop.user)"
    status = chat.agent.submit("/tick status")
    assert status is not None
    assert f"last run {run_id} cancelled (stop.user)" in status.text


async def test_stop_during_a_step_turn_says_stopped_as_status_does(make_chat: ChatFactory) -> None:
    """/tick stop while a step's turn runs (nothing pending) answers "stopped (stop.user)", as status does."""
    chat = await make_chat(model=OfflineModel(reply="a b c d", token_delay=0.02))
    await chat.say("hello")
    chat.agent.submit("/tick 3")
    while len(chat.agent.session.turns) < 2:
        await chat.streaming()
    result = chat.agent.submit("/tick stop")
    await chat.idle()
    assert result is not None
    run_id = chat.records()[0]["runId"]
    assert result.text == f"run {run_id} stopped (stop.user)"
    status = chat.agent.submit("/tick status")
    assert status is not None
    assert f"last run {run_id} stopped (stop.user)" in status.text


async def test_a_message_while_a_step_is_pending_cancels_it_with_one_line(make_chat: ChatFactory) -> None:
    """A person's message before the pending step is sent cancels the run and says so in one notice."""
    chat = await make_chat(delay_ms=60_000)
    await chat.say("hello")
    chat.agent.submit("/tick 3")
    run_id = chat.records()[0]["runId"]
    await chat.say("wait, one more thing")
    cancels = [n for n in chat.notices() if "cancel.person_message" in n]
    assert cancels == [
        f"run {run_id} cancelled (cancel.person_message): your message goes first; /tick N starts a new run"
    ]
    assert chat.records()[-1]["rule"] == "cancel.person_message"


async def test_a_message_typed_during_a_step_turn_cancels_the_next_step_with_one_line(
    make_chat: ChatFactory,
) -> None:
    """A message typed while a step's turn streams cancels the step that would follow, with one notice."""
    chat = await make_chat(model=OfflineModel(reply="a b c d", token_delay=0.02))
    await chat.say("hello")
    chat.agent.submit("/tick 3")
    while len(chat.agent.session.turns) < 2:
        await chat.streaming()
    chat.agent.submit("me first")
    await chat.idle()
    assert sum("cancelled (cancel.person_message)" in n for n in chat.notices()) == 1
    assert sum(r["type"] == "tick_enqueued" for r in chat.records()) == 1
