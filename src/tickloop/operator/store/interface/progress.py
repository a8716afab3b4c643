"""Progress rows, observations, and retention (pruning old rows of both and more)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any

from tickloop.operator.domain import (
    NewProgress,
    Observation,
    ProgressRow,
)
from tickloop.operator.store.interface.common import EPOCH


class ProgressInterface(ABC):
    """The operations on progress rows and observations, and pruning."""

    @abstractmethod
    def record_progress(self, profile: str, row: NewProgress) -> ProgressRow:
        """Append one tick's progress row."""

    @abstractmethod
    def recent_progress(
        self, profile: str, *, limit: int = 20, tick_kind: str | None = None
    ) -> list[ProgressRow]:
        """The newest rows first; as fast with a million rows as with a thousand."""

    @abstractmethod
    def progress_for_intent(self, profile: str, intent_id: int, *, limit: int = 100) -> list[ProgressRow]:
        """The rows that name ``intent_id``, newest first, along an index of their own."""

    @abstractmethod
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
        """Record an observation; None when this profile already has its content hash."""

    @abstractmethod
    def list_observations(
        self, profile: str, *, since: datetime = EPOCH, limit: int = 100
    ) -> list[Observation]:
        """Those observed at or after ``since``, newest first (by observation time, then id); as
        fast with a year of older observations as with none."""

    @abstractmethod
    def prune(self, profile: str, *, before: datetime, keep_recent: int) -> dict[str, int]:
        """Delete the profile's ephemeral rows older than ``before``, within the retention floors;
        return how many rows of each kind went (``PRUNABLE`` names the kinds).

        Floors: the ``keep_recent`` newest rows of each kind always stay (progress: of each tick
        kind, so a rare tick's last row survives a flood of fast ones), and so does any progress
        row or notification that references an open (non-final) intent. Intents, decisions, goal
        models, the board, notes and critiques are never pruned here. A pruned observation's hash
        may be observed again later."""
