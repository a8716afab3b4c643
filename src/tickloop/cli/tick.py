"""``tickloop policies`` and ``tickloop parse-tick``: the grammar and the compiled policies."""

from __future__ import annotations

import json

import click

from tickloop.config import load_settings
from tickloop.errors import TickCommandError
from tickloop.protocol.command import TickStart, parse_tick
from tickloop.protocol.policy import PolicySet


@click.command()
def policies() -> None:
    """List the compiled policies: id, UTF-8 bytes and sha256."""
    settings = load_settings()
    for policy in PolicySet(settings.tick.policies).values():
        click.echo(f"{policy.id:<24} {policy.time_step_bytes:>5} B  sha256:{policy.time_step_sha256}")


@click.command("parse-tick")
@click.argument("line")
def parse_tick_command(line: str) -> None:
    """Parse one /tick line as the harness would, and print the result as JSON (exit 2 if refused)."""
    settings = load_settings()
    known = PolicySet(settings.tick.policies)
    try:
        command = parse_tick(
            line,
            default_count=settings.tick.default_ticks,
            default_policy=settings.tick.default_policy,
            known_policies=known,
        )
    except TickCommandError as exc:
        click.echo(json.dumps({"refused": exc.rule, "token": exc.token, "message": exc.message}))
        raise SystemExit(2) from None
    out: dict[str, object]
    if isinstance(command, TickStart):
        out = {"start": {"count": command.count, "policy": command.policy_id, "resume": command.resume}}
    else:
        out = {"control": str(command.op)}
    click.echo(json.dumps(out))
