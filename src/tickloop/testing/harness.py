"""Fakes for driving the harness: timers a test fires by hand (including stale ones)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["ManualTimer", "ManualTimers"]


@dataclass(slots=True)
class ManualTimer:
    """One pending call; ``fire`` runs it unless cancelled, ``fire_anyway`` simulates a stale timer."""

    delay: float
    callback: Callable[[], None]
    cancelled: bool = False
    fired: bool = False

    def cancel(self) -> None:
        self.cancelled = True

    def fire(self) -> None:
        if not self.cancelled and not self.fired:
            self.fire_anyway()

    def fire_anyway(self) -> None:
        """Run the callback even if cancelled: a timer that raced its own cancellation."""
        self.fired = True
        self.callback()


@dataclass(slots=True)
class ManualTimers:
    """``Timers`` that never fire on their own; the test decides when."""

    timers: list[ManualTimer] = field(default_factory=list)

    def call_later(self, delay: float, callback: Callable[[], None]) -> ManualTimer:
        timer = ManualTimer(delay, callback)
        self.timers.append(timer)
        return timer

    @property
    def pending(self) -> list[ManualTimer]:
        return [t for t in self.timers if not t.cancelled and not t.fired]

    def fire_next(self) -> None:
        """Fire the oldest pending timer; fails loudly if there is none."""
        pending = self.pending
        if not pending:
            raise AssertionError("no timer is pending")
        pending[0].fire()
