"""Every path of the fast, slow and consolidate ticks, on the memory store with scripted models."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tickloop.config import Settings, load_settings
from tickloop.errors import ValidationError
from tickloop.models.base import ChatMessage
from tickloop.models.offline import OfflineModel
from tickloop.models.structured import decode_structured
from tickloop.operator import candidates
from tickloop.operator.context import read_packet
from tickloop.operator.domain import (
    DecisionKind,
    GoalStatus,
    IntentStatus,
    NewIntent,
    NewPlanStep,
    Outcome,
    StepStatus,
    TaskStatus,
    Verdict,
)
from tickloop.operator.handlers.checks import check_draft
from tickloop.operator.offline import answer
from tickloop.operator.runner import TickContext, TickResult, run_tick
from tickloop.operator.schemas import NOTHING_TO_DO, ActionAnswer, check_intent, to_intent
from tickloop.operator.store import Store, open_store
from tickloop.operator.ticks import consolidate, fast
from tickloop.testing import FakeClock

P = "default"
ANSWER: Any = ActionAnswer
Reply = Callable[[Sequence[ChatMessage], Mapping[str, Any]], str]


def offline(reply: Reply = answer) -> OfflineModel:
    return OfflineModel(json_reply=reply)


def scripted(fast_reply: dict[str, Any] | str, critique: Reply = answer) -> OfflineModel:
    """Answers the fast prompt with ``fast_reply``, everything else as the offline model does."""

    def reply(messages: Sequence[ChatMessage], schema: Mapping[str, Any]) -> str:
        if schema.get("title") == "ActionIntentOut":
            return fast_reply if isinstance(fast_reply, str) else json.dumps(fast_reply)
        return critique(messages, schema)

    return offline(reply)


def make_store(clock: FakeClock, *, goal: bool = True) -> Store:
    store = open_store("memory://")
    store.create_profile(P, now=clock.now())
    if goal:
        made = store.add_goal_model(P, title="Ship the thesis", body="Chapter 3 by Friday", now=clock.now())
        store.activate_goal_model(P, made.version, now=clock.now())
    return store


def tick(
    store: Store,
    clock: FakeClock,
    kind: str,
    model: OfflineModel,
    config: Mapping[str, Any] | None = None,
    **options: object,
) -> int:
    settings = msgspec.convert(dict(config or {}), Settings) if config else load_settings({}, None)
    code = run_tick(
        kind, store=store, profile=P, settings=settings, env={}, clock=clock, log=lambda _: None,
        options=options, model=model,
    )  # fmt: skip
    clock.advance(60)
    return code


def last_row(store: Store) -> Any:
    return store.recent_progress(P, limit=1)[0]


def goal_version(store: Store) -> int:
    goal = store.active_goal_model(P)
    assert goal is not None
    return goal.version


# -- fast: re-ground, advance, one intent ----------------------------------------------------------


def test_fast_refuses_without_an_active_goal_and_never_asks_the_model(clock: FakeClock) -> None:
    """No active goal model: a `refused` row saying it will not act on trajectory alone, no model call."""
    store, model = make_store(clock, goal=False), offline()
    code = tick(store, clock, "fast", model)
    row = last_row(store)
    assert (code, row.outcome) == (0, Outcome.REFUSED)
    assert "will not act on trajectory alone" in row.error
    assert model.calls == []
    assert store.list_intents(P) == []


def test_fast_advances_the_current_step_and_stages_one_ready_intent(clock: FakeClock) -> None:
    """The first pending step becomes one ready intent and is marked done; the row records the call."""
    store = make_store(clock)
    first, second = store.replace_plan(P, 1, [NewPlanStep("Write 3.1"), NewPlanStep("Plot")], now=clock.now())
    code = tick(store, clock, "fast", offline())
    row = last_row(store)
    assert (code, row.outcome) == (0, Outcome.STAGED)
    [intent] = store.list_intents(P)
    assert (intent.status, intent.action_type, intent.title) == (
        IntentStatus.READY,
        "note",
        "Progress note: Write 3.1",
    )
    assert intent.payload["step_id"] == first.id
    assert intent.origin.tick_kind == "fast"
    assert row.intent_id == intent.id
    assert [s.status for s in store.list_plan(P, 1)] == [StepStatus.DONE, StepStatus.PENDING]
    assert f"step={first.id}" in row.detail
    assert "prompt=sha256:" in row.detail
    assert "model=offline" in row.detail
    assert "tokens_in=" in row.detail
    assert "tokens_out=" in row.detail
    tick(store, clock, "fast", offline())
    assert store.list_intents(P)[0].payload["step_id"] == second.id


def test_fast_without_a_plan_derives_one_action_and_flags_a_replan(clock: FakeClock) -> None:
    """With no pending step the tick still proposes one action and the row says a re-plan is needed."""
    store, model = make_store(clock), offline()
    store.add_task(P, "Plot results", priority=5, now=clock.now())
    tick(store, clock, "fast", model)
    row = last_row(store)
    assert row.outcome is Outcome.STAGED
    assert "replan_needed=true" in row.detail
    sent = read_packet(model.calls[0][-1].content)
    assert sent is not None
    assert sent["replan_needed"] is True
    assert store.list_intents(P)[0].title == "Progress note: Plot results"


def test_fast_packet_is_fresh_and_carries_state_of_play_taint_and_failures(clock: FakeClock) -> None:
    """The packet holds the latest state of play, new observations with taint, and failed keys."""
    store, model = make_store(clock), offline()
    store.add_state_of_play(P, "old summary", now=clock.now())
    store.add_state_of_play(P, "Yesterday: chapter 3 half done.", now=clock.now())
    store.add_observation(P, source="mail:x", content_hash="h1", payload={"subject": "hi"}, now=clock.now())
    failed = store.stage_intent(P, NewIntent("email", "Send  Report", "Bob@x"), now=clock.now())
    store.record_verdict(P, failed.id, Verdict.BLOCKED, ["r"], now=clock.now())
    tick(store, clock, "fast", model)
    sent = read_packet(model.calls[0][-1].content)
    assert sent is not None
    assert sent["state_of_play"] == "Yesterday: chapter 3 half done."
    assert [(o["source"], o["tainted"]) for o in sent["observations"]] == [("mail:x", True)]
    assert sent["tried_and_failed"] == ["email|send report|bob@x"]
    assert sent["goal"]["title"] == "Ship the thesis"


# -- fast: fail closed -----------------------------------------------------------------------------

MALFORMED = [
    pytest.param("", id="empty"),
    pytest.param("Sure! I will write a note.", id="prose"),
    pytest.param('{"actionType": "note"}', id="missing-title"),
    pytest.param('{"actionType": "Note Now", "title": "x"}', id="bad-type"),
    pytest.param('{"actionType": "note", "title": "x", "shell": "rm -rf /"}', id="unknown-field"),
    pytest.param('[{"actionType": "note", "title": "x"}]', id="a-list"),
    pytest.param('{"actionType": "note", "title": "x"} {"actionType": "email", "title": "y"}', id="two"),
    pytest.param('Here:\n```json\n{"actionType": "note", "title": "x"}\n```', id="fence-in-prose"),
    pytest.param('{"actionType": "spend", "title": "x", "amount": -5}', id="negative-amount"),
    pytest.param('{"actionType": "teleport", "title": "t", "recipient": "", "body": ""}', id="unknown-type"),
    pytest.param(
        '{"actionType": "wire_transfer", "title": "w", "recipient": "", "body": ""}', id="no-handler"
    ),
    pytest.param('{"actionType": "email", "title": "x", "body": "b"}', id="email-missing-recipient"),
    pytest.param('{"actionType": "note", "title": "x", "body": "", "amount": 1.0}', id="note-with-amount"),
    pytest.param(
        '{"actionType": "note", "title": "x", "body": "", "recipient": "a@b.example"}', id="note-to-someone"
    ),
    pytest.param('{"actionType": "note", "title": "x", "body": "", "vendor": "Shop"}', id="note-with-vendor"),
    pytest.param('{"actionType": "none", "title": "x"}', id="none-without-rationale"),
    pytest.param('{"actionType": "email", "title": "x", "recipient": "", "body": "b"}', id="email-nobody"),
    pytest.param(
        '{"actionType": "email", "title": "x", "recipient": "a@b.c, d@e.f", "body": ""}', id="two-to"
    ),
    pytest.param('{"actionType": "spend", "title": "x", "vendor": "Shop"}', id="spend-no-amount"),
    pytest.param('{"actionType": "note", "title": "' + "x" * 129 + '", "body": ""}', id="title-too-long"),
    pytest.param('{"actionType": "note", "title": "x", "body": "' + "b" * 481 + '"}', id="body-too-long"),
]


@pytest.mark.parametrize("reply", MALFORMED)
def test_fast_malformed_model_output_fails_closed(clock: FakeClock, reply: str) -> None:
    """Anything but exactly one valid action intent is a `failed` row, exit 1, and no intent at all."""
    store = make_store(clock)
    code = tick(store, clock, "fast", scripted(reply))
    row = last_row(store)
    assert (code, row.outcome) == (1, Outcome.FAILED)
    assert "invalid model output" in row.error
    assert "tickloop.operator" not in row.error  # the answer's schema is named, not a Python union
    assert "prompt=sha256:" in row.detail
    assert store.list_intents(P) == []


def test_fast_model_error_fails_closed(clock: FakeClock) -> None:
    """A provider error is a `failed` row naming it, and no intent."""
    store = make_store(clock)
    model = OfflineModel(fail_on_call=frozenset({1}))
    code = tick(store, clock, "fast", model)
    assert (code, last_row(store).outcome) == (1, Outcome.FAILED)
    assert "model call failed" in last_row(store).error
    assert store.list_intents(P) == []


def test_a_failed_model_call_is_not_followed_by_a_critique(clock: FakeClock) -> None:
    """With no answer to critique (the provider failed), the tick asks nothing more and stores none."""
    store = make_store(clock)
    model = OfflineModel(fail_on_call=frozenset({1}))
    tick(store, clock, "fast", model)
    assert len(model.calls) == 1  # the failed action call; no critique call after it
    assert store.recent_critiques(P, goal_version(store)) == []


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=12,
)
FIELDS = st.sampled_from(["actionType", "title", "recipient", "amount", "body", "vendor", "__proto__", "x"])
#: answers that are valid, or one field away from it, so the fuzzer reaches the valid side too
NEAR_VALID = st.builds(
    lambda kind, title, recipient: json.dumps(action(kind, title, recipient=recipient)),
    st.sampled_from(["note", "email", "spend", "none", "message", "Note"]),
    st.text(max_size=30),
    st.sampled_from(["", "a@b.example", "team", "a b", "x@y"]),
)
HOSTILE = st.one_of(
    st.text(max_size=200),
    JSON.map(json.dumps),
    st.dictionaries(FIELDS, JSON, max_size=5).map(json.dumps),
    st.dictionaries(FIELDS, JSON, max_size=5).map(lambda d: json.dumps(d)[: max(0, len(json.dumps(d)) - 1)]),
    st.binary(max_size=100).map(lambda b: b.decode("latin-1")),
    st.just('{"actionType": "note", "title": "' + "x" * 300 + '"}'),
    NEAR_VALID,
    st.just("[" * 5000 + "]" * 5000),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reply=HOSTILE)
def test_fast_fuzzed_hostile_outputs_never_stage_an_intent(reply: str) -> None:
    """Broken or hostile model output either validates as one intent or fails closed with no intent."""
    clock = FakeClock()
    store = make_store(clock)
    try:
        out = check_intent(to_intent(decode_structured(reply, ANSWER)))
        nothing = out.action_type == NOTHING_TO_DO
        if not nothing:  # the one staging path's checks, which the fast tick's intent passes too
            amount = {} if out.amount is None else {"amount": out.amount}
            check_draft(out.action_type, out.recipient, {"body": out.body, **amount})
        valid = True
    except ValidationError:
        valid = nothing = False
    tick(store, clock, "fast", scripted(reply))
    row = last_row(store)
    if not valid:
        assert row.outcome is Outcome.FAILED
        assert store.list_intents(P) == []
    elif "NUL character" in row.error:  # valid JSON the store cannot keep: refused whole, no intent
        assert (row.outcome, store.list_intents(P)) == (Outcome.FAILED, [])
    else:
        assert len(store.list_intents(P)) == (0 if nothing else 1)


# -- fast: drift guard and gate --------------------------------------------------------------------


def _failed(store: Store, clock: FakeClock, action_type: str, title: str, recipient: str = "") -> None:
    made = store.stage_intent(P, NewIntent(action_type, title, recipient), now=clock.now())
    store.record_verdict(P, made.id, Verdict.BLOCKED, ["earlier"], now=clock.now())


def test_fast_repeat_of_a_failed_action_is_recorded_blocked(clock: FakeClock) -> None:
    """An exact-ish repeat of a tried-and-failed action is not staged: a blocked intent and row."""
    store = make_store(clock)
    _failed(store, clock, "note", "Progress NOTE:  ship the thesis")
    code = tick(store, clock, "fast", offline())
    row = last_row(store)
    assert (code, row.outcome) == (0, Outcome.BLOCKED)
    intent = store.get_intent(P, row.intent_id)
    assert intent.status is IntentStatus.BLOCKED
    assert intent.verdict_reasons[0].startswith("drift.repeat")
    assert store.list_intents(P, status=IntentStatus.READY) == []


def test_fast_near_miss_of_a_failed_action_is_not_suppressed(clock: FakeClock) -> None:
    """A genuinely new action (another title) goes ahead even right after a failure."""
    store = make_store(clock)
    _failed(store, clock, "note", "Progress note: ship the thesis draft")
    tick(store, clock, "fast", offline())
    assert last_row(store).outcome is Outcome.STAGED


def test_fast_kernel_sanctioned_retry_is_exempt_from_the_drift_guard(clock: FakeClock) -> None:
    """A recovery retry the kernel sanctioned runs the gate as usual instead of being blocked."""
    store = make_store(clock)
    _failed(store, clock, "note", "Progress note: Ship the thesis")
    tick(store, clock, "fast", offline(), sanctioned_retry=True)
    assert last_row(store).outcome is Outcome.STAGED


#: the fields each action type requires besides its title, empty unless a test gives them
_REQUIRED: dict[str, dict[str, object]] = {
    "email": {"recipient": "", "body": ""},
    "message": {"recipient": "", "body": ""},
    "draft_prep": {"recipient": "", "body": ""},
    "note": {"body": ""},
    "wiki_write": {"body": ""},
    "spend": {"vendor": "Shop", "amount": 1.0},
}


def action(kind: str, title: str, **fields: object) -> dict[str, object]:
    """A fast answer of ``kind`` with every field its type requires (empty unless given)."""
    return {"actionType": kind, "title": title, **_REQUIRED.get(kind, {}), **fields}


EMAIL = action("email", "Send the report", recipient="advisor@uni.example", body="The report is attached.")
GATE_TABLE = [
    # reply, config, tainted observation, outcome, intent status, reason fragment
    (action("note", "n"), {}, False, Outcome.STAGED, IntentStatus.READY, "gate.allowed"),
    (action("note", "n"), {}, True, Outcome.STAGED, IntentStatus.READY, "gate.allowed"),
    (EMAIL, {}, False, Outcome.GATE_STOP, IntentStatus.REQUIRES_APPROVAL, "gate.external_or_irreversible"),
    (EMAIL, {"gate": {"allow": ["email"]}}, False, Outcome.STAGED, IntentStatus.READY, "gate.allowed"),
    (EMAIL, {"gate": {"allow": ["email"]}}, True, Outcome.GATE_STOP, IntentStatus.REQUIRES_APPROVAL,
     "gate.tainted_external"),
    (action("spend", "Buy", amount=12.5, vendor="Shop"),
     {"gate": {"allow": ["spend"]}}, False, Outcome.GATE_STOP, IntentStatus.REQUIRES_APPROVAL, "gate.money"),
    (action("message", "n"), {"gate": {"block": ["message"]}}, False,
     Outcome.GATE_STOP, IntentStatus.BLOCKED, "gate.block_list"),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "config", "tainted", "outcome", "status", "reason"), GATE_TABLE)
def test_fast_gate_decides_the_outcome_and_stamps_the_intent(
    clock: FakeClock,
    reply: dict[str, Any],
    config: dict[str, Any],
    tainted: bool,
    outcome: Outcome,
    status: IntentStatus,
    reason: str,
) -> None:
    """The gate's verdict on the one intent sets the row's outcome; the intent keeps its stamp."""
    store = make_store(clock)
    if tainted:
        store.add_observation(P, source="mail:x", content_hash="h", payload={}, now=clock.now(), tainted=True)
    tick(store, clock, "fast", scripted(reply), config)
    row = last_row(store)
    intent = store.get_intent(P, row.intent_id)
    assert (row.outcome, intent.status) == (outcome, status)
    assert any(reason in r for r in intent.verdict_reasons), intent.verdict_reasons
    assert intent.origin.tainted is tainted
    if "amount" in reply:
        assert intent.payload["amount"] == reply["amount"]
    offered = candidates.pending(store, P)
    if outcome is Outcome.GATE_STOP:
        assert [(c.topic, c.intent_id) for c in offered] == [("fast.gate_stop", intent.id)]
        assert "notice_candidate=" in row.detail
    else:
        assert offered == []


# -- self-critique ---------------------------------------------------------------------------------


def test_a_gate_stop_writes_one_critique_and_the_next_tick_is_told_not_to_repeat_it(clock: FakeClock) -> None:
    """After a gate stop one critique is kept for the goal; once the person decides, the next tick
    sees it as "do not repeat"."""
    store = make_store(clock)
    tick(store, clock, "fast", scripted(EMAIL))
    [critique] = store.recent_critiques(P, 1)
    assert critique.failure_type == "gate_refusal"
    store.decide(P, last_row(store).intent_id or 0, DecisionKind.DENY, by="ada", now=clock.now())
    model = offline()
    tick(store, clock, "fast", model)
    message = model.calls[0][-1].content
    assert "do not repeat these" in message
    sent = read_packet(message)
    assert sent is not None
    assert sent["critiques"][0]["critique"] == critique.text


def test_only_the_last_three_critiques_are_kept_and_none_after_success(clock: FakeClock) -> None:
    """Critiques are pruned to three per goal, and a staged tick writes none."""
    store = make_store(clock)
    for _ in range(5):
        tick(store, clock, "fast", scripted(EMAIL))
        if last_row(store).outcome is Outcome.GATE_STOP:  # the person decides; later ticks are blocked
            store.decide(P, last_row(store).intent_id or 0, DecisionKind.DENY, by="ada", now=clock.now())
    assert len(store.recent_critiques(P, 1, limit=10)) == 3
    tick(store, clock, "fast", offline())
    assert last_row(store).outcome is Outcome.STAGED
    assert len(store.recent_critiques(P, 1, limit=10)) == 3


def test_the_critique_never_grades_the_outcome(clock: FakeClock) -> None:
    """The critique is shown the outcome label already set; the row keeps it whatever the model says."""
    store = make_store(clock)
    seen: list[dict[str, Any]] = []

    def critic(messages: Sequence[ChatMessage], schema: Mapping[str, Any]) -> str:
        packet = read_packet(messages[-1].content)
        assert packet is not None
        seen.append(packet)
        return json.dumps({"critique": "Actually this was fine.", "failureType": "tool_error"})

    tick(store, clock, "fast", scripted("not json", critique=critic))
    assert [p["outcome"] for p in seen] == ["failed"]
    assert last_row(store).outcome is Outcome.FAILED


@pytest.mark.parametrize(
    "bad",
    [
        "nope",
        json.dumps({"critique": "A. B. C. D.", "failureType": "tool_error"}),
        json.dumps({"critique": "x", "failureType": "bad_luck"}),
    ],
)
def test_an_invalid_critique_stores_nothing(clock: FakeClock, bad: str) -> None:
    """A critique outside the schema, over three sentences, or off the taxonomy is dropped."""
    store = make_store(clock)
    tick(store, clock, "fast", scripted(EMAIL, critique=lambda _m, _s: bad))
    assert last_row(store).outcome is Outcome.GATE_STOP
    assert store.recent_critiques(P, 1) == []


# -- slow ------------------------------------------------------------------------------------------


def test_slow_refuses_without_an_active_goal(clock: FakeClock) -> None:
    """The reviewer will not plan without a goal model either."""
    store, model = make_store(clock, goal=False), offline()
    tick(store, clock, "slow", model)
    assert last_row(store).outcome is Outcome.REFUSED
    assert model.calls == []


def test_slow_reconciles_a_blocked_task_step_to_blocked_never_done(clock: FakeClock) -> None:
    """A pending step whose task became blocked is flipped to blocked; a done task's step to done."""
    store = make_store(clock)
    blocked = store.add_task(P, "Ask advisor", priority=7, now=clock.now())
    finished = store.add_task(P, "Outline", priority=1, now=clock.now())
    open_task = store.add_task(P, "Write 3.1", priority=5, now=clock.now())
    steps = store.replace_plan(
        P, 1, [NewPlanStep("ask", blocked.id), NewPlanStep("outline", finished.id)], now=clock.now()
    )
    store.set_task_status(P, blocked.id, TaskStatus.BLOCKED, now=clock.now())
    store.set_task_status(P, finished.id, TaskStatus.DONE, now=clock.now())
    tick(store, clock, "slow", offline())
    plan = {s.id: s for s in store.list_plan(P, 1)}
    assert plan[steps[0].id].status is StepStatus.BLOCKED
    assert plan[steps[1].id].status is StepStatus.DONE
    pending = [s for s in plan.values() if s.status is StepStatus.PENDING]
    assert [(s.title, s.task_id) for s in pending] == [("Write 3.1", open_task.id)]
    row = last_row(store)
    assert row.outcome is Outcome.DONE
    assert "steps_blocked=1 steps_done=1" in row.detail
    [behind] = candidates.pending(store, P)
    assert (behind.topic, "Ask advisor" in behind.text) == ("slow.behind", True)


def test_slow_applies_priorities_and_the_plan_and_offers_drift(clock: FakeClock) -> None:
    """Model priorities reach the board, the plan replaces the old one in order, drift is offered."""
    store = make_store(clock)
    a = store.add_task(P, "A", priority=1, now=clock.now())
    b = store.add_task(P, "B", priority=2, now=clock.now())
    store.set_task_status(P, b.id, TaskStatus.BLOCKED, now=clock.now())
    review = {
        "priorities": [{"taskId": a.id, "priority": 90}],
        "plan": [{"title": "do A", "taskId": a.id}, {"title": "think", "taskId": None}],
        "drift": ["Reading unrelated papers"],
        "behind": [],
    }
    tick(store, clock, "slow", offline(lambda _m, _s: json.dumps(review)))
    assert store.get_task(P, a.id).priority == 90
    assert [(s.title, s.task_id) for s in store.list_plan(P, 1)] == [("do A", a.id), ("think", None)]
    assert [c.topic for c in candidates.pending(store, P)] == ["slow.drift"]


def test_slow_sends_the_open_task_ids_as_enums(clock: FakeClock) -> None:
    """The schema the reviewer is sent lets priorities and plan steps name only the board's open tasks."""
    store = make_store(clock)
    a = store.add_task(P, "A", now=clock.now())
    b = store.add_task(P, "B", now=clock.now())
    store.set_task_status(P, b.id, TaskStatus.BLOCKED, now=clock.now())
    sent: list[Mapping[str, Any]] = []
    tick(store, clock, "slow", offline(lambda m, schema: sent.append(schema) or answer(m, schema)))
    properties = sent[0]["properties"]
    assert properties["priorities"]["items"]["properties"]["taskId"] == {"enum": [a.id]}
    assert properties["priorities"]["maxItems"] == 1
    assert properties["plan"]["items"]["properties"]["taskId"] == {
        "anyOf": [{"enum": [a.id]}, {"type": "null"}]
    }
    assert last_row(store).outcome is Outcome.DONE


@pytest.mark.parametrize(
    ("priorities", "plan", "said"),
    [
        ([{"taskId": 999, "priority": 5}], [], "priorities names task 999"),
        ([], [{"title": "ghost", "taskId": 999}], "names task 999, not an open task"),
        ([], [{"title": "B", "taskId": "BLOCKED"}], "names task"),
        ([{"taskId": "A", "priority": 5}, {"taskId": "A", "priority": 6}], [], "twice"),
    ],
    ids=["unknown-priority", "unknown-step", "blocked-step", "duplicate"],
)
def test_slow_review_naming_a_task_outside_the_enum_fails_and_changes_nothing(
    clock: FakeClock, priorities: list[dict[str, Any]], plan: list[dict[str, Any]], said: str
) -> None:
    """A priority or step naming a task that is not open (unknown, blocked) or a task twice fails closed."""
    store = make_store(clock)
    a = store.add_task(P, "A", priority=1, now=clock.now())
    b = store.add_task(P, "B", priority=2, now=clock.now())
    store.set_task_status(P, b.id, TaskStatus.BLOCKED, now=clock.now())
    ids = {"A": a.id, "BLOCKED": b.id}
    fix = [{**p, "taskId": ids.get(p["taskId"], p["taskId"])} for p in priorities]
    steps = [{**s, "taskId": ids.get(s["taskId"], s["taskId"])} for s in plan] or [
        {"title": "a", "taskId": a.id}
    ]
    review = {"priorities": fix, "plan": steps, "drift": [], "behind": []}
    code = tick(store, clock, "slow", offline(lambda _m, _s: json.dumps(review)))
    row = last_row(store)
    assert (code, row.outcome) == (1, Outcome.FAILED)
    assert said in row.error
    assert store.get_task(P, a.id).priority == 1
    assert store.list_plan(P, 1) == []


@pytest.mark.parametrize("plan", [[]], ids=["no-plan"])
def test_slow_review_without_a_plan_for_open_tasks_fails_and_changes_nothing(
    clock: FakeClock, plan: list[dict[str, object]]
) -> None:
    """A review that leaves two open tasks without any plan step is a failed review, not `done`."""
    store = make_store(clock)
    a = store.add_task(P, "A", priority=1, now=clock.now())
    store.add_task(P, "B", priority=2, now=clock.now())
    review = {"priorities": [{"taskId": a.id, "priority": 90}], "plan": plan, "drift": [], "behind": []}
    code = tick(store, clock, "slow", offline(lambda _m, _s: json.dumps(review)))
    row = last_row(store)
    assert (code, row.outcome) == (1, Outcome.FAILED)
    assert "no plan for 2 open tasks" in row.error
    assert store.get_task(P, a.id).priority == 1
    assert store.list_plan(P, 1) == []


def test_slow_review_may_leave_the_plan_empty_when_no_task_is_open(clock: FakeClock) -> None:
    """With nothing open, an empty plan is the right answer and the review is done."""
    store = make_store(clock)
    done = store.add_task(P, "A", priority=1, now=clock.now())
    store.set_task_status(P, done.id, TaskStatus.DONE, now=clock.now())
    review: dict[str, list[Any]] = {"priorities": [], "plan": [], "drift": [], "behind": []}
    tick(store, clock, "slow", offline(lambda _m, _s: json.dumps(review)))
    assert last_row(store).outcome is Outcome.DONE


@pytest.mark.parametrize("missing", ["priorities", "plan", "drift", "behind"])
def test_slow_review_missing_a_field_fails_closed(clock: FakeClock, missing: str) -> None:
    """Every field of the review is required: one left out is invalid output, never an empty default."""
    store = make_store(clock)
    review: dict[str, list[Any]] = {"priorities": [], "plan": [], "drift": [], "behind": []}
    del review[missing]
    tick(store, clock, "slow", offline(lambda _m, _s: json.dumps(review)))
    assert last_row(store).outcome is Outcome.FAILED
    assert missing in last_row(store).error


def test_slow_invalid_review_fails_and_changes_nothing(clock: FakeClock) -> None:
    """A review outside the schema is a failed row; the plan and priorities stay as they were."""
    store = make_store(clock)
    task = store.add_task(P, "A", priority=1, now=clock.now())
    store.replace_plan(P, 1, [NewPlanStep("keep me", task.id)], now=clock.now())
    code = tick(store, clock, "slow", offline(lambda _m, _s: '{"plan": "everything"}'))
    assert (code, last_row(store).outcome) == (1, Outcome.FAILED)
    assert [s.title for s in store.list_plan(P, 1)] == ["keep me"]
    assert store.get_task(P, task.id).priority == 1


# -- consolidate -----------------------------------------------------------------------------------


def test_consolidate_writes_state_of_play_and_a_draft_goal_and_prunes(clock: FakeClock) -> None:
    """All three phases run: a summary, a never-activated draft goal, and retention pruning."""
    store = make_store(clock)
    reply = {"stateOfPlay": "Chapter 3 is half done.", "goalRefresh": "Chapter 3 by Monday"}
    code = tick(store, clock, "consolidate", offline(lambda _m, _s: json.dumps(reply)))
    row = last_row(store)
    assert (code, row.outcome) == (0, Outcome.DONE)
    summary = store.latest_state_of_play(P)
    assert summary is not None
    assert summary.text == "Chapter 3 is half done."
    goals = store.list_goal_models(P)
    assert [(g.version, g.status) for g in goals] == [(1, GoalStatus.ACTIVE), (2, GoalStatus.DRAFT)]
    assert goal_version(store) == 1
    assert "prune: progress=0" in row.detail


def test_the_next_fast_tick_reads_the_new_state_of_play(clock: FakeClock) -> None:
    """The nightly summary is what the morning's first fast tick is shown."""
    store, model = make_store(clock), offline()
    tick(store, clock, "consolidate", offline())
    tick(store, clock, "fast", model)
    sent = read_packet(model.calls[0][-1].content)
    summary = store.latest_state_of_play(P)
    assert sent is not None
    assert summary is not None
    assert sent["state_of_play"] == summary.text


def test_a_consolidation_phase_that_throws_does_not_stop_the_others(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failing phase is named in a failed row, and the other phases still did their work."""
    store = make_store(clock)
    old = clock.now() - timedelta(days=90)
    for i in range(3):
        store.add_observation(P, source="s", content_hash=f"h{i}", payload={}, now=old)
    monkeypatch.setattr(consolidate, "KEEP_RECENT", 1)

    def broken(_ctx: TickContext, _answer: object) -> str:
        raise RuntimeError("disk full")

    monkeypatch.setattr(consolidate, "goal_refresh", broken)
    code = tick(store, clock, "consolidate", offline())
    row = last_row(store)
    assert (code, row.outcome) == (1, Outcome.FAILED)
    assert row.error == "goal_refresh: RuntimeError: disk full"
    assert store.latest_state_of_play(P) is not None
    assert len(store.list_observations(P)) == 1
    assert "observations=2" in row.detail


def test_a_failed_consolidation_model_call_still_prunes(clock: FakeClock) -> None:
    """An invalid answer fails the two model phases, each recorded, and pruning still runs."""
    store = make_store(clock)
    code = tick(store, clock, "consolidate", offline(lambda _m, _s: "{}"))
    row = last_row(store)
    assert code == 1
    assert row.error.count("invalid model output") == 2
    assert "prune: progress=" in row.detail
    assert store.latest_state_of_play(P) is None
    assert len(store.list_goal_models(P)) == 1


def test_consolidate_without_a_goal_still_prunes(clock: FakeClock) -> None:
    """With no active goal the summary phases fail by name while retention still runs."""
    store, model = make_store(clock, goal=False), offline()
    tick(store, clock, "consolidate", model)
    row = last_row(store)
    assert "no active goal model" in row.error
    assert "prune:" in row.detail
    assert model.calls == []


@pytest.mark.parametrize("outcome", list(Outcome))
def test_fast_after_critiques_only_a_stopped_tick(clock: FakeClock, outcome: Outcome) -> None:
    """The critique hook asks the model and stores one critique after a failed, blocked or gate-stopped
    tick; after any other outcome it neither asks the model nor stores anything."""
    store, model = make_store(clock), offline()
    ctx = TickContext(
        store=store, profile=P, kind="fast", settings=load_settings({}, None), clock=clock, env={},
        log=lambda _: None, owner="test", _model=model,
    )  # fmt: skip
    fast.after(ctx, TickResult(outcome, detail="d"))
    stopped = outcome in {Outcome.FAILED, Outcome.BLOCKED, Outcome.GATE_STOP}
    assert (len(model.calls), len(store.recent_critiques(P, goal_version(store)))) == (
        (1, 1) if stopped else (0, 0)
    )


@pytest.mark.parametrize(
    ("decision", "step_status"),
    [(DecisionKind.APPROVE, StepStatus.DONE), (DecisionKind.DENY, StepStatus.SKIPPED)],
)
def test_a_gate_stopped_step_waits_for_the_person_then_the_plan_moves_on(
    clock: FakeClock, decision: DecisionKind, step_status: StepStatus
) -> None:
    """While a step's intent awaits approval, later fast ticks wait (no new intent, no new candidate);
    once the person approves (done) or denies (skipped), the next tick works on the next step."""
    store = make_store(clock)
    email, note = store.replace_plan(
        P, 1, [NewPlanStep("Email ada@example.org: weekly update"), NewPlanStep("Write 3.1")], now=clock.now()
    )
    tick(store, clock, "fast", offline())
    [waiting] = store.list_intents(P)
    assert (last_row(store).outcome, waiting.status) == (Outcome.GATE_STOP, IntentStatus.REQUIRES_APPROVAL)
    for _ in range(3):
        assert tick(store, clock, "fast", offline()) == 0
        assert last_row(store).outcome is Outcome.NOOP
        assert f"decision on intent {waiting.id}" in last_row(store).detail
    assert len(store.list_intents(P)) == 1
    assert len(candidates.pending(store, P)) == 1
    store.decide(P, waiting.id, decision, by="ada", now=clock.now())
    tick(store, clock, "fast", offline())
    assert last_row(store).outcome is Outcome.STAGED
    steps = {s.id: s.status for s in store.list_plan(P, 1)}
    assert steps == {email.id: step_status, note.id: StepStatus.DONE}


@pytest.mark.parametrize(
    "reply",
    [
        action("email", "Send it", recipient="advisor", body="hi"),
        action("email", "Send it", recipient="advisor@uni.example", body=""),
    ],
    ids=["not-an-address", "no-body"],
)
def test_a_fast_intent_the_staging_checks_refuse_is_a_failed_row_and_nothing_is_staged(
    clock: FakeClock, reply: dict[str, object]
) -> None:
    """The fast tick stages through the one checked path: an email to a bare name, or with no body,
    fails the tick (nothing guessed) and never reaches the approval queue."""
    store = make_store(clock)
    tick(store, clock, "fast", scripted(reply))
    row = last_row(store)
    assert row.outcome is Outcome.FAILED
    assert "nothing was" in (row.error or "")  # the schema's check, or the staging path's
    assert store.list_intents(P) == []
