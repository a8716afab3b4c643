"""The person's attention and what reaches them: attention budget, notifications, the
monitor's conditions and loop statistics, and the state of play."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from tickloop.operator.domain import AttentionSpend, ConditionState, Notification, StateOfPlay
from tickloop.operator.store import _rows as rows
from tickloop.operator.store._rows import dumps
from tickloop.operator.store.base import EPOCH
from tickloop.operator.store.sqlops.base import SqlBase

if TYPE_CHECKING:  # the monitor's types: only loop_stats builds them, and ticks never call it
    from tickloop.operator.conditions import Flagged, LoopStats


class AttentionOps(SqlBase):
    """Attention, notifications, conditions, loop statistics, state of play."""

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
        with self._write() as tx:
            tx.run("ensure_budget", profile=profile, budget=budget)
            spent = tx.run(
                "spend_attention",
                profile=profile,
                budget=budget,
                day=day,
                cap=cap,
                now=now,
                gap_cutoff=now - min_gap,
            )
            if spent == 1:
                tx.rows("log_spend", profile=profile, budget=budget, reason=reason, now=now)
        return spent == 1

    def attention_spends(self, profile: str, *, since: datetime = EPOCH) -> list[AttentionSpend]:
        with self._read() as tx:
            return [rows.spend(r) for r in tx.rows("attention_spends", profile=profile, since=since)]

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
        with self._write_one() as tx:
            row = tx.one(
                "log_notification",
                profile=profile,
                channel=channel,
                kind=kind,
                subject=subject,
                body=body,
                intent_id=intent_id,
                now=now,
            )
        assert row is not None
        return rows.notification(row)

    def list_notifications(
        self,
        profile: str,
        *,
        since: datetime = EPOCH,
        limit: int = 100,
        channel: str | None = None,
        kind: str | None = None,
    ) -> list[Notification]:
        if (channel is None) != (kind is None):
            raise ValueError("list_notifications: give channel and kind together, or neither")
        with self._read() as tx:
            if channel is None:
                found = tx.rows("list_notifications", profile=profile, since=since, limit=limit)
            else:
                found = tx.rows(
                    "list_notifications_kind",
                    profile=profile,
                    channel=channel,
                    kind=kind,
                    since=since,
                    limit=limit,
                )
        return [rows.notification(r) for r in found]

    def notifications_for_intent(
        self, profile: str, intent_id: int, *, limit: int = 100
    ) -> list[Notification]:
        with self._read() as tx:
            found = tx.rows("notifications_for_intent", profile=profile, intent_id=intent_id, limit=limit)
        return [rows.notification(r) for r in found]

    def get_condition(self, profile: str, name: str) -> ConditionState | None:
        with self._read() as tx:
            row = tx.one("get_condition", profile=profile, name=name)
        return None if row is None else rows.condition(row)

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
        with self._write_one() as tx:
            row = tx.one(
                "put_condition",
                profile=profile,
                name=name,
                active=active,
                since=since,
                last_notified_at=last_notified_at,
                now=now,
            )
        assert row is not None
        return rows.condition(row)

    def list_conditions(self, profiles: Sequence[str] | None = None) -> list[ConditionState]:
        with self._read() as tx:
            found = tx.rows("list_conditions", profiles=_names(profiles))
        return [rows.condition(r) for r in found]

    def loop_stats(
        self, profiles: Sequence[str] | None = None, *, window: int, flagged: Flagged | None = None
    ) -> dict[str, LoopStats]:
        limits: dict[str, Any] = {"min_streak": 0, "min_board": 0, "silent_before": None}
        if flagged is not None:
            limits = {
                "min_streak": flagged.min_streak,
                "min_board": flagged.min_board,
                "silent_before": flagged.silent_before,
            }
        from tickloop.operator.conditions import LoopStats  # noqa: PLC0415

        with self._read() as tx:
            if profiles is None:
                found = tx.rows("loop_stats_all", window=window, **limits)
            else:
                found = tx.rows("loop_stats", profiles=_names(profiles), window=window, **limits)
        return {
            r["profile"]: LoopStats(
                no_progress_streak=int(r["no_progress_streak"]),
                newest_progress_at=_moment(r["newest_at"]),
                has_active_goal=bool(r["has_active_goal"]),
                board_unchanged_ticks=int(r["board_unchanged_ticks"]),
                waiting_approvals=int(r["waiting_approvals"]),
            )
            for r in found
        }

    def record_monitor_pass(self, profiles: Sequence[str] | None, *, now: datetime) -> None:
        scopes = [""] if profiles is None else sorted(set(profiles))
        with self._write() as tx:
            for scope in scopes:
                tx.run("record_monitor_pass", scope=scope, now=now)

    def last_monitor_pass(self, profile: str) -> datetime | None:
        with self._read() as tx:
            row = tx.one("last_monitor_pass", profile=profile)
        return None if row is None else rows.ts_or_none(row["ran_at"])

    def add_state_of_play(self, profile: str, text: str, *, now: datetime) -> StateOfPlay:
        with self._write_one() as tx:
            row = tx.one("add_state_of_play", profile=profile, text=text, now=now)
        assert row is not None
        return rows.state_of_play(row)

    def latest_state_of_play(self, profile: str) -> StateOfPlay | None:
        with self._read() as tx:
            row = tx.one("latest_state_of_play", profile=profile)
        return None if row is None else rows.state_of_play(row)


def _moment(value: object) -> datetime | None:
    """A time from an aggregate: SQLite's stored text, or PostgreSQL's epoch seconds (converting
    10,000 server-zone datetimes costs more than the query)."""
    if value is None:
        return None
    if isinstance(value, str):
        return rows.ts(value)
    return datetime.fromtimestamp(float(value), UTC)  # type: ignore[arg-type]


def _names(profiles: Sequence[str] | None) -> str | None:
    """A set of profile names as one JSON-array parameter (None: every profile)."""
    return None if profiles is None else dumps("profiles", sorted(set(profiles)))
