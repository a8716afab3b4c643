"""Memory notes: written by ticks, found again by full-text search."""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime

from tickloop.operator.domain import (
    MemoryNote,
)


class NoteInterface(ABC):
    """The operations on memory notes."""

    @abstractmethod
    def add_note(
        self, profile: str, text: str, *, now: datetime, source: str = "", tainted: bool = False
    ) -> MemoryNote:
        """Keep a memory note."""

    @abstractmethod
    def search_notes(self, profile: str, query: str, *, limit: int = 20) -> list[MemoryNote]:
        """Notes containing every word of ``query`` (case-insensitive), newest first."""
