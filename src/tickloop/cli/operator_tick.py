"""``tickloop operator tick KIND``: run exactly one tick and exit (exit codes: tickloop.operator.runner)."""

from __future__ import annotations

import os
import sys
from datetime import datetime

import click

from tickloop.cli.operator import profile_option
from tickloop.operator.runner import TICKS


@click.command()
@click.argument("kind", type=click.Choice(sorted(TICKS)))
@profile_option
@click.option(
    "--day",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    help="executor only: consider intents of this day (default: today and yesterday).",
)
@click.option("--dry-run", is_flag=True, help="executor only: force dry-run whatever TICKLOOP_DRY_RUN says.")
def tick(kind: str, profile: str, day: datetime | None, dry_run: bool) -> None:  # noqa: FBT001  (click flag)
    """Run exactly ONE tick of KIND for a profile, record its progress row, and exit.

    Exit codes: 0 the tick ran (done, staged, noop, refused, gate_stop, blocked); 1 it failed (its row
    says why); 2 bad usage, configuration or profile (no row could be written); 128+N interrupted by
    signal N after flushing a failed row. Secrets come from the environment or the env file, never argv.
    """
    if kind != "executor" and (day is not None or dry_run):
        raise click.UsageError("--day and --dry-run apply to the executor tick only")
    from tickloop.config import load_settings  # noqa: PLC0415
    from tickloop.operator.runner import run_tick  # noqa: PLC0415
    from tickloop.operator.service import open_configured_store  # noqa: PLC0415

    settings = load_settings()
    options: dict[str, object] = {"dry_run": dry_run}
    if day is not None:
        options["day"] = day.date()
    with open_configured_store() as store:
        store.get_profile(profile)
        code = run_tick(
            kind, store=store, profile=profile, settings=settings, env=os.environ, options=options
        )
        for row in store.recent_progress(profile, limit=1, tick_kind=kind):  # the row this tick wrote
            click.echo(" ".join(part for part in (f"{kind}: {row.outcome}", row.detail, row.error) if part))
    sys.exit(code)
