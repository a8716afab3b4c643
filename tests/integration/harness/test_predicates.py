"""One end-to-end test per scheduling predicate of the Tick Protocol (seed 000), ledger asserted."""

from __future__ import annotations

import pytest

from tickloop.models import OfflineModel
from tickloop.protocol.envelope import is_time_step
from tickloop.testing.harness import ManualTimers

from .conftest import Chat, ChatFactory


def rejections(chat: Chat) -> list[str]:
    return [r["rule"] for r in chat.records() if r["type"] == "command_rejected"]


async def interrupted_first_turn(make_chat: ChatFactory) -> Chat:
    """A chat whose only natural turn was interrupted mid-stream (the model stays slow)."""
    chat = await make_chat(model=OfflineModel(reply="w " * 50, token_delay=0.01))
    chat.agent.submit("hello")
    await chat.streaming()
    assert chat.agent.interrupt()
    await chat.idle()
    assert chat.agent.session.turns[-1].terminal is not None
    assert chat.agent.session.turns[-1].terminal.status == "interrupted"
    return chat


# -- admission: a new run is admitted only when ... -------------------------------------------


async def test_admit_1_needs_a_natural_user_message(make_chat: ChatFactory) -> None:
    """With no natural user message in the session, /tick is refused with admit.natural_context."""
    chat = await make_chat()
    await chat.say("/tick")
    assert rejections(chat) == ["admit.natural_context"]


async def test_admit_2_needs_a_closed_turn(make_chat: ChatFactory) -> None:
    """While the first turn is still open nothing has settled: /tick is refused and arms nothing."""
    chat = await make_chat(model=OfflineModel(reply="a b c", token_delay=0.02))
    chat.agent.submit("hello")
    await chat.streaming()
    chat.agent.submit("/tick 2")
    # The first turn has no terminal yet, so there is neither natural context nor a closed turn;
    # the predicate reports the first failing condition.
    assert rejections(chat) == ["admit.natural_context"]
    await chat.idle()
    assert [r["type"] for r in chat.records()] == ["command_rejected"]


async def test_admit_3_needs_a_completed_latest_terminal(make_chat: ChatFactory) -> None:
    """After an interrupted turn, plain /tick is refused naming admit.terminal_not_completed."""
    chat = await interrupted_first_turn(make_chat)
    await chat.say("/tick 2")
    assert rejections(chat) == ["admit.terminal_not_completed"]
    assert "admit.terminal_not_completed" in chat.notices()[-1]


async def test_admit_3_an_error_terminal_is_not_a_resume_boundary(make_chat: ChatFactory) -> None:
    """--resume crosses only an interrupted terminal: after an error terminal it is refused too."""
    chat = await make_chat(model=OfflineModel(fail_on_call=frozenset({1})))
    await chat.say("hello")
    await chat.say("/tick 2 --resume")
    assert rejections(chat) == ["admit.terminal_not_completed"]


async def test_admit_4_a_second_tick_while_a_run_is_active_is_rejected(make_chat: ChatFactory) -> None:
    """A second /tick while a run is active is refused with admit.run_active; the first run goes on."""
    chat = await make_chat(delay_ms=60_000)
    await chat.say("hello")
    chat.agent.submit("/tick 2")
    chat.agent.submit("/tick 5")
    assert rejections(chat) == ["admit.run_active"]
    assert chat.plugin.run is not None
    assert chat.plugin.run.requested == 2


async def test_admit_5_the_policy_must_exist(make_chat: ChatFactory) -> None:
    """An unknown policy is refused before any model-facing message is created."""
    chat = await make_chat(policies={"reflect": "a time step; continue if you wish"})
    await chat.say("hello")
    await chat.say("/tick 2 --policy nosuch")
    assert rejections(chat) == ["command.unknown_policy"]
    await chat.say("/tick 1 --policy reflect")
    armed = next(r for r in chat.records() if r["type"] == "loop_armed")
    assert armed["policyId"] == "reflect"
    assert armed["timeStepBytes"] == len(b"a time step; continue if you wish")
    assert chat.user_texts(2)[-1] == "a time step; continue if you wish"


# -- scheduling: the next message is scheduled only when ... -----------------------------------


async def test_next_1_a_human_typing_tick_is_not_counted(make_chat: ChatFactory) -> None:
    """A person's literal "tick" is not a plugin time step: /tick 2 still runs two steps of its own."""
    chat = await make_chat()
    await chat.say("hello")
    await chat.say("tick")
    await chat.say("/tick 2")
    assert [r["step"] for r in chat.records() if r["type"] == "tick_enqueued"] == [1, 2]
    assert chat.records()[-1]["type"] == "loop_complete"
    turns = chat.agent.session.turns
    assert [is_time_step(t.input) for t in turns] == [False, False, True, True]
    assert chat.agent.session.view().time_steps == 2
    assert chat.user_texts(4) == ["hello", "tick", "tick", "tick"]


async def test_next_2_a_missing_terminal_makes_the_run_wait(make_chat: ChatFactory) -> None:
    """While the latest turn has no durable terminal, nothing is scheduled; its terminal resumes the run."""
    chat = await make_chat(model=OfflineModel(reply="x y z", token_delay=0.02))
    await chat.say("hello")
    chat.agent.submit("more")
    await chat.streaming()
    chat.agent.submit("/tick 2")
    assert [r["type"] for r in chat.records()] == ["loop_armed"]
    await chat.idle()
    assert [r["step"] for r in chat.records() if r["type"] == "tick_scheduled"] == [1, 2]


async def test_next_3_resume_crosses_exactly_one_interrupted_boundary(make_chat: ChatFactory) -> None:
    """/tick 2 --resume after an interrupted turn runs two steps, marking the boundary on loop_armed."""
    chat = await interrupted_first_turn(make_chat)
    chat.model.token_delay = 0
    await chat.say("/tick 2 --resume")
    records = chat.records()
    assert records[0]["type"] == "loop_armed"
    assert records[0]["resume"] is True
    assert records[0]["resumeBoundary"] is True
    assert records[1]["rule"] == "next.resume_boundary"
    assert [r["step"] for r in records if r["type"] == "tick_enqueued"] == [1, 2]
    assert records[-1]["type"] == "loop_complete"


async def test_next_3_a_second_interrupted_boundary_stops_the_run(make_chat: ChatFactory) -> None:
    """Interrupting a step of a resumed run is a second boundary: the run stops, it is not crossed."""
    chat = await interrupted_first_turn(make_chat)
    chat.agent.submit("/tick 2 --resume")
    await chat.streaming()
    assert chat.agent.interrupt()
    await chat.idle()
    records = chat.records()
    assert [(r["step"], r["status"]) for r in records if r["type"] == "tick_terminal"] == [(1, "interrupted")]
    assert (records[-1]["type"], records[-1]["rule"]) == ("loop_stopped", "next.terminal_not_completed")


async def test_next_3_resume_without_an_interrupted_boundary_is_an_ordinary_run(
    make_chat: ChatFactory,
) -> None:
    """--resume after a completed turn arms a normal run with no boundary to cross."""
    chat = await make_chat()
    await chat.say("hello")
    await chat.say("/tick 1 --resume")
    armed = chat.records()[0]
    assert armed["resume"] is True
    assert "resumeBoundary" not in armed


@pytest.mark.parametrize("count", [1, 4])
async def test_next_4_stops_scheduling_once_the_requested_steps_were_observed(
    make_chat: ChatFactory, count: int
) -> None:
    """Exactly the requested number of steps is enqueued, then the run completes."""
    chat = await make_chat()
    await chat.say("hello")
    await chat.say(f"/tick {count}")
    records = chat.records()
    assert sum(r["type"] == "tick_enqueued" for r in records) == count
    assert records[-1]["type"] == "loop_complete"
    assert records[-1]["steps"] == count


async def test_the_timer_rechecks_and_a_stale_timer_never_enqueues_into_a_newer_run(
    make_chat: ChatFactory,
) -> None:
    """A timer from a stopped run that fires anyway is ignored by the run armed after it."""
    timers = ManualTimers()
    chat = await make_chat(timers=timers)
    await chat.say("hello")
    chat.agent.submit("/tick 2")
    stale = timers.pending[0]
    chat.agent.submit("/tick stop")
    chat.agent.submit("/tick 2")
    before = chat.records()
    stale.fire_anyway()
    assert chat.records() == before
    assert chat.agent.queued == 0
    timers.fire_next()
    await chat.turns_done()
    enqueued = [r for r in chat.records() if r["type"] == "tick_enqueued"]
    assert len(enqueued) == 1
    assert enqueued[0]["runId"] == chat.records()[-1]["runId"] != before[0]["runId"]
