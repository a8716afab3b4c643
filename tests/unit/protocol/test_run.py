"""The run state machine: every legal transition works, every other one raises."""

from __future__ import annotations

import itertools

import pytest

from tickloop.errors import TransitionError
from tickloop.protocol.policy import compile_policy
from tickloop.protocol.run import FINAL_STATES, TRANSITIONS, Run, RunState, check_transition

S = RunState

# The spec's diagram, edge by edge (plus: wait again, stop from anywhere live, re-wait after enqueue).
EXPECTED_LEGAL = {
    (S.INACTIVE, S.ARMED),
    (S.ARMED, S.WAITING),
    (S.ARMED, S.SCHEDULED),
    (S.ARMED, S.COMPLETE),
    (S.ARMED, S.STOPPED),
    (S.WAITING, S.WAITING),
    (S.WAITING, S.SCHEDULED),
    (S.WAITING, S.COMPLETE),
    (S.WAITING, S.STOPPED),
    (S.SCHEDULED, S.ENQUEUED),
    (S.SCHEDULED, S.CANCELLED),
    (S.SCHEDULED, S.WAITING),
    (S.SCHEDULED, S.STOPPED),
    (S.ENQUEUED, S.WAITING),
    (S.ENQUEUED, S.SCHEDULED),
    (S.ENQUEUED, S.COMPLETE),
    (S.ENQUEUED, S.STOPPED),
}


@pytest.mark.parametrize(("current", "target"), list(itertools.product(RunState, RunState)))
def test_transition_table_allows_exactly_the_diagram(current: RunState, target: RunState) -> None:
    """Each pair of states is legal exactly when the diagram has that edge; others raise."""
    if (current, target) in EXPECTED_LEGAL:
        check_transition(current, target)
    else:
        with pytest.raises(TransitionError, match=f"{current} -> {target}"):
            check_transition(current, target)


def test_final_states_have_no_way_out() -> None:
    """Cancelled, complete and stopped runs are over: nothing restarts them."""
    assert {S.CANCELLED, S.COMPLETE, S.STOPPED} == FINAL_STATES
    assert all(not TRANSITIONS[s] for s in FINAL_STATES)


def test_run_is_immutable_and_transitions_return_a_new_run() -> None:
    """A transition never mutates the run another coroutine may be holding."""
    run = Run("r1", compile_policy("default", "tick"), start_count=2, target_count=5, resume_allowed=False)
    scheduled = run.to(S.SCHEDULED)
    assert run.state is S.ARMED
    assert scheduled.state is S.SCHEDULED
    assert (scheduled.requested, scheduled.step_number(2), scheduled.step_number(4)) == (3, 1, 3)
    assert scheduled.active
    assert not scheduled.to(S.CANCELLED).active


def test_run_needs_a_positive_bound() -> None:
    """There is no unbounded or empty run."""
    with pytest.raises(TransitionError):
        Run("r", compile_policy("default", "tick"), start_count=3, target_count=3, resume_allowed=False)
