"""The run state machine, as an explicit transition table. An illegal transition raises.

::

    inactive -> armed -> waiting | scheduled
    scheduled -> enqueued            (delay expired, state still identical)
    scheduled -> cancelled           (state changed, /tick stop, disposed)
    enqueued -> scheduled | complete | stopped   (on the step's terminal)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from tickloop.errors import TransitionError
from tickloop.protocol.policy import CompiledPolicy


class RunState(StrEnum):
    """Where a run is."""

    INACTIVE = "inactive"  #: no run
    ARMED = "armed"  #: admitted, not yet scheduled
    WAITING = "waiting"  #: the latest turn has no durable terminal yet
    SCHEDULED = "scheduled"  #: a timer will enqueue the next step
    ENQUEUED = "enqueued"  #: the step is in the agent; its turn has not ended
    CANCELLED = "cancelled"  #: a pending enqueue was cancelled before it happened (final)
    COMPLETE = "complete"  #: exactly the requested number of steps ran (final)
    STOPPED = "stopped"  #: a non-completed terminal, an inconsistency, or /tick stop (final)


S = RunState

#: Every legal transition. Anything not listed raises ``TransitionError``.
TRANSITIONS: dict[RunState, frozenset[RunState]] = {
    S.INACTIVE: frozenset({S.ARMED}),
    S.ARMED: frozenset({S.WAITING, S.SCHEDULED, S.COMPLETE, S.STOPPED}),
    S.WAITING: frozenset({S.WAITING, S.SCHEDULED, S.COMPLETE, S.STOPPED}),
    S.SCHEDULED: frozenset({S.ENQUEUED, S.CANCELLED, S.WAITING, S.STOPPED}),
    S.ENQUEUED: frozenset({S.WAITING, S.SCHEDULED, S.COMPLETE, S.STOPPED}),
    S.CANCELLED: frozenset(),
    S.COMPLETE: frozenset(),
    S.STOPPED: frozenset(),
}

FINAL_STATES = frozenset(state for state, targets in TRANSITIONS.items() if not targets)


def check_transition(current: RunState, target: RunState) -> None:
    """Raise ``TransitionError`` unless the table allows ``current -> target``."""
    if target not in TRANSITIONS[current]:
        allowed = ", ".join(sorted(TRANSITIONS[current])) or "nothing (final state)"
        raise TransitionError(f"run cannot go {current} -> {target}; from {current}: {allowed}")


@dataclass(frozen=True, slots=True)
class Run:
    """One armed, bounded run with one frozen policy. Immutable: transitions return a new Run."""

    run_id: str
    policy: CompiledPolicy
    start_count: int  #: plugin time steps in the history when the run was armed
    target_count: int  #: start_count + the requested number of steps
    resume_allowed: bool  #: --resume: one exactly-interrupted boundary, before the first new step
    state: RunState = RunState.ARMED

    def __post_init__(self) -> None:
        if not 0 <= self.start_count < self.target_count:
            raise TransitionError(
                f"run {self.run_id}: target {self.target_count} must exceed start {self.start_count}"
            )

    @property
    def requested(self) -> int:
        return self.target_count - self.start_count

    @property
    def active(self) -> bool:
        return self.state not in FINAL_STATES

    def step_number(self, observed_time_steps: int) -> int:
        """1-based number of the step that ``observed_time_steps`` would enqueue next."""
        return observed_time_steps - self.start_count + 1

    def to(self, target: RunState) -> Run:
        check_transition(self.state, target)
        return replace(self, state=target)
