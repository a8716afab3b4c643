"""The dashboard's reads: true counts, lists that page through every row, an intent's recorded inputs."""

from __future__ import annotations

import json
from collections.abc import Sequence

from tickloop.operator.domain import Intent, IntentStatus, Observation
from tickloop.operator.store import _rows as rows
from tickloop.operator.store.sqlops.base import SqlBase


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

    def observations_by_id(self, profile: str, ids: Sequence[int]) -> list[Observation]:
        if not ids:
            return []
        with self._read() as tx:
            found = tx.rows("observations_by_id", profile=profile, ids=json.dumps([int(i) for i in ids]))
        return [rows.observation(r) for r in found]
