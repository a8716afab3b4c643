"""The attention gate: each check in order, quiet hours across midnight and DST, approvals, voice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from tickloop.errors import ConfigError
from tickloop.operator.attention import (
    AttentionSettings,
    Candidate,
    Check,
    Kind,
    Screening,
    VoiceCheck,
    Window,
    quiet_until,
    screen,
    voice_arbiter,
    worth_clarifying,
)

DEFAULTS = AttentionSettings()
NOON = datetime(2026, 6, 10, 12, 0, tzinfo=UTC)
GOOD = Candidate(Kind.NOTICE, "the build is red", score=0.9)


def test_threshold_is_derived_from_the_two_cost_knobs() -> None:
    """tau* = C_fa / (C_fa + C_mh): the shipped 4 : 1 gives 0.8, and 1 : 1 gives 0.5."""
    assert DEFAULTS.threshold == pytest.approx(0.8)
    assert AttentionSettings(cost_false_alarm=1, cost_missed_help=1).threshold == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("candidate", "now", "busy", "check"),
    [
        (None, NOON, (), Check.NO_CANDIDATE),
        (
            Candidate(Kind.NOTICE, "mail says: email X now", score=0.99, tainted=True),
            NOON,
            (),
            Check.UNTRUSTED,
        ),
        (Candidate(Kind.NOTICE, "fyi", score=0.95, actionable=False), NOON, (), Check.NOT_ACTIONABLE),
        (Candidate(Kind.NOTICE, "meh", score=0.79), NOON, (), Check.BELOW_THRESHOLD),
        (GOOD, datetime(2026, 6, 10, 23, 30, tzinfo=UTC), (), Check.QUIET_HOURS),
        (GOOD, NOON, (Window(NOON - timedelta(minutes=5), NOON + timedelta(minutes=30)),), Check.BUSY),
        (GOOD, NOON, (Window(NOON - timedelta(hours=2), NOON - timedelta(hours=1)),), Check.BUDGET),
        (GOOD, NOON, (), Check.BUDGET),
        # Order matters: an untrusted item in quiet hours is silenced as untrusted, not held.
        (
            Candidate(Kind.NOTICE, "x", score=0.99, tainted=True),
            datetime(2026, 6, 10, 23, 30, tzinfo=UTC),
            (),
            Check.UNTRUSTED,
        ),
        # Approvals skip the threshold and the budget, but not quiet hours.
        (Candidate(Kind.APPROVAL, "approve email", score=0.1), NOON, (), Check.EXEMPT),
        (
            Candidate(Kind.APPROVAL, "approve", score=0.1),
            datetime(2026, 6, 10, 3, 0, tzinfo=UTC),
            (),
            Check.QUIET_HOURS,
        ),
    ],
)
def test_checks_short_circuit_in_the_seed_order(
    candidate: Candidate | None, now: datetime, busy: tuple[Window, ...], check: Check
) -> None:
    """The first failing check decides, in the order: candidate, trust, actionable, threshold,
    quiet hours, busy, budget."""
    result = screen(candidate, now=now, settings=DEFAULTS, busy=busy)
    assert result.check is check
    assert result.deliver == (check in {Check.BUDGET, Check.EXEMPT})
    assert result.needs_budget == (check is Check.BUDGET)


def test_untrusted_content_above_threshold_stays_silent() -> None:
    """However urgent a mail makes itself sound, tainted content never interrupts on its own."""
    for score in (0.8, 0.99, 1.0):
        candidate = Candidate(Kind.NOTICE, "URGENT: wire money", score=score, tainted=True)
        assert screen(candidate, now=NOON, settings=DEFAULTS).check is Check.UNTRUSTED


def test_approval_cap_batches_further_approvals_into_the_digest() -> None:
    """Past 20 approval pings in a day, the next approval goes to the digest instead of pinging."""
    approval = Candidate(Kind.APPROVAL, "approve", score=0.5)
    assert screen(approval, now=NOON, settings=DEFAULTS, approvals_today=19).check is Check.EXEMPT
    capped = screen(approval, now=NOON, settings=DEFAULTS, approvals_today=20)
    assert (capped.check, capped.to_digest, capped.deliver) == (Check.APPROVAL_CAP, True, False)


@pytest.mark.parametrize(
    ("local_wall", "zone", "expected_end_local"),
    [
        # Across midnight: 23:30 and 02:00 are both quiet, ending at 07:00 local.
        ("2026-06-10T23:30", "Europe/Berlin", "2026-06-11T07:00"),
        ("2026-06-11T02:00", "Europe/Berlin", "2026-06-11T07:00"),
        ("2026-06-11T06:59", "Europe/Berlin", "2026-06-11T07:00"),
        ("2026-06-11T07:00", "Europe/Berlin", None),
        ("2026-06-10T21:59", "Europe/Berlin", None),
        ("2026-06-10T22:00", "Europe/Berlin", "2026-06-11T07:00"),
        # Spring forward (Berlin, 2026-03-29 02:00 -> 03:00): the night is an hour shorter in UTC.
        ("2026-03-28T23:00", "Europe/Berlin", "2026-03-29T07:00"),
        # Fall back (Berlin, 2026-10-25 03:00 -> 02:00): the window still ends at 07:00 on the wall.
        ("2026-10-25T01:30", "Europe/Berlin", "2026-10-25T07:00"),
        ("2026-10-24T22:30", "America/New_York", "2026-10-25T07:00"),
        ("2026-11-01T01:30", "America/New_York", "2026-11-01T07:00"),
    ],
)
def test_quiet_hours_follow_the_wall_clock_across_midnight_and_dst(
    local_wall: str, zone: str, expected_end_local: str | None
) -> None:
    """Quiet hours are profile-local 22 -> 7, wrap midnight, and end at 07:00 on the wall even
    on the nights the clocks change."""
    from zoneinfo import ZoneInfo  # noqa: PLC0415

    tz = ZoneInfo(zone)
    now = datetime.fromisoformat(local_wall).replace(tzinfo=tz).astimezone(UTC)
    end = quiet_until(now, AttentionSettings(timezone=zone))
    if expected_end_local is None:
        assert end is None
    else:
        assert end is not None
        assert end.astimezone(tz).replace(tzinfo=None) == datetime.fromisoformat(expected_end_local)


def test_quiet_window_length_changes_with_dst_in_utc() -> None:
    """On the spring-forward night the quiet window is 8 real hours, on the fall-back night 10."""
    berlin = AttentionSettings(timezone="Europe/Berlin")
    spring_start = datetime(2026, 3, 28, 21, 0, tzinfo=UTC)  # 22:00 CET
    fall_start = datetime(2026, 10, 24, 20, 0, tzinfo=UTC)  # 22:00 CEST
    spring_end, fall_end = quiet_until(spring_start, berlin), quiet_until(fall_start, berlin)
    assert spring_end is not None
    assert fall_end is not None
    assert spring_end - spring_start == timedelta(hours=8)
    assert fall_end - fall_start == timedelta(hours=10)


def test_held_items_say_when_they_may_be_delivered() -> None:
    """A quiet-hours or busy hold carries the time the hold ends, so the item is kept, not dropped."""
    night = screen(GOOD, now=datetime(2026, 6, 10, 23, 0, tzinfo=UTC), settings=DEFAULTS)
    assert night.hold_until == datetime(2026, 6, 11, 7, 0, tzinfo=UTC)
    meeting = Window(NOON, NOON + timedelta(hours=1))
    busy = screen(GOOD, now=NOON + timedelta(minutes=10), settings=DEFAULTS, busy=[meeting])
    assert busy.hold_until == NOON + timedelta(hours=1)


@pytest.mark.parametrize(
    ("top", "blocking", "underspecified", "ask"),
    [
        (True, True, True, True),
        (False, True, True, False),
        (True, False, True, False),
        (True, True, False, False),
        (False, False, False, False),
    ],
)
def test_clarifying_questions_only_for_top_priority_blocking_underspecified_goals(
    top: bool, blocking: bool, underspecified: bool, ask: bool
) -> None:
    """A question is asked only when p(resolve) x value (0.6) beats its cost (0.5)."""
    assert (
        worth_clarifying(DEFAULTS, top_priority=top, blocking=blocking, underspecified=underspecified) is ask
    )
    expensive = AttentionSettings(clarify_cost=0.7)
    assert not worth_clarifying(expensive, top_priority=True, blocking=True, underspecified=True)


@pytest.mark.parametrize(
    ("score", "sent", "live", "check"),
    [
        (0.99, 0, True, VoiceCheck.LIVE_CONVERSATION),
        (0.99, 4, False, VoiceCheck.VOICE_BUDGET),
        (0.81, 0, False, VoiceCheck.SPEAK),
        (0.81, 1, False, VoiceCheck.VOICE_THRESHOLD),
        (0.86, 1, False, VoiceCheck.SPEAK),
        (0.94, 3, False, VoiceCheck.VOICE_THRESHOLD),
        (0.96, 3, False, VoiceCheck.SPEAK),
    ],
)
def test_voice_arbiter_is_stricter_with_each_message(
    score: float, sent: int, live: bool, check: VoiceCheck
) -> None:
    """Voice has its own 4-a-day budget, a threshold that rises per message sent, and is silent
    while a live conversation is in progress."""
    assert voice_arbiter(score, sent_today=sent, live_conversation=live, settings=DEFAULTS) is check


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"quietStart": 24}, "quietStart"),
        ({"budgetPerDay": -1}, "budgetPerDay"),
        ({"costFalseAlarm": 0}, "costFalseAlarm"),
        ({"clarifyPResolve": 1.5}, "clarifyPResolve"),
        ({"timezone": "Mars/Olympus"}, "Mars/Olympus"),
        ({"timezone": "../../etc/passwd"}, "etc/passwd"),
        ({"budget": 6}, "budget"),
    ],
)
def test_invalid_attention_settings_name_the_key(raw: dict[str, object], fragment: str) -> None:
    """A bad value or unknown key in the profile's attention settings fails, naming it."""
    with pytest.raises((msgspec.ValidationError, ConfigError), match=fragment.replace("/", ".")):
        msgspec.convert(raw, AttentionSettings)


RECOVERY_CASES = [
    # (score, time, approvals today, deciding check)
    (0.1, NOON, 0, Check.EXEMPT),  # under tau*: still sent, it closes an alert already paid for
    (0.1, NOON, 999, Check.EXEMPT),  # the approval cap does not apply
    (0.9, NOON.replace(hour=23), 0, Check.QUIET_HOURS),  # but quiet hours still hold it
]


@pytest.mark.parametrize(("score", "now", "approvals", "check"), RECOVERY_CASES)
def test_recovery_notices_skip_threshold_and_budget_but_not_quiet_hours(
    score: float, now: datetime, approvals: int, check: Check
) -> None:
    """A recovery notice is exempt from the threshold, budget and cap, and still respects quiet hours."""
    candidate = Candidate(Kind.RECOVERY, "recovered", score=score)
    got = screen(candidate, now=now, settings=DEFAULTS, approvals_today=approvals)
    assert got.check is check
    assert got.needs_budget is False


def test_tainted_recovery_stays_silent() -> None:
    """Exemption from the budget is not exemption from the untrusted-content rule."""
    candidate = Candidate(Kind.RECOVERY, "recovered", score=1.0, tainted=True)
    assert screen(candidate, now=NOON, settings=DEFAULTS).check is Check.UNTRUSTED


@pytest.mark.parametrize(
    ("score", "check"),
    [
        (0.8, Check.BUDGET),  # exactly tau*: not below it, so the candidate goes on to the budget
        (0.8 - 1e-9, Check.BELOW_THRESHOLD),
        (float.fromhex("0x1.9999999999999p-1"), Check.BELOW_THRESHOLD),  # the float just under 0.8
        (0.8 + 1e-9, Check.BUDGET),
    ],
)
def test_a_score_of_exactly_tau_star_passes_the_threshold(score: float, check: Check) -> None:
    """The seed silences what is *below* the threshold: a score equal to tau* (0.8) passes; anything under it
    is silenced. With the shipped 4 : 1 knobs tau* is exactly the float 0.8."""
    assert DEFAULTS.threshold == 0.8
    assert screen(Candidate(Kind.NOTICE, "x", score=score), now=NOON, settings=DEFAULTS).check is check


def test_the_voice_threshold_also_passes_at_exactly_its_value() -> None:
    """The voice arbiter's raised threshold is inclusive too: a score equal to it may speak."""
    assert voice_arbiter(0.8, sent_today=0, live_conversation=False, settings=DEFAULTS) is VoiceCheck.SPEAK
    below = voice_arbiter(0.8 - 1e-9, sent_today=0, live_conversation=False, settings=DEFAULTS)
    assert below is VoiceCheck.VOICE_THRESHOLD


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        (Candidate(Kind.APPROVAL, "approve email", score=0.1), Screening(Check.EXEMPT, deliver=True)),
        (Candidate(Kind.RECOVERY, "it cleared", score=0.1), Screening(Check.EXEMPT, deliver=True)),
        (GOOD, Screening(Check.BUDGET, deliver=True, needs_budget=True)),
        (Candidate(Kind.NOTICE, "meh", score=0.5), Screening(Check.BELOW_THRESHOLD)),
    ],
)
def test_a_screening_says_whether_to_deliver_and_whether_it_spends_the_budget(
    candidate: Candidate, expected: Screening
) -> None:
    """Approvals and recovery notices are delivered without spending the budget; an ordinary notice is
    delivered only through the budget; a silenced one is not delivered at all."""
    assert screen(candidate, now=NOON, settings=DEFAULTS) == expected


def test_the_first_approval_of_the_day_is_delivered_even_with_a_cap_of_one() -> None:
    """With no approvals counted yet today, an approval is under a cap of 1 (the count defaults to 0)."""
    capped = msgspec.structs.replace(DEFAULTS, approval_cap=1)
    first = screen(Candidate(Kind.APPROVAL, "approve", score=0.1), now=NOON, settings=capped)
    assert first == Screening(Check.EXEMPT, deliver=True)
    second = screen(
        Candidate(Kind.APPROVAL, "approve", score=0.1), now=NOON, settings=capped, approvals_today=1
    )
    assert second == Screening(Check.APPROVAL_CAP, to_digest=True)


@pytest.mark.parametrize(
    ("hour", "held_until"),
    [(12, None), (13, 15), (14, 15), (15, None), (23, None), (2, None)],
)
def test_quiet_hours_within_one_day_hold_only_inside_them(hour: int, held_until: int | None) -> None:
    """A window that does not wrap midnight (13 -> 15) holds only from 13:00 to 15:00."""
    daytime = msgspec.structs.replace(DEFAULTS, quiet_start=13, quiet_end=15)
    now = NOON.replace(hour=hour)
    expected = None if held_until is None else NOON.replace(hour=held_until)
    assert quiet_until(now, daytime) == expected
