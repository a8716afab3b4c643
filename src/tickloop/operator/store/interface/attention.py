"""The person's attention and what reaches them: attention budget, notifications, the
monitor's conditions and loop statistics, and the state of play."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from tickloop.operator.domain import (
    AttentionSpend,
    ConditionState,
    Notification,
    StateOfPlay,
)
from tickloop.operator.store.interface.common import EPOCH

if TYPE_CHECKING:  # the monitor's types: only loop_stats builds them, and ticks never call it
    from tickloop.operator.conditions import Flagged, LoopStats


class AttentionInterface(ABC):
    """The attention budget, notifications, the monitor's memory and the state of play."""

    @abstractmethod
    def spend_attention(
        self,
        profile: str,
        *,
        now: datetime,
        day: str,
        cap: int,
        min_gap: timedelta,
        budget: str = "unsolicited",
        reason: str = "",
    ) -> bool:
        """Spend one interruption if ``day`` has used fewer than ``cap`` and the last spend of this
        budget (on any day) is at least ``min_gap`` before ``now``. One conditional statement: True
        when spent. ``day`` is the profile-local date the caller computed (e.g. ``2026-07-07``)."""

    @abstractmethod
    def attention_spends(self, profile: str, *, since: datetime = EPOCH) -> list[AttentionSpend]:
        """Spends at or after ``since``, oldest first."""

    @abstractmethod
    def log_notification(
        self,
        profile: str,
        *,
        channel: str,
        kind: str,
        subject: str,
        now: datetime,
        body: str = "",
        intent_id: int | None = None,
    ) -> Notification:
        """Append to the notification log."""

    @abstractmethod
    def list_notifications(
        self,
        profile: str,
        *,
        since: datetime = EPOCH,
        limit: int = 100,
        channel: str | None = None,
        kind: str | None = None,
    ) -> list[Notification]:
        """Newest first; with ``channel`` and ``kind`` (given together) only that channel's kind,
        found along an index of its own (as fast with a long log of other kinds as with none)."""

    @abstractmethod
    def notifications_for_intent(
        self, profile: str, intent_id: int, *, limit: int = 100
    ) -> list[Notification]:
        """The log lines that name ``intent_id``, newest first, along an index of their own."""

    @abstractmethod
    def get_condition(self, profile: str, name: str) -> ConditionState | None:
        """The monitor's state for one condition, or None if never recorded."""

    @abstractmethod
    def put_condition(
        self,
        profile: str,
        name: str,
        *,
        active: bool,
        now: datetime,
        since: datetime | None = None,
        last_notified_at: datetime | None = None,
    ) -> ConditionState:
        """Write the monitor's state for one condition."""

    @abstractmethod
    def list_conditions(self, profiles: Sequence[str] | None = None) -> list[ConditionState]:
        """The monitor's state of every condition of ``profiles`` (None: every profile), in one
        query: the monitor reads all its memory at once, never a profile at a time."""

    @abstractmethod
    def loop_stats(
        self, profiles: Sequence[str] | None = None, *, window: int, flagged: Flagged | None = None
    ) -> dict[str, LoopStats]:
        """What the stall monitor reads about each profile of ``profiles`` (None: every profile), in
        one set-based query however many profiles there are. Every profile in scope has an entry,
        unless ``flagged`` is given: then only those with ``no_progress_streak >= min_streak``, or
        ``board_unchanged_ticks >= min_board``, or ``newest_progress_at <= silent_before``, or no
        active goal model, or an active monitor condition (a healthy fleet returns nothing).

        - ``no_progress_streak``: the newest ``fast`` rows in a row whose outcome is not in
          ``PROGRESS_OUTCOMES``, counted over at most the newest ``window`` fast rows;
        - ``newest_progress_at``: ``ended_at`` of the newest row of any kind (None: never ran);
        - ``has_active_goal``; ``waiting_approvals``: intents at ``requires_approval``;
        - ``board_unchanged_ticks``: the newest rows (any kind) in a row whose ``state_hash`` equals
          the newest row's, counted over at most the newest ``window`` rows.
        """

    @abstractmethod
    def record_monitor_pass(self, profiles: Sequence[str] | None, *, now: datetime) -> None:
        """Remember that the stall monitor finished a pass over ``profiles`` (None: every profile) at
        ``now``: a clean pass records no condition, and the dashboard must not take it for none."""

    @abstractmethod
    def last_monitor_pass(self, profile: str) -> datetime | None:
        """When the monitor last finished a pass that covered ``profile``, or None: never."""

    @abstractmethod
    def add_state_of_play(self, profile: str, text: str, *, now: datetime) -> StateOfPlay:
        """Write a state-of-play summary."""

    @abstractmethod
    def latest_state_of_play(self, profile: str) -> StateOfPlay | None:
        """The newest summary, or None."""
