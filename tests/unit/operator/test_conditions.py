"""Stall-monitor conditions: detection, cooldowns, one recovery notice, and no noise from flapping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tickloop.operator.conditions import (
    Condition,
    LoopStats,
    Memory,
    MonitorSettings,
    NoticeKind,
    detect,
    step,
)

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SETTINGS = MonitorSettings()
HEALTHY = LoopStats(0, NOW - timedelta(minutes=10), True, 1, 0)


@pytest.mark.parametrize(
    ("stats", "expected"),
    [
        (HEALTHY, set()),
        (LoopStats(6, NOW, True, 1, 0), {Condition.STUCK}),
        (LoopStats(5, NOW, True, 1, 0), set()),
        (LoopStats(0, NOW - timedelta(minutes=180), True, 1, 0), {Condition.SILENT}),
        (LoopStats(0, None, True, 1, 0), set()),  # never ran: not silent (nothing to have stopped)
        (LoopStats(2, NOW, False, 1, 0), {Condition.NO_GOAL}),
        (LoopStats(1, NOW, False, 1, 0), set()),
        (LoopStats(0, NOW, True, 24, 0), {Condition.BOARD_FROZEN}),  # whatever the outcome labels say
        (LoopStats(7, NOW - timedelta(hours=5), False, 30, 0), set(Condition)),
    ],
)
def test_detect_each_condition_from_loop_statistics(stats: LoopStats, expected: set[Condition]) -> None:
    """STUCK, SILENT, NO_GOAL and BOARD_FROZEN hold exactly at their thresholds."""
    assert set(detect(stats, now=NOW, settings=SETTINGS)) == expected


def test_stuck_waiting_on_approval_is_reframed() -> None:
    """When intents wait on the person, STUCK says so instead of calling it a fault."""
    message = detect(LoopStats(8, NOW, True, 1, 2), now=NOW, settings=SETTINGS)[Condition.STUCK]
    assert message.startswith("waiting on your approval: 2 intent(s)")


def run(
    memory: Memory, held: bool, at: datetime, *, delivered: bool = True
) -> tuple[Memory, NoticeKind | None]:
    text = "it holds" if held else None
    new, notice = step(
        Condition.STUCK, memory, first_read=text, second_read=text, now=at, cooldown=timedelta(hours=6)
    )
    if notice is not None and notice.kind is NoticeKind.FIRE and delivered:
        new = Memory(new.active, new.since, last_notified_at=at)
    return new, None if notice is None else notice.kind


def test_fire_cool_down_remind_and_recover_once() -> None:
    """A condition notifies when it fires, stays quiet during its cooldown, reminds after it, and
    sends exactly one recovery notice when it clears."""
    m = Memory()
    m, kind = run(m, True, NOW)
    assert kind is NoticeKind.FIRE
    m, kind = run(m, True, NOW + timedelta(hours=1))
    assert kind is None
    m, kind = run(m, True, NOW + timedelta(hours=6))
    assert kind is NoticeKind.FIRE
    m, kind = run(m, False, NOW + timedelta(hours=7))
    assert kind is NoticeKind.RECOVERY
    m, kind = run(m, False, NOW + timedelta(hours=8))
    assert kind is None
    assert m == Memory(active=False, since=None, last_notified_at=NOW + timedelta(hours=6))


def test_undelivered_fire_is_retried_next_run_and_never_followed_by_a_recovery() -> None:
    """A failed delivery is retried on the next pass; if the condition clears first, no recovery is sent."""
    m, kind = run(Memory(), True, NOW, delivered=False)
    assert kind is NoticeKind.FIRE
    m, kind = run(m, True, NOW + timedelta(minutes=5), delivered=False)
    assert kind is NoticeKind.FIRE
    m, kind = run(m, False, NOW + timedelta(minutes=10))
    assert kind is None
    assert not m.active


def test_flapping_within_one_pass_sends_nothing() -> None:
    """A condition seen on one read of a pass but not the other changes nothing and sends nothing."""
    for first, second in (("holds", None), (None, "holds")):
        for memory in (Memory(), Memory(active=True, since=NOW, last_notified_at=NOW)):
            new, notice = step(
                Condition.SILENT, memory, first_read=first, second_read=second, now=NOW, cooldown=timedelta(0)
            )
            assert (new, notice) == (memory, None)


def test_a_new_episode_after_recovery_fires_again() -> None:
    """After a recovery, the next time the condition holds is a new episode with a new notice."""
    m, _ = run(Memory(), True, NOW)
    m, _ = run(m, False, NOW + timedelta(minutes=5))
    m, kind = run(m, True, NOW + timedelta(minutes=10))
    assert kind is NoticeKind.FIRE
    assert m.since == NOW + timedelta(minutes=10)
