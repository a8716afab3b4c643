"""Cadences and the foreground scheduler (``tickloop operator run``).

There is no long-lived agent: the scheduler only starts one-shot tick processes on their cadences.
Observe runs right before each fast tick; two ticks of the same kind for one profile never overlap
(the scheduler skips a start while the previous one runs, and each tick also takes the store's
advisory lock, which covers several schedulers on several machines). On stop (SIGTERM) it starts
nothing new and waits for running ticks, so each writes its progress row.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgspec

from tickloop.clock import Clock
from tickloop.errors import ConfigError

#: The kinds the scheduler starts, in the order it starts those due together.
KINDS = ("observe", "fast", "slow", "executor", "consolidate", "monitor")


class ScheduleSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """Cron cadences (minute hour day month weekday), read in ``timezone``."""

    #: the doer (observe runs right before it): every 30 minutes
    fast: str = "*/30 * * * *"
    #: the daily reviewer
    slow: str = "30 6 * * *"
    #: the executor (the only process that acts)
    executor: str = "*/15 * * * *"
    #: off until the person enables it
    executor_enabled: bool = False
    #: nightly consolidation
    consolidate: str = "15 3 * * *"
    #: the stall monitor, outside the loop
    monitor: str = "*/5 * * * *"
    #: IANA timezone the cron expressions are read in
    timezone: str = "UTC"

    def __post_init__(self) -> None:
        from croniter import croniter  # noqa: PLC0415  (only the scheduler pays for it)

        for kind in ("fast", "slow", "executor", "consolidate", "monitor"):
            expr = getattr(self, kind)
            if len(expr.split()) != 5 or not croniter.is_valid(expr):
                raise ConfigError(f"schedule.{kind} = {expr!r} is not a 5-field cron expression")
        try:
            ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(f"schedule.timezone {self.timezone!r} is not an IANA timezone") from None

    def cadences(self) -> dict[str, str]:
        """kind -> cron expression, for the kinds that run on their own timer."""
        kinds = ["fast", "slow", "consolidate", "monitor"] + (["executor"] if self.executor_enabled else [])
        return {kind: getattr(self, kind) for kind in kinds}


def next_fire(expr: str, after: datetime, timezone: str) -> datetime:
    """The first time strictly after ``after`` that ``expr`` fires, read in ``timezone``."""
    from croniter import croniter  # noqa: PLC0415

    local = after.astimezone(ZoneInfo(timezone))
    fire: datetime = croniter(expr, local).get_next(datetime)
    return fire.astimezone(after.tzinfo)


class Launch(msgspec.Struct, frozen=True):
    """One tick to start: which kind, for which profile."""

    profile: str
    kind: str

    def argv(self) -> list[str]:
        """The one-shot command line (the profile is a name, never a secret)."""
        if self.kind == "monitor":
            return [sys.executable, "-m", "tickloop", "operator", "monitor", "--profile", self.profile]
        return [sys.executable, "-m", "tickloop", "operator", "tick", self.kind, "--profile", self.profile]


class Launcher(Protocol):
    """Runs one tick to completion and returns its exit code."""

    async def run(self, launch: Launch) -> int: ...


class SubprocessLauncher:
    """Starts each tick as its own process in its own session, so a Ctrl-C or SIGTERM aimed at the
    scheduler does not kill a tick mid-row; the scheduler waits for it instead."""

    async def run(self, launch: Launch) -> int:
        process = await asyncio.create_subprocess_exec(*launch.argv(), start_new_session=True)
        return await process.wait()


class Scheduler:
    """Starts due ticks for each profile; never overlaps a kind per profile; stops gracefully."""

    def __init__(
        self,
        settings: ScheduleSettings,
        profiles: Sequence[str],
        *,
        clock: Clock,
        launcher: Launcher,
        log: Callable[[str], None],
    ) -> None:
        self.settings = settings
        self.profiles = list(profiles)
        self.clock = clock
        self.launcher = launcher
        self.log = log
        self.stopping = asyncio.Event()
        self.running: dict[tuple[str, str], asyncio.Task[None]] = {}
        start = clock.now()
        self.next_due = {
            (p, kind): next_fire(expr, start, settings.timezone)
            for p in self.profiles
            for kind, expr in settings.cadences().items()
        }

    def stop(self) -> None:
        """Start nothing new; running ticks finish and write their rows."""
        self.stopping.set()

    def due(self, now: datetime) -> list[Launch]:
        """What is due at ``now`` (advancing each cadence past ``now``), in ``KINDS`` order."""
        due = []
        for (profile, kind), when in sorted(self.next_due.items(), key=lambda kv: KINDS.index(kv[0][1])):
            if when <= now:
                self.next_due[(profile, kind)] = next_fire(
                    self.settings.cadences()[kind], now, self.settings.timezone
                )
                due.append(Launch(profile, kind))
        return due

    def start(self, launch: Launch) -> None:
        """Start ``launch`` unless the same kind is still running for that profile."""
        key = (launch.profile, launch.kind)
        if key in self.running:
            self.log(f"skip {launch.kind} for {launch.profile}: the previous one is still running")
            return
        self.running[key] = asyncio.create_task(self._run(launch))

    async def _run(self, launch: Launch) -> None:
        try:
            steps = [Launch(launch.profile, "observe"), launch] if launch.kind == "fast" else [launch]
            for step in steps:
                if self.stopping.is_set():  # stopping: a chained fast tick is something new
                    self.log(f"skip {step.kind} for {step.profile}: stopping")
                    break
                self.log(f"start {step.kind} for {step.profile}")
                code = await self.launcher.run(step)
                self.log(f"exit {step.kind} for {step.profile}: {code}")
        finally:
            del self.running[(launch.profile, launch.kind)]

    async def run_once(self) -> None:
        """Start every scheduled kind once for every profile, and wait for all of them."""
        for profile in self.profiles:
            for kind in self.settings.cadences():
                self.start(Launch(profile, kind))
        await self.drain()

    async def run(self, *, until: datetime | None = None, poll_seconds: float = 1.0) -> None:
        """Loop until stopped or ``until``; then wait for running ticks."""
        while not self.stopping.is_set() and (until is None or self.clock.now() < until):
            for launch in self.due(self.clock.now()):
                self.start(launch)
            wake = min(self.next_due.values(), default=self.clock.now() + timedelta(seconds=poll_seconds))
            delay = max(0.0, min(poll_seconds, (wake - self.clock.now()).total_seconds()))
            await self._sleep_or_stop(delay)
        await self.drain()

    async def _sleep_or_stop(self, seconds: float) -> None:
        stopper = asyncio.ensure_future(self.stopping.wait())
        sleeper = asyncio.ensure_future(self.clock.sleep(seconds))
        await asyncio.wait({stopper, sleeper}, return_when=asyncio.FIRST_COMPLETED)
        for future in (stopper, sleeper):
            future.cancel()

    async def drain(self) -> None:
        """Wait for every running tick to finish."""
        while self.running:
            await asyncio.gather(*self.running.values(), return_exceptions=True)
