"""``tickloop operator monitor | attention | digest``: the stall monitor and the attention log."""

from __future__ import annotations

import os
import sys

import click

from tickloop.cli.operator import _emit_json, _now, _profile_store, _table, json_option, profile_option


@click.command()
@click.option(
    "--profile", envvar="TICKLOOP_PROFILE", default=None, help="One profile (env TICKLOOP_PROFILE)."
)
@click.option("--all", "all_profiles", is_flag=True, help="Every profile (the default without --profile).")
def monitor(profile: str | None, all_profiles: bool) -> None:  # noqa: FBT001  (click flag)
    """Run ONE stall-monitor pass and exit 0, always.

    Reads every profile's progress rows and state independently of the loop (so it sees a loop that
    stopped running), advances the conditions STUCK, SILENT, NO_GOAL and BOARD_FROZEN, and sends their
    notices through the attention layer. Any failure is written to stderr (and to the store when it
    is reachable), and the next runs back off for [monitor] errorBackoffMin minutes. It runs on its
    own timer (the schedule's `monitor` cadence: every 5 minutes by default).
    """
    from tickloop.cli import monitor_once  # noqa: PLC0415

    if profile is not None and all_profiles:
        click.echo("monitor: --profile and --all are exclusive; running for every profile", err=True)
        profile = None
    sys.exit(monitor_once.run(monitor_once.MonitorRequest(None if profile is None else (profile,))))


@click.command()
@profile_option
@click.option("--today", is_flag=True, help="Only decisions since the profile-local midnight.")
@json_option
def attention(profile: str, today: bool, as_json: bool) -> None:  # noqa: FBT001  (click flags)
    """Show every attention decision, sent or silenced, with the check that decided it (newest first)."""
    from tickloop.config import load_settings  # noqa: PLC0415
    from tickloop.operator.notices import attention_records, attention_settings, local_day_start  # noqa: PLC0415
    from tickloop.operator.store.base import EPOCH  # noqa: PLC0415

    with _profile_store(profile) as store:
        since = EPOCH
        if today:
            zone = attention_settings(load_settings(), store, profile).timezone
            since = local_day_start(_now(), zone)
        records = attention_records(store, profile, since=since)
    if as_json:
        _emit_json(records)
        return
    _table(
        f"attention decisions: {profile}",
        ["id", "at", "check", "kind", "sent", "hold until", "digest", "title"],
        [[r.id, r.at, r.check, r.kind, r.sent, r.hold_until, r.digest, r.title] for r in records],
    )


@click.command()
@profile_option
def digest(profile: str) -> None:
    """Send the batched items (approvals past the cap; held items whose hold ended) as ONE message."""
    from tickloop.config import load_settings  # noqa: PLC0415
    from tickloop.operator.notices import Notifier, send_digest  # noqa: PLC0415

    settings = load_settings()
    with _profile_store(profile) as store:
        result = send_digest(Notifier(store, profile, settings, os.environ), now=_now())
    if result.items == 0:
        click.echo("digest: nothing to send")
        return
    if not result.sent:
        reasons = "; ".join(r.reason for r in result.results) or "no channel delivered"
        raise click.ClickException(f"digest of {result.items} item(s) not delivered: {reasons}")
    click.echo(f"digest: {result.items} item(s) sent")
