"""The dashboard's reads: true counts, lists that page through every row, an intent's recorded inputs."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from tickloop.operator.domain import (
    Intent,
    IntentStatus,
    Observation,
    ProgressRow,
)

if TYPE_CHECKING:
    from tickloop.operator.store.sqlops.views import OverviewSnapshot


class ViewInterface(ABC):
    """The reads the dashboard makes, each along an index."""

    @abstractmethod
    def count_intents(self, profile: str, *, status: IntentStatus | None = None) -> int:
        """How many intents the profile has (at ``status``): a COUNT, never a capped list's length."""

    @abstractmethod
    def intent_mark(self, profile: str, status: IntentStatus) -> tuple[int, int]:
        """How many intents are at ``status``, and the newest one's id (0 for none), in one read."""

    @abstractmethod
    def intents_oldest(
        self, profile: str, *, status: IntentStatus, after: int = 0, limit: int = 20
    ) -> list[Intent]:
        """The intents at ``status`` with an id above ``after``, oldest first (keyset paging)."""

    @abstractmethod
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
        """Every intent (not only the newest N) newest first below ``before``, by status, type and
        up to three words its title contains (case-insensitive), in SQL along an index."""

    @abstractmethod
    def progress_filtered(
        self, profile: str, *, tick_kind: str = "", outcome: str = "", limit: int = 200
    ) -> list[ProgressRow]:
        """The newest rows of this kind and/or outcome among every row, along an index."""

    @abstractmethod
    def overview_snapshot(
        self, profile: str, *, kinds: Sequence[str], waiting: int, since: datetime
    ) -> OverviewSnapshot:
        """Everything the dashboard's overview shows (``NotFoundError`` for an unknown profile)."""

    @abstractmethod
    def observations_by_id(self, profile: str, ids: Sequence[int]) -> list[Observation]:
        """The profile's observations with these ids (unknown ids are skipped), oldest first."""
