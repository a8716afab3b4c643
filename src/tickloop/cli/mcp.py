"""``tickloop mcp ...``: the operator's MCP face for the person's other agents (thin: parse, call)."""

from __future__ import annotations

from pathlib import Path

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
    type=click.IntRange(1, 1_000_000),
    default=http.DEFAULT_RATE_PER_MINUTE,
    show_default=True,
    help="HTTP: requests per minute per client address.",
)
def serve(
    *,
    profile: str,
    transport: str,
    host: str,
    port: int,
    allow_remote: bool,
    certfile: Path | None,
    keyfile: Path | None,
    insecure_http: bool,
    origins: tuple[str, ...],
    max_body: int,
    rate_limit: int,
) -> None:
    """Serve the MCP face: on stdio (for Claude Desktop, Claude Code, Cursor) or streamable HTTP
    on 127.0.0.1 with a bearer token (`tickloop mcp token`)."""
    from tickloop.config import load_settings  # noqa: PLC0415
    from tickloop.config_sections import check_config  # noqa: PLC0415
    from tickloop.mcp.run import serve as run_serve  # noqa: PLC0415

    check_config(load_settings())  # a typo in any section exits 2 now, naming the key
    options = http.Options(
        host=host,
        port=port,
        allow_remote=allow_remote,
        certfile=certfile,
        keyfile=keyfile,
        insecure_http=insecure_http,
        origins=origins,
        max_body=max_body,
        rate_per_minute=rate_limit,
    )
    run_serve(profile, "http" if transport == "http" else "stdio", options, announce=_err)


@mcp.command()
@click.option("--rotate", is_flag=True, help="Issue a new token; the old one stops working.")
def token(*, rotate: bool) -> None:
    """Issue the HTTP transport's bearer token and show it once (only its hash is kept)."""
    from tickloop.mcp import token as tokens  # noqa: PLC0415

    click.echo(tokens.issue(tokens.token_path(), rotate=rotate))


def _err(line: str) -> None:
    click.echo(line, err=True)
