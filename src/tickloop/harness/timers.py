"""Timers behind one seam, so tests can hold a pending timer and fire it (or a stale one) at will."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol


class TimerHandle(Protocol):
    """A pending call that can be cancelled."""

    def cancel(self) -> None: ...


class Timers(Protocol):
    """Schedules a callback after a delay, on the running event loop."""

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle: ...


class LoopTimers:
    """The real timers: ``loop.call_later`` on the running loop."""

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(delay, callback)
