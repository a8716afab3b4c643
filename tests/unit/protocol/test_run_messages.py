"""The run machine's refusals, word for word: what a developer embedding the harness reads when a
transition is illegal or a run's bounds are wrong. A mutation run found the allowed-targets list and the
bounds message free to change."""

from __future__ import annotations

import pytest

from tickloop.errors import TransitionError
from tickloop.protocol.policy import compile_policy
from tickloop.protocol.run import Run, RunState, check_transition

S = RunState


def test_an_illegal_transition_names_every_target_the_state_allows() -> None:
    with pytest.raises(TransitionError) as refused:
        check_transition(S.SCHEDULED, S.COMPLETE)
    assert str(refused.value) == (
        "run cannot go scheduled -> complete; from scheduled: cancelled, enqueued, stopped, waiting"
    )


def test_a_final_state_says_it_allows_nothing() -> None:
    with pytest.raises(TransitionError) as refused:
        check_transition(S.COMPLETE, S.ARMED)
    assert str(refused.value) == "run cannot go complete -> armed; from complete: nothing (final state)"


@pytest.mark.parametrize(("start", "target"), [(3, 3), (4, 2)])
def test_a_run_whose_target_does_not_exceed_its_start_is_refused(start: int, target: int) -> None:
    with pytest.raises(TransitionError) as refused:
        Run("r1", compile_policy("p", "tick"), start, target, resume_allowed=False)
    assert str(refused.value) == f"run r1: target {target} must exceed start {start}"
