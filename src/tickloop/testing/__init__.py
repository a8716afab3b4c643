"""Fakes shipped with the package, used as the default test fixtures (and usable by any embedder).

They record what they received so a test can assert on the calls.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["FakeClock", "LedgerCapture"]


class FakeClock:
    """A clock that moves only when told to; ``sleep`` advances it instead of waiting."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._mono = 0.0
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        """Move both clocks forward by ``seconds``."""
        if seconds < 0:
            raise ValueError("a clock never goes backwards")
        self._now += timedelta(seconds=seconds)
        self._mono += seconds

    def set(self, moment: datetime) -> None:
        """Jump the wall clock (monotonic follows by the same amount, never backwards)."""
        self.advance((moment - self._now).total_seconds())

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.advance(max(0.0, seconds))
        await asyncio.sleep(0)


class LedgerCapture:
    """An in-memory ledger sink: keeps every record appended, in order."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        stamped = {**record, "seq": len(self.records) + 1}
        self.records.append(stamped)
        return stamped

    def types(self) -> list[str]:
        """The record types, in order: the usual thing a test asserts on."""
        return [str(r["type"]) for r in self.records]
