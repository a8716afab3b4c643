"""``tickloop operator tick KIND``: run exactly one tick and exit (exit codes: tickloop.operator.runner).

A plain invocation never reaches this click command: ``tickloop.cli.main`` parses it with
``tickloop.cli.tick_once`` for a faster start. This command is the same tick with click's help and
usage errors, and what ``tickloop operator --help`` lists.
"""

from __future__ import annotations

import sys
from datetime import datetime

import click

from tickloop.cli import tick_once
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
    signal N (its row is a failed one, or the tick's own if that was being written). Secrets come
    from the environment or the env file, never argv.
    """
    if kind != "executor" and (day is not None or dry_run):
        raise click.UsageError("--day and --dry-run apply to the executor tick only")
    day_only = None if day is None else day.date()
    sys.exit(tick_once.run(tick_once.TickRequest(kind, profile, day_only, dry_run)))
