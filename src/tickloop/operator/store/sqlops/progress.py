"""Progress rows, observations, and retention (pruning old rows of both and more)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tickloop.operator.domain import NewProgress, Observation, ProgressRow
from tickloop.operator.store import _rows as rows
from tickloop.operator.store._rows import dumps
from tickloop.operator.store.base import EPOCH, PRUNABLE
from tickloop.operator.store.sqlops.base import SqlBase


class ProgressOps(SqlBase):
    """Progress, observations, retention."""

    # -- progress -----------------------------------------------------------------------------------

    def record_progress(self, profile: str, row: NewProgress) -> ProgressRow:
        with self._write_one() as tx:
            made = tx.one(
                "record_progress",
                profile=profile,
                tick_kind=row.tick_kind,
                outcome=row.outcome,
                state_hash=row.state_hash,
                intent_id=row.intent_id,
                error=row.error,
                detail=row.detail,
                started_at=row.started_at,
                ended_at=row.ended_at,
            )
        assert made is not None
        return rows.progress(made)

    def recent_progress(
        self, profile: str, *, limit: int = 20, tick_kind: str | None = None
    ) -> list[ProgressRow]:
        with self._read() as tx:
            if tick_kind is None:
                found = tx.rows("recent_progress", profile=profile, limit=limit)
            else:
                found = tx.rows("recent_progress_kind", profile=profile, tick_kind=tick_kind, limit=limit)
        return [rows.progress(r) for r in found]

    def progress_for_intent(self, profile: str, intent_id: int, *, limit: int = 100) -> list[ProgressRow]:
        with self._read() as tx:
            found = tx.rows("progress_for_intent", profile=profile, intent_id=intent_id, limit=limit)
        return [rows.progress(r) for r in found]

    # -- observations and memory --------------------------------------------------------------------

    def add_observation(
        self,
        profile: str,
        *,
        source: str,
        content_hash: str,
        payload: dict[str, Any],
        now: datetime,
        tainted: bool = True,
    ) -> Observation | None:
        with self._write_one() as tx:
            row = tx.one(
                "add_observation",
                profile=profile,
                source=source,
                content_hash=content_hash,
                tainted=tainted,
                payload=dumps("payload", payload),
                now=now,
            )
        return None if row is None else rows.observation(row)

    def list_observations(
        self, profile: str, *, since: datetime = EPOCH, limit: int = 100
    ) -> list[Observation]:
        with self._read() as tx:
            found = tx.rows("list_observations", profile=profile, since=since, limit=limit)
        return [rows.observation(r) for r in found]

    # -- retention ----------------------------------------------------------------------------------

    def prune(self, profile: str, *, before: datetime, keep_recent: int) -> dict[str, int]:
        keep = max(0, keep_recent)
        with self._write() as tx:
            return {
                kind: tx.run(f"prune_{kind}", profile=profile, before=before, keep=keep) for kind in PRUNABLE
            }
