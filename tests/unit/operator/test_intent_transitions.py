"""The intent status machine: one table, checked pair by pair."""

from __future__ import annotations

import itertools

import pytest

from tickloop.errors import TransitionError
from tickloop.operator.domain import IntentStatus
from tickloop.operator.intents import FINAL_STATUSES, TRANSITIONS, check_transition, sources_of

S = IntentStatus

#: Written out independently of the module's table, so a change to either shows up here.
LEGAL = {
    (S.PROPOSED, S.ALLOWED),
    (S.PROPOSED, S.REQUIRES_APPROVAL),
    (S.PROPOSED, S.BLOCKED),
    (S.ALLOWED, S.READY),
    (S.REQUIRES_APPROVAL, S.APPROVED),
    (S.REQUIRES_APPROVAL, S.DENIED),
    (S.READY, S.CLAIMED),
    (S.APPROVED, S.CLAIMED),
    (S.CLAIMED, S.SENDING),
    (S.CLAIMED, S.READY),
    (S.CLAIMED, S.APPROVED),
    (S.CLAIMED, S.COMPLETED),
    (S.CLAIMED, S.FAILED),
    (S.CLAIMED, S.NEEDS_HUMAN),
    (S.SENDING, S.SENT),
    (S.SENDING, S.COMPLETED),
    (S.SENDING, S.FAILED),
    (S.SENDING, S.NEEDS_HUMAN),
}
PAIRS = list(itertools.product(IntentStatus, repeat=2))


@pytest.mark.parametrize(("current", "target"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
def test_each_pair_is_legal_exactly_when_listed(current: IntentStatus, target: IntentStatus) -> None:
    """Every status pair is allowed exactly when the documented table lists it; others raise."""
    if (current, target) in LEGAL:
        check_transition(current, target)
    else:
        with pytest.raises(TransitionError, match=f"{current} -> {target}"):
            check_transition(current, target)


def test_table_covers_every_status() -> None:
    """No status is missing from the table, so no lookup can fail with a KeyError."""
    assert set(TRANSITIONS) == set(IntentStatus)


def test_final_statuses() -> None:
    """Blocked, denied, sent, completed, failed and needs_human are final: nothing leaves them."""
    assert {S.BLOCKED, S.DENIED, S.SENT, S.COMPLETED, S.FAILED, S.NEEDS_HUMAN} == FINAL_STATUSES


@pytest.mark.parametrize("target", [S.APPROVED, S.CLAIMED, S.SENDING, S.SENT, S.COMPLETED, S.READY])
def test_blocked_never_approved_executed_or_marked(target: IntentStatus) -> None:
    """A blocked intent can never be approved, claimed, executed or marked executed."""
    with pytest.raises(TransitionError, match="final status"):
        check_transition(S.BLOCKED, target)


def test_only_ready_or_approved_can_be_claimed() -> None:
    """The executor claims only intents at ready or approved."""
    assert sources_of(S.CLAIMED) == {S.READY, S.APPROVED}


def test_the_error_lists_what_is_allowed() -> None:
    """An illegal move says which moves the current status does allow."""
    with pytest.raises(TransitionError, match="allowed, blocked, requires_approval"):
        check_transition(S.PROPOSED, S.SENT)
