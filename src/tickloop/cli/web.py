"""``tickloop web``: the person's dashboard (extra ``web``); thin: parse, check, start.

The store comes from ``TICKLOOP_STORE`` or ``[store] url``, as for every operator command.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, Unpack

import click

from tickloop.cli.sessions import sessions_dir_option
from tickloop.errors import extra_hint

if TYPE_CHECKING:
    from tickloop.config import Settings
    from tickloop.web.server import Exposure


class _Options(TypedDict):
    """What click parses for ``tickloop web``: the options of ``web`` below, by name."""

    host: str
    port: int
    profile: str | None
    all_profiles: bool
    allow_remote: bool
    tls_cert: Path | None
    tls_key: Path | None
    insecure_http: bool
    only_login: bool
    public_url: str | None
    qr: bool | None
    max_streams: int
    poll: float
    sessions_dir: Path


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@click.option(
    "--profile", default=None, help="Show only this profile (env TICKLOOP_PROFILE; default: default)."
)
@click.option("--all", "all_profiles", is_flag=True, help="Show every profile in the store.")
@click.option(
    "--allow-remote", is_flag=True, help="Allow a non-loopback --host (needs TLS or --insecure-http)."
)
@click.option("--tls-cert", type=click.Path(path_type=Path, dir_okay=False), default=None)
@click.option("--tls-key", type=click.Path(path_type=Path, dir_okay=False), default=None)
@click.option("--insecure-http", is_flag=True, help="Serve a non-loopback host over plain HTTP (warns).")
@click.option(
    "--login-url",
    "only_login",
    is_flag=True,
    help="Print a new one-time login URL for a running server, and exit.",
)
@click.option(
    "--public-url",
    default=None,
    metavar="URL",
    help="Where the person opens it (https://host[:port]; [web] publicUrl): allowed as Host, the base "
    "of the login URL and of notice links. Plain http:// needs --insecure-http.",
)
@click.option(
    "--qr/--no-qr",
    default=None,
    help="Show the login URL as a QR code too (default: when the output is a terminal).",
)
@click.option(
    "--max-streams",
    type=click.IntRange(1, 10_000),
    default=32,
    show_default=True,
    help="Live-update streams open at most; past it a page polls every 10 s.",
)
@click.option(
    "--poll",
    type=click.FloatRange(0.2, 60),
    default=1.0,
    show_default=True,
    help="Seconds between the live-refresh checks of the store.",
)
@sessions_dir_option
def web(**opts: Unpack[_Options]) -> None:
    """Serve the dashboard: approvals, board, timeline, intents, attention and tick sessions.

    Prints a one-time login URL (only its hash is stored, 0600, in the state dir). Binds 127.0.0.1
    unless told otherwise; another host needs --allow-remote and TLS.
    """
    from tickloop.web import server  # noqa: PLC0415

    if opts["profile"] is not None and opts["all_profiles"]:
        raise click.UsageError("give --profile P or --all, not both")
    folder = server.state_dir()
    if opts["only_login"]:
        _print_login(folder, qr=opts["qr"])
        return
    _need_web_extra()
    settings = _checked_settings()
    exposure = _exposure(opts, settings)
    warnings = server.check_exposure(exposure)
    _serve(opts, settings, exposure, folder, warnings)


def _checked_settings() -> Settings:
    """The settings, every section checked: a typo in any exits 2 now, naming the key."""
    from tickloop.config import load_settings  # noqa: PLC0415
    from tickloop.config_sections import check_config  # noqa: PLC0415

    settings = load_settings()
    check_config(settings)
    return settings


def _exposure(opts: _Options, settings: Settings) -> Exposure:
    """Where and how the server listens; ``--public-url`` wins over ``[web] publicUrl``."""
    from tickloop.operator.notices import profile_section_web  # noqa: PLC0415
    from tickloop.web import server  # noqa: PLC0415

    public = opts["public_url"]
    if public is None:
        public = profile_section_web(settings).public_url
    return server.Exposure(
        opts["host"],
        opts["port"],
        opts["allow_remote"],
        opts["tls_cert"],
        opts["tls_key"],
        opts["insecure_http"],
        public.strip(),
    )


def _serve(opts: _Options, settings: Settings, exposure: Exposure, folder: Path, warnings: list[str]) -> None:
    """Open the store, check the profiles exist, build the app and run it until stopped."""
    from tickloop.operator.store import open_store  # noqa: PLC0415
    from tickloop.web import server  # noqa: PLC0415
    from tickloop.web.app import WebConfig, create_app  # noqa: PLC0415

    store = open_store(settings.store.url)
    try:
        scope = (
            None
            if opts["all_profiles"]
            else [opts["profile"] or os.environ.get("TICKLOOP_PROFILE") or "default"]
        )
        for name in scope or ():
            store.get_profile(name)
        config = WebConfig(
            settings=settings,
            profiles=scope,
            sessions_dir=opts["sessions_dir"],
            audit_dir=Path(settings.tick.audit_dir),
            state_dir=folder,
            poll_s=opts["poll"],
            max_streams=opts["max_streams"],
            **server.exposure_config(exposure),
        )
        app, _ = create_app(store, config)
        said = f"tickloop web: store {store.url}; profiles: {', '.join(scope) if scope else 'all'}"
        _run(app, exposure, folder, qr=opts["qr"], preface=[*warnings, said])
    finally:
        store.close()


def _need_web_extra() -> None:
    """The web stack is an extra: say how to install it rather than fail on an import."""
    from tickloop.errors import ConfigError  # noqa: PLC0415

    try:
        import tickloop.web.app  # noqa: F401, PLC0415
    except ImportError as exc:
        raise ConfigError(f"tickloop web needs the `web` extra: {extra_hint('web')} ({exc})") from None


def _run(app: object, exposure: Exposure, folder: Path, *, qr: bool | None, preface: list[str]) -> None:
    """Print the warnings (stderr), the store line and the login URL (and its QR code), announce
    the server for --login-url, serve."""
    from tickloop.web import server  # noqa: PLC0415

    for line in preface[:-1]:
        click.echo(line, err=True)
    click.echo(preface[-1])
    url = server.login_url(exposure.base, folder)
    click.echo(f"tickloop web: log in (once, within 24 h) at {url}")
    if qr if qr is not None else sys.stdout.isatty():
        click.echo(server.qr_lines(url), nl=False)
    server.announce(folder, exposure)
    try:
        server.serve(app, exposure)
    finally:
        server.withdraw(folder)


def _print_login(folder: Path, *, qr: bool | None) -> None:
    """A new one-time login URL for the dashboard running on this state dir, at its own address."""
    from tickloop.web import server  # noqa: PLC0415

    base = server.running_base(folder)
    if base is None:
        click.echo(
            "tickloop web: no dashboard is running for this state dir; start one with `tickloop web` "
            "(it prints a login URL itself)",
            err=True,
        )
        raise SystemExit(1)
    url = server.login_url(base, folder)
    click.echo(url)
    if qr if qr is not None else sys.stdout.isatty():
        click.echo(server.qr_lines(url), nl=False)
