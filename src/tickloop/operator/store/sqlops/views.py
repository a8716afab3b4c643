"""The dashboard's reads: true counts, lists that page through every row, an intent's recorded inputs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import msgspec

from tickloop.operator.domain import (
    AttentionSpend,
    ConditionState,
    GoalModel,
    Intent,
    IntentStatus,
    Observation,
    PlanStep,
    Profile,
    ProgressRow,
)
from tickloop.operator.store import _rows as rows
from tickloop.operator.store.sqlops.base import SqlBase

#: above every id: "before the newest"
NEWEST = 2**63 - 1


def like(word: str) -> str:
    """A lowercase LIKE pattern for a title containing ``word`` (``%``, ``_`` and ``\\`` literal)."""
    escaped = word.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class OverviewSnapshot(msgspec.Struct, frozen=True):
    """What the dashboard's overview reads, all at once."""

    profile: Profile
    goal: GoalModel | None
    step: PlanStep | None
    last: dict[str, ProgressRow | None]  #: tick kind -> its newest row
    waiting: list[Intent]  #: the newest waiting, newest first
    waiting_count: int
    conditions: list[ConditionState]
    spends: list[AttentionSpend]  #: since the ``since`` asked for
    monitor_ran_at: datetime | None = None  #: the monitor's last pass over this profile (None: never)


class ViewOps(SqlBase):
    """Reads that serve the person's pages (``tickloop web``); nothing here writes."""

    def count_intents(self, profile: str, *, status: IntentStatus | None = None) -> int:
        with self._read() as tx:
            if status is None:
                row = tx.one("count_intents", profile=profile)
            else:
                row = tx.one("count_intents_by_status", profile=profile, status=status)
        return int(row["n"]) if row is not None else 0

    def intent_mark(self, profile: str, status: IntentStatus) -> tuple[int, int]:
        with self._read() as tx:
            row = tx.one("count_intents_by_status", profile=profile, status=status)
        return (int(row["n"]), int(row["newest"])) if row is not None else (0, 0)

    def intents_oldest(
        self, profile: str, *, status: IntentStatus, after: int = 0, limit: int = 20
    ) -> list[Intent]:
        with self._read() as tx:
            found = tx.rows(
                "intents_oldest_by_status", profile=profile, status=status, after=after, limit=limit
            )
        return [rows.intent(r) for r in found]

    def search_intents(
        self,
        profile: str,
        *,
        status: IntentStatus | None = None,
        action_type: str = "",
        words: Sequence[str] = (),
        before: int | None = None,
        limit: int = 200,
    ) -> list[Intent]:
        patterns = [like(w) for w in words[:3]] + ["%"] * (3 - len(words[:3]))
        params = {
            "profile": profile,
            "action_type": action_type,
            "before": NEWEST if before is None else before,
            "limit": limit,
            "p1": patterns[0],
            "p2": patterns[1],
            "p3": patterns[2],
        }
        with self._read() as tx:
            if status is None:
                found = tx.rows("search_intents", **params)
            else:
                found = tx.rows("search_intents_by_status", status=status, **params)
        return [rows.intent(r) for r in found]

    def progress_filtered(
        self, profile: str, *, tick_kind: str = "", outcome: str = "", limit: int = 200
    ) -> list[ProgressRow]:
        if not outcome:
            return self.recent_progress(profile, limit=limit, tick_kind=tick_kind or None)
        with self._read() as tx:
            if tick_kind:
                found = tx.rows(
                    "progress_by_kind_outcome",
                    profile=profile,
                    tick_kind=tick_kind,
                    outcome=outcome,
                    limit=limit,
                )
            else:
                found = tx.rows("progress_by_outcome", profile=profile, outcome=outcome, limit=limit)
        return [rows.progress(r) for r in found]

    def overview_snapshot(
        self, profile: str, *, kinds: Sequence[str], waiting: int, since: datetime
    ) -> OverviewSnapshot:
        """The overview's reads one by one (PostgreSQL overrides this with one statement)."""
        goal = self.active_goal_model(profile)
        return OverviewSnapshot(
            profile=self.get_profile(profile),
            goal=goal,
            step=self.current_plan_step(profile, goal.version) if goal else None,
            last={k: next(iter(self.recent_progress(profile, limit=1, tick_kind=k)), None) for k in kinds},
            waiting=self.list_intents(profile, status=IntentStatus.REQUIRES_APPROVAL, limit=waiting),
            waiting_count=self.count_intents(profile, status=IntentStatus.REQUIRES_APPROVAL),
            conditions=self.list_conditions([profile]),
            spends=self.attention_spends(profile, since=since),
            monitor_ran_at=self.last_monitor_pass(profile),
        )

    def observations_by_id(self, profile: str, ids: Sequence[int]) -> list[Observation]:
        if not ids:
            return []
        import json  # noqa: PLC0415  (an observe tick that finds nothing never loads json)

        with self._read() as tx:
            found = tx.rows("observations_by_id", profile=profile, ids=json.dumps([int(i) for i in ids]))
        return [rows.observation(r) for r in found]
