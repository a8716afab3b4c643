"""admit() and next_step(): each of the spec's conditions, in order, with its stable rule id."""

from __future__ import annotations

import pytest

from tickloop.protocol.policy import compile_policy
from tickloop.protocol.predicates import Next, SessionView, TerminalStatus, admit, next_step
from tickloop.protocol.run import Run

T = TerminalStatus
SETTLED = SessionView(natural_context=True, latest_terminal=T.COMPLETED, turn_open=False, time_steps=0)


@pytest.mark.parametrize(
    ("view", "run_active", "policy_known", "resume", "allowed", "rule"),
    [
        (SETTLED, False, True, False, True, "admit.ok"),
        (SessionView(False, None, False, 0), False, True, False, False, "admit.natural_context"),
        (SessionView(False, T.COMPLETED, False, 2), False, True, False, False, "admit.natural_context"),
        (SessionView(True, None, True, 0), False, True, False, False, "admit.no_closed_turn"),
        (SessionView(True, T.ERROR, False, 0), False, True, False, False, "admit.terminal_not_completed"),
        (SessionView(True, T.UNKNOWN, False, 0), False, True, True, False, "admit.terminal_not_completed"),
        (
            SessionView(True, T.INTERRUPTED, False, 0),
            False,
            True,
            False,
            False,
            "admit.terminal_not_completed",
        ),
        (SessionView(True, T.INTERRUPTED, False, 3), False, True, True, True, "admit.resume_boundary"),
        (SessionView(True, T.COMPLETED, False, 0), False, True, True, True, "admit.ok"),
        (SessionView(True, T.COMPLETED, True, 0), False, True, False, True, "admit.ok"),
        (SETTLED, True, True, False, False, "admit.run_active"),
        (SETTLED, False, False, False, False, "admit.unknown_policy"),
        # The first failing condition wins: no natural context beats an active run.
        (SessionView(False, T.ERROR, False, 0), True, False, False, False, "admit.natural_context"),
    ],
)
def test_admit_checks_the_five_conditions_in_order(
    view: SessionView, run_active: bool, policy_known: bool, resume: bool, allowed: bool, rule: str
) -> None:
    """A run is admitted only with natural context, a completed (or resumable) terminal, no other run
    and a known policy; a refusal names the first failing condition."""
    decision = admit(view, run_active=run_active, policy_known=policy_known, resume=resume)
    assert (decision.allowed, decision.rule) == (allowed, rule)


def make_run(start: int = 2, requested: int = 3, resume: bool = False) -> Run:
    return Run("r", compile_policy("default", "tick"), start, start + requested, resume_allowed=resume)


@pytest.mark.parametrize(
    ("run", "view", "rule", "nxt"),
    [
        (make_run(), SessionView(True, T.COMPLETED, False, 2), "next.ok", Next.SCHEDULE),
        (make_run(), SessionView(True, T.COMPLETED, False, 4), "next.ok", Next.SCHEDULE),
        (make_run(), SessionView(True, T.COMPLETED, False, 5), "next.target_reached", Next.COMPLETE),
        (make_run(), SessionView(True, T.COMPLETED, False, 1), "next.count_out_of_window", Next.STOP),
        (make_run(), SessionView(True, T.COMPLETED, False, 6), "next.count_out_of_window", Next.STOP),
        (make_run(), SessionView(True, T.COMPLETED, True, 3), "next.terminal_missing", Next.WAIT),
        (make_run(), SessionView(True, None, False, 2), "next.terminal_missing", Next.WAIT),
        (make_run(), SessionView(True, T.ERROR, False, 3), "next.terminal_not_completed", Next.STOP),
        (make_run(), SessionView(True, T.UNKNOWN, False, 3), "next.terminal_not_completed", Next.STOP),
        (make_run(), SessionView(True, T.INTERRUPTED, False, 2), "next.terminal_not_completed", Next.STOP),
        # The last step's terminal must be completed too: an error there stops, it does not complete.
        (make_run(), SessionView(True, T.ERROR, False, 5), "next.terminal_not_completed", Next.STOP),
        # --resume: exactly one interrupted boundary, before the first new message.
        (
            make_run(resume=True),
            SessionView(True, T.INTERRUPTED, False, 2),
            "next.resume_boundary",
            Next.SCHEDULE,
        ),
        (
            make_run(resume=True),
            SessionView(True, T.INTERRUPTED, False, 3),
            "next.terminal_not_completed",
            Next.STOP,
        ),
        (
            make_run(resume=True),
            SessionView(True, T.ERROR, False, 2),
            "next.terminal_not_completed",
            Next.STOP,
        ),
    ],
)
def test_next_step_checks_the_four_conditions_in_order(
    run: Run, view: SessionView, rule: str, nxt: Next
) -> None:
    """The next step is scheduled only inside the count window, after a durable completed terminal
    (or the one resume boundary), and only while fewer than the requested steps were observed."""
    decision = next_step(run, view)
    assert (decision.rule, decision.next, decision.allowed) == (rule, nxt, nxt is Next.SCHEDULE)
