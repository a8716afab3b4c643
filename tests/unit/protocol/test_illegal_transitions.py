"""A record the transition table does not allow: its rule and words, and how the run carries on.

``test_verify_table.py`` shows which (phase, record) pairs are refused and on which line. A mutation
run of ``protocol/transitions.py`` found the rule of a refused pair free to change (``loop_complete``
after a cancel could report ``None``), and the machine's resync after a refused record unpinned: the
run takes the refused record's own phase and step, so one wrong record is one violation, not a
cascade, and an enqueue is counted even when it was out of order.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_verify_table import ALLOWED, ARMED, NEXT, PREFIXES, R, build, rec

from tickloop.protocol.verify import verify

#: The rule of a record arriving in a phase that does not allow it.
RULE_OF = {
    "tick_scheduled": "verify.schedule_out_of_order",
    "tick_enqueued": "verify.enqueue_without_schedule",
    "tick_terminal": "verify.terminal_out_of_order",
    "tick_cancelled_before_enqueue": "verify.cancel_out_of_order",
    "loop_complete": "verify.complete_short",
}
#: Refused pairs whose violation comes from a guard, not the table (pinned in test_transition_messages).
GUARDED = {("ended", "loop_complete"), ("ended_last", "tick_scheduled"), ("cancelled", "loop_stopped")}
REFUSED = sorted(
    (phase, kind)
    for phase in PREFIXES
    for kind in NEXT
    if (phase, kind) not in ALLOWED and (phase, kind) not in GUARDED and phase != "closed"
)
S1 = rec(R.TICK_SCHEDULED, step=1, rule="next.ok")
E1 = rec(R.TICK_ENQUEUED, step=1)
T1 = rec(R.TICK_TERMINAL, step=1, status="completed")
DONE = [ARMED, S1, E1, T1]  #: step 1 of 2 ended


def _said(items: list[dict[str, Any]]) -> list[tuple[int, str, str]]:
    return [(v.line, v.rule, v.message) for v in verify(build(items)).violations]


@pytest.mark.parametrize(("phase", "kind"), REFUSED)
def test_a_refused_record_names_its_rule_its_type_and_the_phase(phase: str, kind: str) -> None:
    items = [*PREFIXES[phase], NEXT[kind]]
    rule = "verify.enqueue_after_cancel" if (phase, kind) == ("cancelled", "tick_enqueued") else RULE_OF[kind]
    shown = phase.removesuffix("_last")
    assert _said(items) == [(len(items), rule, f"{NEXT[kind]['kind']} is not allowed while run r is {shown}")]


@pytest.mark.parametrize("kind", sorted(NEXT))
def test_any_record_after_the_close_is_refused_as_such(kind: str) -> None:
    items = [*PREFIXES["closed"], NEXT[kind]]
    what = NEXT[kind]["kind"]
    assert _said(items) == [(len(items), "verify.record_after_close", f"{what} after run r closed")]


def test_a_step_enqueued_without_its_schedule_is_counted_and_the_run_goes_on_from_it() -> None:
    """Step 2 enqueued with no schedule: one violation; its terminal and the run's end then verify."""
    items = [
        *DONE,
        rec(R.TICK_ENQUEUED, step=2),
        rec(R.TICK_TERMINAL, step=2, status="completed"),
        rec(R.LOOP_COMPLETE, rule="next.target_reached"),
    ]
    report = verify(build(items))
    assert [(v.line, v.rule) for v in report.violations] == [(5, "verify.enqueue_without_schedule")]
    assert report.enqueued == 2


def test_a_refused_enqueue_whose_step_is_not_an_integer_is_not_counted() -> None:
    report = verify(build([*DONE, rec(R.TICK_ENQUEUED, step="2")]))
    assert [(v.line, v.rule) for v in report.violations] == [(5, "verify.enqueue_without_schedule")]
    assert report.enqueued == 1


def test_a_schedule_while_a_step_is_enqueued_moves_the_run_to_that_step() -> None:
    items = [
        ARMED,
        S1,
        E1,
        rec(R.TICK_SCHEDULED, step=2, rule="next.ok"),
        rec(R.TICK_ENQUEUED, step=2),
        rec(R.TICK_TERMINAL, step=2, status="completed"),
        rec(R.LOOP_COMPLETE, rule="next.target_reached"),
    ]
    assert [(v.line, v.rule) for v in verify(build(items)).violations] == [
        (4, "verify.schedule_out_of_order")
    ]


def test_a_refused_cancel_still_sets_the_rule_its_stop_must_repeat() -> None:
    """A cancel after a terminal is refused, yet the run is then cancelled by its rule."""
    cancel = rec(R.TICK_CANCELLED, step=1, rule="cancel.person_message")
    repeated = [*DONE, cancel, rec(R.LOOP_STOPPED, rule="cancel.person_message")]
    assert [(v.line, v.rule) for v in verify(build(repeated)).violations] == [
        (5, "verify.cancel_out_of_order")
    ]
    other = [*DONE, cancel, rec(R.LOOP_STOPPED, rule="cancel.state_changed")]
    assert [(v.line, v.rule) for v in verify(build(other)).violations] == [
        (5, "verify.cancel_out_of_order"),
        (6, "verify.stop_rule_mismatch"),
    ]
