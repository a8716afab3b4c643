"""``tickloop mcp ...``: the operator's MCP face for the person's other agents (thin: parse, call)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tickloop.cli.operator import profile_option
from tickloop.mcp import http

FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.group()
def mcp() -> None:
    """The operator's MCP face (extra `mcp`): agents read the goal, board, plan, progress, intents
    and monitor, add tasks and notes, draft goals and stage intents. Nothing on it executes,
    approves or activates anything: that stays with the executor and the person."""


@mcp.command()
@profile_option
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP: the address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=http.DEFAULT_PORT,
    show_default=True,
    help="HTTP: 0 = any.",
)
@click.option("--allow-remote", is_flag=True, help="HTTP: allow a non-loopback --host.")
@click.option("--certfile", type=FILE, help="HTTP: TLS certificate (PEM).")
@click.option("--keyfile", type=FILE, help="HTTP: TLS private key (PEM).")
@click.option("--insecure-http", is_flag=True, help="HTTP: accept plain HTTP on a non-loopback --host.")
@click.option("--allow-origin", "origins", multiple=True, help="HTTP: another Origin to let in (repeat).")
@click.option(
    "--max-body",
    type=click.IntRange(1024, 64 * 1024 * 1024),
    default=http.DEFAULT_MAX_BODY,
    show_default=True,
    help="HTTP: largest request body, in bytes.",
)
@click.option(
    "--rate-limit",
    "rate_per_minute",
    type=click.IntRange(1, 1_000_000),
    default=http.DEFAULT_RATE_PER_MINUTE,
    show_default=True,
    help="HTTP: requests per minute per client address.",
)
def serve(*, profile: str, transport: str, **listen: Any) -> None:
    """Serve the MCP face: on stdio (for Claude Desktop, Claude Code, Cursor) or streamable HTTP
    on 127.0.0.1 with a bearer token (`tickloop mcp token`)."""
    from tickloop.config import load_settings  # noqa: PLC0415
    from tickloop.config_sections import check_config  # noqa: PLC0415
    from tickloop.mcp.run import serve as run_serve  # noqa: PLC0415

    check_config(load_settings())  # a typo in any section exits 2 now, naming the key
    # The HTTP options are named after the fields of http.Options (--rate-limit: rate_per_minute).
    options = http.Options(**listen)
    run_serve(profile, "http" if transport == "http" else "stdio", options, announce=_err)


@mcp.command()
@click.option("--name", default="default", show_default=True, help="The agent this token is for.")
@click.option("--rotate", is_flag=True, help="Issue a new token for --name; the old one stops working.")
@click.option("--list", "show", is_flag=True, help="List the tokens by name (never the tokens).")
@click.option("--revoke", metavar="NAME", help="Revoke the token NAME; a running server refuses it at once.")
def token(*, name: str, rotate: bool, show: bool, revoke: str | None) -> None:
    """Issue an agent's bearer token for the HTTP transport and show it once (only its hash is kept).

    Give each agent its own (`--name claude-desktop`): the intents it stages record `mcp:NAME`."""
    from tickloop.mcp import token as tokens  # noqa: PLC0415

    if sum((show, revoke is not None, rotate)) > 1:
        raise click.UsageError("choose one of --list, --revoke and --rotate")
    path = tokens.token_path()
    if show:
        for entry, issued in tokens.listing(path):
            click.echo(f"{entry}\tissued {issued}")
    elif revoke is not None:
        tokens.revoke(path, revoke)
        click.echo(f"revoked the MCP token {revoke!r}", err=True)
    else:
        click.echo(tokens.issue(path, name=name, rotate=rotate))


def _err(line: str) -> None:
    click.echo(line, err=True)
