"""The stall monitor's conditions, decided purely from loop statistics and the monitor's memory.

The monitor is a separate program on its own timer: an in-tick check can catch a loop that runs
without progressing, never a loop that stopped running. Each pass reads the statistics twice; a
condition changes state only when both reads agree, so one that fires and clears within a pass
sends nothing. Per condition: one notice when it fires, a reminder after its cooldown while it holds,
and exactly one recovery notice when it clears, only if its firing notice was delivered.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Annotated

import msgspec

from tickloop.operator.ping import check_ping_url


class Condition(StrEnum):
    """What the monitor watches for."""

    STUCK = "stuck"  #: the no-progress streak reached its threshold
    SILENT = "silent"  #: progress rows exist, but the newest is too old: the loop may be down
    NO_GOAL = "no_goal"  #: the streak is climbing and there is no active goal model
    BOARD_FROZEN = "board_frozen"  #: the board hash has not changed for a long run of ticks


_MINUTES = Annotated[int, msgspec.Meta(ge=1, le=7 * 24 * 60)]


class MonitorSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """Thresholds and per-condition cooldowns."""

    #: consecutive fast ticks without progress before STUCK
    stuck_streak: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 6
    #: minutes since the newest progress row before SILENT
    silent_minutes: _MINUTES = 180
    #: ticks with an unchanged board hash before BOARD_FROZEN (a longer run than stuck)
    board_frozen_ticks: Annotated[int, msgspec.Meta(ge=2, le=10_000)] = 24
    #: minutes between reminders while a condition holds
    stuck_cooldown_min: _MINUTES = 360
    silent_cooldown_min: _MINUTES = 180
    no_goal_cooldown_min: _MINUTES = 1440
    board_frozen_cooldown_min: _MINUTES = 720
    #: minutes to back off after the monitor itself failed
    error_backoff_min: _MINUTES = 30
    #: healthchecks-style heartbeat: each run POSTs ``URL/start``, then ``URL`` or ``URL/fail``;
    #: empty: no pings. Global only (a per-profile value is ignored)
    ping_url: str = ""
    #: seconds each ping may take; a failed ping is logged and never fails the monitor
    ping_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=30)] = 5.0

    def __post_init__(self) -> None:
        check_ping_url(self.ping_url, where="monitor.pingUrl")

    def cooldown(self, condition: Condition) -> timedelta:
        return timedelta(minutes=getattr(self, f"{condition.value}_cooldown_min"))


class LoopStats(msgspec.Struct, frozen=True):
    """What the monitor reads about one profile, independently of the loop."""

    no_progress_streak: int  #: newest fast ticks in a row without a progress outcome
    newest_progress_at: datetime | None  #: None: the loop never ran
    has_active_goal: bool
    board_unchanged_ticks: int  #: newest ticks in a row that saw the same board hash
    waiting_approvals: int  #: intents waiting on the person


class Flagged(msgspec.Struct, frozen=True):
    """A conservative pre-filter the store applies to ``loop_stats``: only profiles where some
    condition could hold (or whose memory has an active one) come back. Built by ``flagged_filter``."""

    min_streak: int  #: the smallest stuck threshold in use
    min_board: int  #: the smallest board-frozen threshold in use
    silent_before: datetime  #: newest rows at or before this may be silent
    # NO_GOAL needs no field: every profile without an active goal model is flagged.


def flagged_filter(settings: Iterable[MonitorSettings], *, now: datetime) -> Flagged:
    """The filter that lets through every profile any of ``settings`` could report."""
    chosen = list(settings)
    return Flagged(
        min_streak=min(s.stuck_streak for s in chosen),
        min_board=min(s.board_frozen_ticks for s in chosen),
        silent_before=now - timedelta(minutes=min(s.silent_minutes for s in chosen)),
    )


def detect(stats: LoopStats, *, now: datetime, settings: MonitorSettings) -> dict[Condition, str]:
    """The conditions that hold now, each with the message the person would get."""
    found: dict[Condition, str] = {}
    if stats.no_progress_streak >= settings.stuck_streak:
        if stats.waiting_approvals:
            found[Condition.STUCK] = (
                f"waiting on your approval: {stats.waiting_approvals} intent(s) need a decision "
                f"({stats.no_progress_streak} ticks without progress)"
            )
        else:
            found[Condition.STUCK] = f"stuck: {stats.no_progress_streak} ticks in a row without progress"
    age = None if stats.newest_progress_at is None else now - stats.newest_progress_at
    if age is not None and age >= timedelta(minutes=settings.silent_minutes):
        found[Condition.SILENT] = (
            f"silent: no tick has recorded progress for {int(age.total_seconds() // 60)} min"
        )
    if stats.no_progress_streak >= 2 and not stats.has_active_goal:
        found[Condition.NO_GOAL] = "no active goal model: onboarding never finished (tickloop operator init)"
    if stats.board_unchanged_ticks >= settings.board_frozen_ticks:
        found[Condition.BOARD_FROZEN] = f"board frozen: unchanged for {stats.board_unchanged_ticks} ticks"
    return found


class Memory(msgspec.Struct, frozen=True):
    """The monitor's memory of one condition (what the store keeps)."""

    active: bool = False
    since: datetime | None = None
    last_notified_at: datetime | None = None  #: set only when a firing notice was delivered

    @property
    def fire_delivered(self) -> bool:
        """The current episode's firing notice reached the person."""
        return (
            self.active
            and self.since is not None
            and self.last_notified_at is not None
            and self.last_notified_at >= self.since
        )


class NoticeKind(StrEnum):
    """The two notices a condition can send."""

    FIRE = "fire"  #: the condition holds (first time, a retry, or a reminder after cooldown)
    RECOVERY = "recovery"  #: it cleared (sent once, only after a delivered fire)


class Notice(msgspec.Struct, frozen=True):
    """A notice to send for one condition."""

    condition: Condition
    kind: NoticeKind
    text: str


def step(
    condition: Condition,
    memory: Memory,
    *,
    first_read: str | None,
    second_read: str | None,
    now: datetime,
    cooldown: timedelta,
) -> tuple[Memory, Notice | None]:
    """Advance one condition by one pass. ``*_read`` is the message if it held on that read, else None.

    Returns the new memory (``last_notified_at`` is the caller's to set once a FIRE is delivered)
    and the notice to send, if any.
    """
    if (first_read is None) != (second_read is None):
        return memory, None  # flapped within the pass: no state change, nothing sent
    if second_read is not None:
        current = Memory(
            active=True,
            since=memory.since if memory.active else now,
            last_notified_at=memory.last_notified_at,
        )
        reminder_due = memory.last_notified_at is not None and now - memory.last_notified_at >= cooldown
        due = not current.fire_delivered or reminder_due
        return current, (Notice(condition, NoticeKind.FIRE, second_read) if due else None)
    if not memory.active:
        return memory, None
    cleared = Memory(active=False, since=None, last_notified_at=memory.last_notified_at)
    text = f"recovered: {condition.value.replace('_', ' ')} has cleared"
    return cleared, (Notice(condition, NoticeKind.RECOVERY, text) if memory.fire_delivered else None)
