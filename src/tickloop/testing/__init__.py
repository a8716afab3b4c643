"""Test doubles for code built on tickloop: what a user of the library needs to test their own
plugins, models and handlers without a real model, a real clock or a ledger file.

- ``FakeClock``: a clock that moves only when told to (``sleep`` advances it).
- ``LedgerCapture``: a ledger sink that keeps every record in memory.
- ``tickloop.testing.harness.ManualTimers``: the harness's timers, fired by hand (the fake clock's
  counterpart for ``Timers``).
- ``tickloop.testing.openai_server``: a real, scripted OpenAI-compatible server on 127.0.0.1 (its
  replies and faults in ``openai_faults``, its wire format in ``openai_wire``).
- ``tickloop.testing.postgres``: finds a PostgreSQL server and gives each test its own schema. Kept
  here because the test suite's ``pg_url`` fixture and the store benchmark both need it, and an
  embedder testing against a PostgreSQL store finds a server the same way
  (``TICKLOOP_TEST_DATABASE_URL``).

The load generators for the store and executor benchmarks live in the repository's ``bench/``, not
here: they import the operator and are of no use to a library user. The fakes record what they
received so a test can assert on the calls.
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
