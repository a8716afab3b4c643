"""Memory notes: written by ticks, found again by full-text search."""

from __future__ import annotations

from datetime import datetime

from tickloop.operator.domain import MemoryNote
from tickloop.operator.store import _rows as rows
from tickloop.operator.store.base import search_tokens
from tickloop.operator.store.sqlops.base import SqlBase


class NoteOps(SqlBase):
    """Memory notes."""

    def add_note(
        self, profile: str, text: str, *, now: datetime, source: str = "", tainted: bool = False
    ) -> MemoryNote:
        with self._write_one() as tx:
            row = tx.one("add_note", profile=profile, text=text, source=source, tainted=tainted, now=now)
        assert row is not None
        return rows.note(row)

    def search_notes(self, profile: str, query: str, *, limit: int = 20) -> list[MemoryNote]:
        tokens = search_tokens(query)
        if not tokens:
            return []
        with self._read() as tx:
            found = tx.rows("search_notes", profile=profile, query=self._fts_query(tokens), limit=limit)
        return [rows.note(r) for r in found]
