"""Every compare-and-set of the store, on every backend: a second caller whose view of the status is
stale changes zero rows (DESIGN.md: "one conditional UPDATE that checks the prior state in its WHERE").

Each case brings a row to some state, then replays an operation that was valid only at an earlier
status (a dead executor's late call, a second approval, a reaper racing a finisher). The operation must
conflict or report that it won nothing, and the row must be exactly what it was.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tickloop.errors import ConflictError, TransitionError
from tickloop.operator.domain import (
    DecisionKind,
    IntentStatus,
    NewIntent,
    NewPlanStep,
    StepStatus,
    TaskStatus,
    Verdict,
)
from tickloop.operator.store import Ending, Store

NOW = datetime(2026, 7, 7, 17, 0, tzinfo=UTC)
LATER = NOW + timedelta(hours=2)
S = IntentStatus


def _allowed(store: Store) -> int:
    intent = store.stage_intent("p", NewIntent("note", "t", payload={"k": 1}), now=NOW)
    store.record_verdict("p", intent.id, Verdict.ALLOWED, ["rule.x"], now=NOW)
    return intent.id


def _ready(store: Store) -> int:
    intent_id = _allowed(store)
    store.mark_ready("p", intent_id, now=NOW)
    return intent_id


def _waiting(store: Store) -> int:
    intent = store.stage_intent("p", NewIntent("email", "t", recipient="a@example.org"), now=NOW)
    store.record_verdict("p", intent.id, Verdict.REQUIRES_APPROVAL, ["external"], now=NOW)
    return intent.id


def _claimed(store: Store, owner: str = "ex-1") -> int:
    intent_id = _ready(store)
    [claim] = store.claim_intents("p", owner=owner, now=NOW)
    assert claim.id == intent_id
    return intent_id


def _sending(store: Store, owner: str = "ex-1") -> int:
    intent_id = _claimed(store, owner)
    store.mark_sending("p", intent_id, owner=owner, now=NOW)
    return intent_id


def _reaped(store: Store) -> int:
    intent_id = _sending(store)
    assert store.reap_stuck(cutoff=LATER, now=LATER) == [intent_id]
    return intent_id


def _released_stale(store: Store) -> int:
    intent_id = _claimed(store)
    assert store.release_stale_claims("p", cutoff=LATER, now=LATER) == [intent_id]
    return intent_id


def _sent(store: Store) -> int:
    intent_id = _sending(store)
    store.finish_intent("p", intent_id, S.SENT, owner="ex-1", now=NOW)
    return intent_id


def _approved(store: Store) -> int:
    intent_id = _waiting(store)
    store.decide("p", intent_id, DecisionKind.APPROVE, by="ian", now=NOW)
    return intent_id


Op = Callable[[Store, int], Any]


def _approve(store: Store, intent_id: int) -> Any:
    return store.decide("p", intent_id, DecisionKind.APPROVE, by="x", now=LATER)


def _deny(store: Store, intent_id: int) -> Any:
    return store.decide("p", intent_id, DecisionKind.DENY, by="x", now=LATER)


def _send_as(owner: str) -> Op:
    return lambda s, i: s.mark_sending("p", i, owner=owner, now=LATER)


def _finish_as(owner: str, status: IntentStatus) -> Op:
    return lambda s, i: s.finish_intent("p", i, status, owner=owner, now=LATER)


def _hand_over_end(store: Store, intent_id: int) -> None:
    _won_nothing(
        store.finish_and_send("p", ending=Ending(intent_id, S.SENT), send=None, owner="ex-1", now=LATER)
    )


def _hand_over_send_as(owner: str) -> Op:
    return lambda s, i: _won_nothing(s.finish_and_send("p", ending=None, send=i, owner=owner, now=LATER))


def _reap(store: Store, _intent_id: int) -> None:
    _nothing(store.reap_stuck(cutoff=LATER, now=LATER))


def _release_stale(store: Store, _intent_id: int) -> None:
    _nothing(store.release_stale_claims("p", cutoff=LATER, now=LATER))


def _claim_again(store: Store, _intent_id: int) -> None:
    _nothing(store.claim_intents("p", owner="ex-2", now=LATER))


#: (what the stale caller believed, how the row got to where it is, the stale call)
INTENT_CASES: list[tuple[str, Callable[[Store], int], Op]] = [
    ("verdict twice", _allowed, lambda s, i: s.record_verdict("p", i, Verdict.BLOCKED, [], now=LATER)),
    ("ready twice", _ready, lambda s, i: s.mark_ready("p", i, now=LATER)),
    ("ready after a claim", _claimed, lambda s, i: s.mark_ready("p", i, now=LATER)),
    ("approve twice", _approved, _approve),
    ("deny after approve", _approved, _deny),
    ("release by another owner", _claimed, lambda s, i: s.release_claim("p", i, owner="ex-2", now=LATER)),
    ("release once sending", _sending, lambda s, i: s.release_claim("p", i, owner="ex-1", now=LATER)),
    ("sending twice", _sending, _send_as("ex-1")),
    ("sending by another owner", _claimed, _send_as("ex-2")),
    ("sending after the reaper", _reaped, _send_as("ex-1")),
    ("sending after a stale release", _released_stale, _send_as("ex-1")),
    ("sending once sent", _sent, _send_as("ex-1")),
    ("finish after the reaper", _reaped, _finish_as("ex-1", S.SENT)),
    ("finish by another owner", _sending, _finish_as("ex-2", S.SENT)),
    ("finish twice", _sent, _finish_as("ex-1", S.FAILED)),
    ("hand-over end after the reaper", _reaped, _hand_over_end),
    ("hand-over send after the reaper", _reaped, _hand_over_send_as("ex-1")),
    ("hand-over send by another owner", _claimed, _hand_over_send_as("ex-2")),
    ("reap twice", _reaped, _reap),
    ("reap a claim never sending", _claimed, _reap),
    ("stale release once sending", _sending, _release_stale),
    ("claim twice", _claimed, _claim_again),
    ("claim a waiting intent", _waiting, _claim_again),
]


class _WonNothingError(Exception):
    """The stale call reported that it changed nothing (rather than raising)."""


def _won_nothing(result: tuple[bool, bool]) -> None:
    if result == (False, False):
        raise _WonNothingError
    raise AssertionError(f"the stale hand-over won {result}")


def _nothing(result: list[Any]) -> None:
    if result == []:
        raise _WonNothingError
    raise AssertionError(f"the stale call changed {result}")


@pytest.mark.parametrize(("case", "arrange", "stale"), INTENT_CASES, ids=[c[0] for c in INTENT_CASES])
def test_a_stale_intent_transition_changes_zero_rows(
    store: Store, case: str, arrange: Callable[[Store], int], stale: Op
) -> None:
    """The late or second caller conflicts (or wins nothing) and the intent is exactly as it was."""
    intent_id = arrange(store)
    before = store.get_intent("p", intent_id)
    with pytest.raises((ConflictError, TransitionError, _WonNothingError)):
        stale(store, intent_id)
    assert store.get_intent("p", intent_id) == before, case


def test_a_stale_task_status_changes_zero_rows(store: Store) -> None:
    """A task status set against an expected status it no longer has conflicts and changes nothing."""
    task = store.add_task("p", "write chapter 3", now=NOW)
    store.set_task_status("p", task.id, TaskStatus.DOING, now=NOW, expected=TaskStatus.TODO)
    before = store.get_task("p", task.id)
    with pytest.raises(ConflictError):
        store.set_task_status("p", task.id, TaskStatus.DONE, now=LATER, expected=TaskStatus.TODO)
    assert store.get_task("p", task.id) == before


def test_a_stale_plan_step_status_changes_zero_rows(store: Store) -> None:
    """A step marked done by one tick cannot be flipped by a second tick that still saw it pending."""
    goal = store.add_goal_model("p", title="thesis", now=NOW)
    store.activate_goal_model("p", goal.version, now=NOW)
    [step] = store.replace_plan("p", goal.version, [NewPlanStep("draft")], now=NOW)
    store.set_step_status("p", step.id, StepStatus.DONE, now=NOW)
    before = store.list_plan("p", goal.version)
    with pytest.raises(ConflictError):
        store.set_step_status("p", step.id, StepStatus.BLOCKED, now=LATER, expected=StepStatus.PENDING)
    assert store.list_plan("p", goal.version) == before


def test_a_stale_attention_spend_changes_zero_rows(store: Store) -> None:
    """Two ticks that both saw one slot left: the second spend fails and records nothing."""
    day = NOW.date().isoformat()
    assert store.spend_attention("p", now=NOW, day=day, cap=1, min_gap=timedelta(0))
    before = store.attention_spends("p")
    assert not store.spend_attention("p", now=NOW, day=day, cap=1, min_gap=timedelta(0))
    assert store.attention_spends("p") == before
