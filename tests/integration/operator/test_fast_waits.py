"""Waits that hold: after a gate stop, later fast ticks wait for the person instead of proposing again,
with the offline model and with a scripted model over HTTP, with and without a plan step."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tickloop.config import load_settings
from tickloop.models.base import ChatModel
from tickloop.models.offline import OfflineModel
from tickloop.models.openai_compat import OpenAICompatModel
from tickloop.operator import candidates
from tickloop.operator.domain import DecisionKind, IntentStatus, NewPlanStep, Outcome, StepStatus
from tickloop.operator.offline import answer
from tickloop.operator.runner import run_tick
from tickloop.operator.store import open_store
from tickloop.operator.store.base import Store
from tickloop.operator.ticks.fast import WAITING
from tickloop.testing import FakeClock
from tickloop.testing.openai_server import OpenAIServer, Reply

P = "default"
#: what the offline model turns into an email (external: the gate holds it for the person)
EMAIL_STEP = "Email advisor@uni.example: the chapter 3 draft"
EMAIL = {
    "actionType": "email",
    "title": "the chapter 3 draft",
    "recipient": "advisor@uni.example",
    "body": "Here it is.",
    "rationale": "the step asks for it",
}


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(default=Reply.text(json.dumps(EMAIL), chunks=2)) as running:
        yield running


def _model(kind: str, server: OpenAIServer) -> ChatModel:
    if kind == "offline":
        return OfflineModel(json_reply=answer)
    return OpenAICompatModel("scripted", base_url=server.base_url, model="tickloop-test", timeout_s=5)


def _store(clock: FakeClock, *, plan: bool) -> Store:
    store = open_store("memory://")
    store.create_profile(P, now=clock.now())
    goal = store.add_goal_model(P, title="Ship the thesis", body="Chapter 3 by Friday", now=clock.now())
    store.activate_goal_model(P, goal.version, now=clock.now())
    task = store.add_task(P, EMAIL_STEP, priority=9, now=clock.now())
    if plan:
        store.replace_plan(P, goal.version, [NewPlanStep(EMAIL_STEP, task.id)], now=clock.now())
    return store


def _tick(store: Store, clock: FakeClock, model: ChatModel) -> int:
    clock.advance(900)
    settings = load_settings({}, None)
    return run_tick(
        "fast", store=store, profile=P, settings=settings, env={}, clock=clock, log=lambda _: None,
        model=model,
    )  # fmt: skip


@pytest.mark.parametrize("plan", [True, False], ids=["plan-step", "no-plan"])
@pytest.mark.parametrize("kind", ["offline", "scripted"])
def test_ten_fast_ticks_after_a_gate_stop_make_one_intent_one_candidate_and_nine_waits(
    clock: FakeClock, server: OpenAIServer, kind: str, plan: bool
) -> None:
    """One gate stop is one intent and one notice for the person, however many ticks pass: the other
    nine ticks are `noop` rows that say they wait for the person, and ask no model."""
    store, model = _store(clock, plan=plan), _model(kind, server)
    for _ in range(10):
        _tick(store, clock, model)
    rows = list(reversed(store.recent_progress(P, limit=20, tick_kind="fast")))
    assert [r.outcome for r in rows] == [Outcome.GATE_STOP] + [Outcome.NOOP] * 9
    [intent] = store.list_intents(P)
    assert (intent.status, intent.action_type) == (IntentStatus.REQUIRES_APPROVAL, "email")
    assert all(f"{WAITING} on intent {intent.id}" in r.detail for r in rows[1:])
    assert len(candidates.pending(store, P)) == 1
    if kind == "scripted":  # the gate stop's answer and its self-critique; nothing while waiting
        assert len(server.bodies()) == 2


@pytest.mark.parametrize("plan", [True, False], ids=["plan-step", "no-plan"])
def test_the_wait_ends_when_the_person_decides(clock: FakeClock, server: OpenAIServer, plan: bool) -> None:
    """Once the person approves, the step is done and the next fast tick works again."""
    store, model = _store(clock, plan=plan), _model("offline", server)
    _tick(store, clock, model)
    _tick(store, clock, model)
    [intent] = store.list_intents(P)
    store.decide(P, intent.id, DecisionKind.APPROVE, by="ada", now=clock.now())
    store.add_task(P, "Outline chapter 4", priority=1, now=clock.now())
    _tick(store, clock, model)
    row = store.recent_progress(P, limit=1, tick_kind="fast")[0]
    assert WAITING not in row.detail
    if plan:  # the plan's only step is done: no plan left, the tick derives an action afresh
        assert [s.status for s in store.list_plan(P, 1)] == [StepStatus.DONE]
    assert len(store.list_intents(P)) == 2


def test_a_gate_stop_of_another_goal_does_not_hold_this_one(clock: FakeClock, server: OpenAIServer) -> None:
    """Only the active goal's own gate stops hold its ticks: a new goal starts unblocked."""
    store, model = _store(clock, plan=False), _model("offline", server)
    _tick(store, clock, model)
    goal = store.add_goal_model(P, title="Run a marathon", body="train", now=clock.now())
    store.activate_goal_model(P, goal.version, now=clock.now())
    store.add_task(P, "Plan the week", priority=99, now=clock.now())
    _tick(store, clock, model)
    row = store.recent_progress(P, limit=1, tick_kind="fast")[0]
    assert row.outcome is Outcome.STAGED


def test_nothing_to_do_is_a_noop_row_and_stages_nothing(clock: FakeClock) -> None:
    """A model that answers `none` leaves a noop row with its reason and no intent."""
    store = _store(clock, plan=True)
    nothing = {"actionType": "none", "rationale": "all done"}
    model = OfflineModel(json_reply=lambda _m, _s: json.dumps(nothing))
    assert _tick(store, clock, model) == 0
    row = store.recent_progress(P, limit=1, tick_kind="fast")[0]
    assert row.outcome is Outcome.NOOP
    assert "nothing to do now: all done" in row.detail
    assert store.list_intents(P) == []
    assert [s.status for s in store.list_plan(P, 1)] == [StepStatus.PENDING]
