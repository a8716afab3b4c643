"""``tickloop operator run``: the foreground scheduler that starts one-shot ticks on their cadences."""

from __future__ import annotations

import asyncio
import signal
import sys
from datetime import UTC, datetime

import click

from tickloop.cli.operator import profile_option


@click.command()
@profile_option
@click.option("--all", "all_profiles", is_flag=True, help="Every profile in the store.")
@click.option("--once", is_flag=True, help="Start every scheduled kind once, wait for them, and exit.")
@click.option(
    "--until",
    type=click.DateTime(
        formats=["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M%z", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"]
    ),
    help="Stop at this time (ISO 8601; without an offset: UTC).",
)
def run(profile: str, all_profiles: bool, once: bool, until: datetime | None) -> None:  # noqa: FBT001
    """Start ticks as subprocesses on their [schedule] cadences (observe right before each fast tick).

    Never overlaps two ticks of one kind for one profile; logs each start and exit; on SIGTERM or
    Ctrl-C starts nothing new and waits for running ticks so each writes its row. For production use
    systemd, cron or Kubernetes (`tickloop operator install`); this is for development and simple hosts.
    """
    from tickloop.clock import SystemClock, utc_iso  # noqa: PLC0415
    from tickloop.config import load_settings, section  # noqa: PLC0415
    from tickloop.operator.schedule import Scheduler, ScheduleSettings, SubprocessLauncher  # noqa: PLC0415
    from tickloop.operator.service import open_configured_store  # noqa: PLC0415

    settings = load_settings()
    schedule = section(settings, "schedule", ScheduleSettings)
    with open_configured_store() as store:
        profiles = (
            [p.name for p in store.list_profiles()] if all_profiles else [store.get_profile(profile).name]
        )
    if not profiles:
        raise click.UsageError("the store has no profiles: create one with `tickloop operator init`")
    clock = SystemClock()

    def log(line: str) -> None:
        click.echo(f"[{utc_iso(clock.now())}] {line}", err=True)

    scheduler = Scheduler(schedule, profiles, clock=clock, launcher=SubprocessLauncher(), log=log)
    stop_at = None if until is None else (until if until.tzinfo else until.replace(tzinfo=UTC))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, scheduler.stop)
        log(f"scheduler started for {', '.join(profiles)}; cadences read in {schedule.timezone}:")
        for kind, expr in schedule.cadences().items():  # one line per kind, not a dict's repr
            log(f"  {kind:<11} {expr}")
        await (scheduler.run_once() if once else scheduler.run(until=stop_at))
        log("scheduler stopped")

    asyncio.run(main())
    sys.exit(0)
