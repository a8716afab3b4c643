"""``tickloop doctor``: check everything a working operator needs, and say how to fix each problem."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import click


@click.command()
@click.option("--send-test", is_flag=True, help="Send one test notification through each channel.")
def doctor(send_test: bool) -> None:  # noqa: FBT001  (click flag)
    """Check the configuration, the store and its migrations, the model endpoint (one tiny request),
    the notification channels, each profile's clock and timezone, and the dry-run state. Exits 1 if
    anything needs fixing."""
    from tickloop.doctor import environment, run_checks  # noqa: PLC0415

    findings = run_checks(environment(), now=datetime.now(UTC), send_test=send_test)
    for finding in findings:
        mark = " - " if finding.skipped else "ok " if finding.ok else "BAD"
        click.echo(f"[{mark}] {finding.name}: {finding.detail}")
        if finding.fix:
            click.echo(f"      fix: {finding.fix}")
    problems = sum(not f.ok for f in findings)
    click.echo(f"{len(findings)} checks, {problems} problem(s)")
    sys.exit(1 if problems else 0)
