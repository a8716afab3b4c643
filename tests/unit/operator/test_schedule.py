"""The scheduler starts the right ticks at the right (simulated) times, never overlaps, stops cleanly."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from tickloop.errors import ConfigError
from tickloop.operator.schedule import Launch, Scheduler, ScheduleSettings, next_fire
from tickloop.testing import FakeClock

START = datetime(2026, 11, 30, 0, 0, 30, tzinfo=UTC)


class RecordingLauncher:
    """Records each start with the fake time; a kind listed in ``slow`` blocks until released."""

    def __init__(self, clock: FakeClock, slow: frozenset[str] = frozenset()) -> None:
        self.clock = clock
        self.slow = slow
        self.started: list[tuple[datetime, str, str]] = []
        self.release = asyncio.Event()

    async def run(self, launch: Launch) -> int:
        self.started.append((self.clock.now(), launch.profile, launch.kind))
        if launch.kind in self.slow:
            await self.release.wait()
        return 0


def make(clock: FakeClock, launcher: RecordingLauncher, **settings: object) -> tuple[Scheduler, list[str]]:
    logs: list[str] = []
    scheduler = Scheduler(
        ScheduleSettings(**settings), ["ada"], clock=clock, launcher=launcher, log=logs.append
    )  # type: ignore[arg-type]
    return scheduler, logs


async def test_simulated_day_starts_each_kind_on_its_cadence() -> None:
    """Over a simulated day: fast every 30 min (each after an observe), monitor every 5, slow at
    06:30, consolidate at 03:15, and no executor while it is not enabled."""
    clock = FakeClock(START)
    launcher = RecordingLauncher(clock)
    scheduler, _ = make(clock, launcher)
    await scheduler.run(until=START + timedelta(days=1), poll_seconds=60)
    kinds = [kind for _, _, kind in launcher.started]
    assert kinds.count("fast") == 48
    assert kinds.count("observe") == 48
    assert kinds.count("monitor") == 288
    assert kinds.count("slow") == 1
    assert kinds.count("consolidate") == 1
    assert "executor" not in kinds
    for i, kind in enumerate(kinds):
        if kind == "fast":
            assert kinds[i - 1] == "observe"
    slow_at = [t for t, _, k in launcher.started if k == "slow"]
    assert [t.strftime("%H:%M") for t in slow_at] == ["06:30"]


async def test_executor_runs_only_when_enabled() -> None:
    """Enabling the executor schedules it every 15 minutes."""
    clock = FakeClock(START)
    launcher = RecordingLauncher(clock)
    scheduler, _ = make(clock, launcher, executor_enabled=True)
    await scheduler.run(until=START + timedelta(hours=1), poll_seconds=60)
    assert [k for _, _, k in launcher.started].count("executor") == 4


async def test_a_slow_tick_is_never_overlapped_by_the_next_of_its_kind() -> None:
    """While a fast tick is still running, the next fast start is skipped and logged."""
    clock = FakeClock(START)
    launcher = RecordingLauncher(clock, slow=frozenset({"fast"}))
    scheduler, logs = make(clock, launcher)
    runner = asyncio.create_task(scheduler.run(until=START + timedelta(hours=2), poll_seconds=60))
    while clock.now() < START + timedelta(hours=2):
        await asyncio.sleep(0)
    launcher.release.set()
    await runner
    assert [k for _, _, k in launcher.started].count("fast") == 1
    assert sum("skip fast for ada" in line for line in logs) == 3


async def test_stop_waits_for_running_ticks() -> None:
    """After stop(), nothing new starts, and run() returns only when the running tick has finished."""
    clock = FakeClock(START)
    launcher = RecordingLauncher(clock, slow=frozenset({"fast"}))
    scheduler, logs = make(clock, launcher)
    runner = asyncio.create_task(scheduler.run(poll_seconds=60))
    while not any(k == "fast" for _, _, k in launcher.started):
        await asyncio.sleep(0)
    scheduler.stop()
    for _ in range(20):
        await asyncio.sleep(0)
    assert not runner.done()
    launcher.release.set()
    await runner
    assert logs[-1] == "exit fast for ada: 0"


async def test_once_runs_every_scheduled_kind_once() -> None:
    """`--once` starts each scheduled kind once per profile and waits for them all."""
    clock = FakeClock(START)
    launcher = RecordingLauncher(clock)
    scheduler, _ = make(clock, launcher)
    await scheduler.run_once()
    assert sorted(k for _, _, k in launcher.started) == ["consolidate", "fast", "monitor", "observe", "slow"]


def test_cadences_are_read_in_the_profile_timezone() -> None:
    """`30 6 * * *` in Europe/Berlin fires at 06:30 Berlin time, which is 05:30 UTC in winter."""
    fire = next_fire("30 6 * * *", START, "Europe/Berlin")
    assert fire == datetime(2026, 11, 30, 5, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("fast", "every 5 minutes"),
        ("slow", "61 * * * *"),
        ("monitor", "* * * *"),
        ("timezone", "Nowhere/Else"),
    ],
)
def test_bad_cadences_are_refused_naming_the_key(key: str, value: str) -> None:
    """A cadence that is not a 5-field cron expression, or an unknown zone, fails naming the setting."""
    with pytest.raises(ConfigError, match=f"schedule.{key}"):
        ScheduleSettings(**{key: value})  # type: ignore[arg-type]
