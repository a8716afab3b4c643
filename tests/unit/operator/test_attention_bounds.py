"""The attention gate's edges, where a mutation run found no test: a busy window is half-open (busy from
its first minute, free at its end), a clarifying question is asked only when its expected value
strictly beats its cost, and a quiet-hours hold ends in the caller's timezone, whatever the machine's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tickloop.operator.attention import AttentionSettings, Window, busy_until, quiet_until, worth_clarifying

NOON = datetime(2026, 7, 7, 12, 0, tzinfo=UTC)
MEETING = Window(NOON, NOON + timedelta(hours=1))


def test_a_busy_window_holds_from_its_start_and_frees_at_its_end() -> None:
    """[start, end): the person is busy at the meeting's first instant and free the instant it ends."""
    assert busy_until(NOON, [MEETING]) == MEETING.end
    assert busy_until(MEETING.end - timedelta(microseconds=1), [MEETING]) == MEETING.end
    assert busy_until(MEETING.end, [MEETING]) is None
    assert busy_until(NOON - timedelta(microseconds=1), [MEETING]) is None


def test_overlapping_busy_windows_hold_until_the_latest_end() -> None:
    """Of every window covering now, the latest end is when the hold lifts."""
    longer = Window(NOON - timedelta(minutes=30), NOON + timedelta(hours=2))
    assert busy_until(NOON + timedelta(minutes=10), [MEETING, longer]) == longer.end


def test_a_clarifying_question_whose_value_only_equals_its_cost_is_not_asked() -> None:
    """Expected value p_resolve x 1.0 must beat the cost: equal is not enough."""
    even = AttentionSettings(clarify_p_resolve=0.5, clarify_cost=0.5)
    assert not worth_clarifying(even, top_priority=True, blocking=True, underspecified=True)
    assert worth_clarifying(
        AttentionSettings(clarify_p_resolve=0.51, clarify_cost=0.5),
        top_priority=True,
        blocking=True,
        underspecified=True,
    )


@pytest.mark.usefixtures("machine_in_new_york")
def test_a_quiet_hours_hold_ends_in_utc_on_a_machine_in_local_time() -> None:
    """The profile's quiet window (Berlin, 22-7) ends at 07:00 Berlin, given back in UTC as ``now`` is:
    never in the machine's timezone."""
    settings = AttentionSettings(timezone="Europe/Berlin")
    night = datetime(2026, 7, 7, 23, 30, tzinfo=UTC)  # 01:30 in Berlin (CEST)
    until = quiet_until(night, settings)
    assert until == datetime(2026, 7, 8, 5, 0, tzinfo=UTC)
    assert until is not None
    assert until.utcoffset() == timedelta(0)
