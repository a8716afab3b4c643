"""One end-to-end test per bullet of the plugin README's behavioural contract (seed 001).

Each drives a real Agent on real files and asserts the audit ledger, which must verify.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from tickloop.harness import TurnStarted
from tickloop.models import OfflineModel
from tickloop.protocol.envelope import is_time_step
from tickloop.testing import FakeClock
from tickloop.testing.harness import ManualTimers

from .conftest import ChatFactory


async def test_ordinary_conversation_never_self_starts(make_chat: ChatFactory) -> None:
    """Chatting without /tick never produces a time step or a ledger record."""
    chat = await make_chat()
    for line in ("hello", "how are you", "tick"):
        await chat.say(line)
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(chat.model.calls) == 3
    assert chat.types() == []
    assert not any(is_time_step(t.input) for t in chat.agent.session.turns)


async def test_tick_without_a_settled_natural_turn_is_rejected(make_chat: ChatFactory) -> None:
    """/tick before the person has said anything is refused with its rule, and nothing reaches the model."""
    chat = await make_chat()
    await chat.say("/tick 3")
    assert [(r["type"], r["rule"]) for r in chat.records()] == [("command_rejected", "admit.natural_context")]
    assert "admit.natural_context" in chat.notices()[-1]
    assert chat.model.calls == []


async def test_tick_count_arms_a_bounded_run_without_entering_model_context(make_chat: ChatFactory) -> None:
    """/tick 2 arms a run of exactly 2 steps; the command line itself never reaches the model."""
    chat = await make_chat()
    await chat.say("hello")
    await chat.say("/tick 2")
    armed = chat.records()[0]
    assert armed["type"] == "loop_armed"
    assert armed["requested"] == 2
    assert armed["resume"] is False
    assert "resumeBoundary" not in armed
    assert armed["policyId"] == "default"
    assert len(armed["timeStepSha256"]) == 64
    for call in chat.model.calls:
        assert not any(m.content.lstrip().startswith("/") for m in call)


async def test_tick_stop_during_the_delay_cancels_the_pending_enqueue(make_chat: ChatFactory) -> None:
    """/tick stop while a step waits for its delay cancels it: no time step reaches the model."""
    chat = await make_chat(delay_ms=60_000)
    await chat.say("hello")
    chat.agent.submit("/tick 3")
    assert chat.types() == ["loop_armed", "tick_scheduled"]
    await chat.say("/tick stop")
    records = chat.records()
    assert [(r["type"], r.get("rule")) for r in records[2:]] == [
        ("tick_cancelled_before_enqueue", "stop.user"),
        ("loop_stopped", "stop.user"),
    ]
    assert records[2]["step"] == 1
    assert len(chat.model.calls) == 1
    assert chat.plugin.run is None


async def test_missing_terminal_makes_the_run_wait(make_chat: ChatFactory) -> None:
    """/tick typed while a turn is still streaming waits for that turn's terminal before scheduling."""
    chat = await make_chat(model=OfflineModel(reply="one two three four", token_delay=0.02))
    await chat.say("hello")
    chat.agent.submit("a second question")
    await chat.streaming()
    chat.agent.submit("/tick 1")
    assert chat.types() == ["loop_armed"]
    assert chat.plugin.run is not None
    assert chat.plugin.run.state == "waiting"
    await chat.idle()
    assert chat.types() == ["loop_armed", "tick_scheduled", "tick_enqueued", "tick_terminal", "loop_complete"]
    assert len(chat.model.calls) == 3


async def test_a_non_completed_terminal_stops_the_run(make_chat: ChatFactory) -> None:
    """A provider error on step 2 of 3 ends that turn with `error` and stops the run there."""
    chat = await make_chat(model=OfflineModel(fail_on_call=frozenset({3})))
    await chat.say("hello")
    await chat.say("/tick 3")
    records = chat.records()
    terminals = [(r["step"], r["status"]) for r in records if r["type"] == "tick_terminal"]
    assert terminals == [(1, "completed"), (2, "error")]
    assert records[-1]["type"] == "loop_stopped"
    assert records[-1]["rule"] == "next.terminal_not_completed"
    assert chat.agent.session.turns[-1].terminal is not None
    assert chat.agent.session.turns[-1].terminal.status == "error"
    assert len(chat.model.calls) == 3


async def test_fewer_than_requested_enqueues_exactly_one_next_tick(make_chat: ChatFactory) -> None:
    """Each step is enqueued alone, only after the previous step's completed terminal."""
    chat = await make_chat()
    await chat.say("hello")
    await chat.say("/tick 3")
    kinds = [r["type"] for r in chat.records()]
    assert kinds == ["loop_armed"] + ["tick_scheduled", "tick_enqueued", "tick_terminal"] * 3 + [
        "loop_complete"
    ]
    steps = [r["step"] for r in chat.records() if r["type"] == "tick_enqueued"]
    assert steps == [1, 2, 3]


async def test_the_run_completes_at_exactly_n_without_an_extra_prompt(make_chat: ChatFactory) -> None:
    """After the n-th step the run completes; no further message is manufactured, however long we wait."""
    chat = await make_chat()
    await chat.say("hello")
    await chat.say("/tick 3")
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(chat.model.calls) == 4
    complete = chat.records()[-1]
    assert complete["type"] == "loop_complete"
    assert complete["rule"] == "next.target_reached"
    assert sum(is_time_step(t.input) for t in chat.agent.session.turns) == 3
    assert chat.agent.queued == 0


async def test_dispose_during_the_delay_cancels_the_pending_enqueue(make_chat: ChatFactory) -> None:
    """Closing the agent while a step waits for its delay cancels it and closes the run."""
    chat = await make_chat(delay_ms=60_000)
    await chat.say("hello")
    chat.agent.submit("/tick 2")
    await chat.agent.close()
    records = chat.records()
    assert [(r["type"], r.get("rule")) for r in records] == [
        ("loop_armed", "admit.ok"),
        ("tick_scheduled", "next.ok"),
        ("tick_cancelled_before_enqueue", "stop.disposed"),
        ("loop_stopped", "stop.disposed"),
    ]
    assert len(chat.model.calls) == 1


async def test_a_state_change_before_the_timer_fires_cancels_the_pending_enqueue(
    make_chat: ChatFactory,
) -> None:
    """A person's message during the delay cancels the step at once; the timer is disposed and never fires."""
    timers = ManualTimers()
    chat = await make_chat(timers=timers)
    await chat.say("hello")
    chat.agent.submit("/tick 2")
    chat.agent.submit("something else first")
    assert [(r["type"], r.get("rule")) for r in chat.records()[2:]] == [
        ("tick_cancelled_before_enqueue", "cancel.person_message"),
        ("loop_stopped", "cancel.person_message"),
    ]
    assert timers.pending == []
    await chat.turns_done()
    assert [c[-1].content for c in chat.model.calls] == ["hello", "something else first"]


async def test_a_person_message_cancels_a_long_pending_step_before_it_is_due(make_chat: ChatFactory) -> None:
    """With delayMs 30000 a typed message records the cancel at once, long before the step is due."""
    chat = await make_chat(delay_ms=30_000)
    await chat.say("hello")
    chat.agent.submit("/tick 3")
    status = chat.agent.submit("/tick status")
    assert status is not None
    assert "state scheduled" in status.text
    chat.agent.submit("wait, one more thing")
    records = chat.records()
    assert [(r["type"], r.get("rule")) for r in records] == [
        ("loop_armed", "admit.ok"),
        ("tick_scheduled", "next.ok"),
        ("tick_cancelled_before_enqueue", "cancel.person_message"),
        ("loop_stopped", "cancel.person_message"),
    ]
    due = datetime.fromisoformat(records[1]["dueAt"])
    cancelled = datetime.fromisoformat(records[2]["recordedAt"])
    assert cancelled < due - timedelta(seconds=25)
    assert records[2]["step"] == 1
    status = chat.agent.submit("/tick status")
    assert status is not None
    assert status.text.startswith("no active run")
    assert "cancelled (cancel.person_message)" in status.text
    await chat.idle()
    assert [c[-1].content for c in chat.model.calls] == ["hello", "wait, one more thing"]
    assert not any(is_time_step(t.input) for t in chat.agent.session.turns)


async def test_an_active_turn_is_never_steered(make_chat: ChatFactory) -> None:
    """A message typed during a tick turn waits for that turn to end and is its own next turn."""
    chat = await make_chat(model=OfflineModel(reply="a b c d", token_delay=0.02))
    await chat.say("hello")
    chat.agent.submit("/tick 2")
    started = [e for e in chat.events if isinstance(e, TurnStarted)]
    while len(started) < 2 or chat.agent.session.turns[-1].reply is not None:
        await chat.streaming()
        started = [e for e in chat.events if isinstance(e, TurnStarted)]
    chat.agent.submit("interjection")
    await chat.idle()
    tick_call, next_call = chat.model.calls[1], chat.model.calls[2]
    assert [m.content for m in tick_call if m.role == "user"] == ["hello", "tick"]
    assert next_call[-1].content == "interjection"
    turns = chat.agent.session.turns
    assert [t.terminal.status for t in turns if t.terminal] == ["completed"] * 3
    kinds = [(r["type"], r.get("rule")) for r in chat.records()]
    assert kinds[-2:] == [
        ("tick_cancelled_before_enqueue", "cancel.person_message"),
        ("loop_stopped", "cancel.person_message"),
    ]


async def test_a_message_typed_during_a_step_turn_cancels_the_next_step_when_scheduled(
    make_chat: ChatFactory,
) -> None:
    """With delayMs 30000, a message typed while a step's turn streams cancels the next step at once."""
    timers, clock = ManualTimers(), FakeClock()
    chat = await make_chat(
        model=OfflineModel(reply="a b c d", token_delay=0.02), delay_ms=30_000, timers=timers, clock=clock
    )
    await chat.say("hello")
    chat.agent.submit("/tick 3")
    clock.advance(30)  # the first step's delay passes on the fake clock; its timer fires
    timers.fire_next()
    while len(chat.agent.session.turns) < 2:
        await chat.streaming()
    chat.agent.submit("interjection")
    await chat.turns_done()
    records = chat.records()
    assert [(r["type"], r.get("rule") or r.get("status")) for r in records[-4:]] == [
        ("tick_terminal", "completed"),
        ("tick_scheduled", "next.ok"),
        ("tick_cancelled_before_enqueue", "cancel.person_message"),
        ("loop_stopped", "cancel.person_message"),
    ]
    due = datetime.fromisoformat(records[-3]["dueAt"])
    assert datetime.fromisoformat(records[-2]["recordedAt"]) < due - timedelta(seconds=25)
    assert timers.pending == []  # no timer was left for the cancelled step
    status = chat.agent.submit("/tick status")
    assert status is not None
    assert status.text.startswith("no active run")
    assert [c[-1].content for c in chat.model.calls] == ["hello", "tick", "interjection"]


async def test_a_ledger_that_cannot_be_written_abandons_the_run_instead_of_hanging(
    make_chat: ChatFactory,
) -> None:
    """If the audit ledger fails mid-run, the person is told and the chat goes idle rather than hanging."""
    chat = await make_chat()
    await chat.say("hello")

    class Full:
        def append(self, rec: dict[str, object]) -> dict[str, object]:  # noqa: ARG002
            raise OSError("disk full")

    real = chat.plugin.ledger
    chat.plugin.ledger = Full()
    await chat.say("/tick 2")
    assert chat.plugin.run is None
    assert any("tick run abandoned" in text and "disk full" in text for text in chat.notices())
    chat.plugin.ledger = real
    assert chat.types() == []


async def test_a_run_that_starts_while_a_turn_is_open_records_that_it_waits(make_chat: ChatFactory) -> None:
    """loop_armed names the first scheduling decision, so a waiting start is visible in the ledger."""
    chat = await make_chat(model=OfflineModel(reply="a b c", token_delay=0.02))
    await chat.say("hello")
    chat.agent.submit("more")
    await chat.streaming()
    chat.agent.submit("/tick 1")
    assert chat.records()[0]["next"] == "next.terminal_missing"
    await chat.idle()
    await chat.say("/tick 1")
    assert chat.records()[-5]["next"] == "next.ok"
