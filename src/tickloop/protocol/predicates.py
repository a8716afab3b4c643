"""The scheduling predicates: ``admit`` (5 conditions) and ``next_step`` (4 conditions).

They look only at the transcript's structure (sources, terminals, counts). They never look at
assistant text, elapsed time or provider transport state. Each returns a ``Decision`` naming the
first failing rule with a stable id.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tickloop.protocol.run import Run


class TerminalStatus(StrEnum):
    """How a turn ended. Exactly one per turn."""

    COMPLETED = "completed"  #: the model finished its turn
    ERROR = "error"  #: the provider failed
    INTERRUPTED = "interrupted"  #: a person interrupted it, or a crash left it open
    UNKNOWN = "unknown"  #: the harness cannot tell


class Next(StrEnum):
    """What the run does after a ``next_step`` decision."""

    SCHEDULE = "schedule"  #: schedule one more time step
    WAIT = "wait"  #: the latest turn has no durable terminal yet
    COMPLETE = "complete"  #: the requested number of steps was observed
    STOP = "stop"  #: a non-completed terminal or an inconsistent count


@dataclass(frozen=True, slots=True)
class SessionView:
    """What the predicates may see of a session."""

    natural_context: bool  #: a message with source ``user`` whose turn has a durable terminal
    latest_terminal: TerminalStatus | None  #: terminal of the newest closed turn; None if none
    turn_open: bool  #: the newest turn has started and has no terminal yet
    time_steps: int  #: plugin time-step messages in the history, counted by source


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of a predicate: allowed or not, and the rule that decided it."""

    allowed: bool
    rule: str
    next: Next | None = None


def admit(
    view: SessionView,
    *,
    run_active: bool,
    policy_known: bool,
    resume: bool,
) -> Decision:
    """May a new run be armed? Checks the spec's five admission conditions in order."""
    if not view.natural_context:
        return Decision(False, "admit.natural_context")
    if view.latest_terminal is None:
        return Decision(False, "admit.no_closed_turn")
    resume_boundary = resume and view.latest_terminal is TerminalStatus.INTERRUPTED
    if view.latest_terminal is not TerminalStatus.COMPLETED and not resume_boundary:
        return Decision(False, "admit.terminal_not_completed")
    if run_active:
        return Decision(False, "admit.run_active")
    if not policy_known:
        return Decision(False, "admit.unknown_policy")
    return Decision(True, "admit.resume_boundary" if resume_boundary else "admit.ok")


def next_step(run: Run, view: SessionView) -> Decision:
    """Should the run schedule another step? Checks the spec's four scheduling conditions in order."""
    if not run.start_count <= view.time_steps <= run.target_count:
        return Decision(False, "next.count_out_of_window", Next.STOP)
    if view.turn_open or view.latest_terminal is None:
        return Decision(False, "next.terminal_missing", Next.WAIT)
    if view.latest_terminal is not TerminalStatus.COMPLETED and not _resume_boundary(run, view):
        return Decision(False, "next.terminal_not_completed", Next.STOP)
    if view.time_steps - run.start_count >= run.requested:
        return Decision(False, "next.target_reached", Next.COMPLETE)
    rule = "next.resume_boundary" if _resume_boundary(run, view) else "next.ok"
    return Decision(True, rule, Next.SCHEDULE)


def _resume_boundary(run: Run, view: SessionView) -> bool:
    """The single interrupted boundary --resume allows: only before the run's first new message."""
    return (
        run.resume_allowed
        and view.time_steps == run.start_count
        and view.latest_terminal is TerminalStatus.INTERRUPTED
    )
