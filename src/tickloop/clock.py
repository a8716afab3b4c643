"""Time is injected: core logic takes a ``Clock`` (or a ``now``), never reads the wall clock itself."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Wall time, monotonic time and sleeping, behind one seam so tests can own time."""

    def now(self) -> datetime:
        """The current wall time, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards (for durations and deadlines)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        import asyncio  # noqa: PLC0415  (one-shot ticks import this module and never sleep: keep them fast)

        await asyncio.sleep(seconds)


def utc_iso(moment: datetime) -> str:
    """ISO 8601 in UTC with milliseconds and a ``Z``: the one timestamp format on disk and in logs."""
    if moment.tzinfo is None:
        raise ValueError("utc_iso needs a timezone-aware datetime")
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
