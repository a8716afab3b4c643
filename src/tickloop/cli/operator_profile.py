"""``tickloop operator profile show|set``: a profile's timezone, display name, quiet hours, channel.

The timezone and display name live in the store; quiet hours and the notification channel live in
the config file (``[attention]``, ``[notify]``), written the way ``operator init`` writes them: into
a section the file does not have yet, otherwise shown for the person to merge. Every value is
checked before anything is changed, and each change is recorded in the notification log.
"""

from __future__ import annotations

import click

from tickloop.cli.operator import (
    _emit_json,
    _now,
    _profile_store,
    _table,
    _write_onboarding,
    json_option,
    profile_option,
)
from tickloop.errors import ValidationError
from tickloop.operator.domain import Profile


@click.group()
def profile() -> None:
    """Show and change a profile's timezone, display name, quiet hours and channel."""


@profile.command("show")
@profile_option
@json_option
def profile_show(*, profile: str, as_json: bool) -> None:
    """Show the profile; a stored timezone that names no zone is shown as such, with the fix."""
    with _profile_store(profile) as store:
        found = store.get_profile(profile)
    zone = _zone_cell(found)
    if as_json:
        _emit_json({"profile": found, "timezoneValid": zone == found.timezone})
        return
    rows = [("name", found.name), ("display name", found.display_name), ("timezone", zone)]
    _table(f"profile {profile}", ["setting", "value"], rows)


def _zone_cell(found: Profile) -> str:
    try:
        found.zone()
    except ValidationError:
        return f"{found.timezone} (not a timezone: tickloop operator profile set --timezone ZONE)"
    return found.timezone


@profile.command("set")
@profile_option
@click.option("--timezone", help="The person's IANA timezone, e.g. Europe/Berlin.")
@click.option("--display-name", help="The person's name.")
@click.option("--quiet", help="Quiet hours START-END in the person's timezone, e.g. 22-7 (config file).")
@click.option(
    "--channel", help="Notifications: console, an email address, or apprise:VARIABLE (config file)."
)
@json_option
def profile_set(
    *,
    profile: str,
    timezone: str | None,
    display_name: str | None,
    quiet: str | None,
    channel: str | None,
    as_json: bool,
) -> None:
    """Change the profile's settings; every value is checked before anything changes."""
    from tickloop.operator import onboarding  # noqa: PLC0415
    from tickloop.operator.service import set_profile  # noqa: PLC0415

    if not any(v is not None for v in (timezone, display_name, quiet, channel)):
        raise ValidationError("say what to change: --timezone, --display-name, --quiet or --channel")
    quiet_hours = onboarding.parse_quiet(quiet) if quiet else None
    picked = onboarding.parse_channel(channel) if channel else None
    with _profile_store(profile) as store:
        made, changes = set_profile(store, profile, now=_now(), timezone=timezone, display_name=display_name)
        sections = onboarding.snippet(quiet_hours, picked, made.timezone)
        written, skipped = _write_onboarding(sections, profile)
        for name in written:
            changes.append(f"[{name}] written to the config file")
            store.log_notification(
                profile, channel="operator", kind="profile_changed", subject=changes[-1], now=_now()
            )
    if as_json:
        _emit_json({"profile": made, "changes": changes, "configWritten": written, "configSkipped": skipped})
        return
    for line in changes or ["nothing changed"]:
        click.echo(f"profile {profile!r}: {line}")
    for name in skipped:
        click.echo(f"[{name}] already in the config file: left as is; merge this by hand:\n{sections[name]}")
