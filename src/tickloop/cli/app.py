"""The click application behind ``tickloop``: a group whose subcommands are imported when invoked.

``tickloop.cli.main`` is the entry point; it comes here for every command but a plain one-shot tick.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from tickloop.cli import EXIT_INTERRUPTED, EXIT_OK

#: command name -> "module:attribute". Importing a command's module is deferred until it runs,
#: so a one-shot operator tick never pays for the chat's or the renderer's imports.
COMMANDS: dict[str, str] = {
    "audit": "tickloop.cli.audit:audit",
    "policies": "tickloop.cli.tick:policies",
    "parse-tick": "tickloop.cli.tick:parse_tick_command",
    "models": "tickloop.cli.models:models",
    "chat": "tickloop.cli.chat:chat",
    "sessions": "tickloop.cli.sessions:sessions",
    "operator": "tickloop.cli.operator:operator",
    "doctor": "tickloop.cli.doctor:doctor",
    "web": "tickloop.cli.web:web",
    "experiment": "tickloop.cli.experiment:experiment",
    "mcp": "tickloop.cli.mcp:mcp",
}


#: Every TICKLOOP_* variable the code reads that is not a config key (those are in config.ENV_VARS),
#: as `tickloop --help` lists it. TICKLOOP_DRY_RUN comes first: it is the one that makes actions real.
ENV_HELP: dict[str, str] = {
    "TICKLOOP_DRY_RUN": "the executor acts only when this is exactly 0; anything else: dry run",
    "TICKLOOP_CONFIG": "path of the TOML config file",
    "TICKLOOP_PROFILE": "whose operator (--profile; default: default)",
    "TICKLOOP_STATE_DIR": "state dir (monitor, dashboard); default $XDG_STATE_HOME/tickloop",
    "TICKLOOP_SESSIONS_DIR": "chat transcripts (--sessions-dir; default .tickloop-sessions)",
    "TICKLOOP_MODEL_API_KEY": "API key of the `env` model (never put it in argv or the config)",
    "TICKLOOP_SMTP_PASSWORD": "SMTP password: the default of [smtp] passwordEnv",
    "TICKLOOP_NTFY_URL": "e.g. a [[notify.channels]] urlEnv (any name; URLs often hold tokens)",
    "TICKLOOP_TEST_DATABASE_URL": "PostgreSQL for the test suite (tickloop.testing)",
}


def _env_help() -> str:
    from tickloop.config import ENV_VARS  # noqa: PLC0415

    head = ("TICKLOOP_DRY_RUN", "TICKLOOP_CONFIG")
    rows = [f"  {var:<26} {ENV_HELP[var]}" for var in head]
    rows += [f"  {var:<26} [{sec or 'top'}] {key}" for var, (sec, key) in ENV_VARS.items()]
    rows += [f"  {var:<26} {text}" for var, text in ENV_HELP.items() if var not in head]
    return "Environment (prefix TICKLOOP_):\n\n\b\n" + "\n".join(rows)


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when invoked (or listed by --help)."""

    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            module_name, attr = self.lazy[cmd_name].split(":")
            command = getattr(importlib.import_module(module_name), attr)
            if not isinstance(command, click.Command):
                raise TypeError(f"{self.lazy[cmd_name]} is not a click command")
            return command
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, lazy=COMMANDS, epilog=_env_help())
@click.version_option(package_name="tickloop")
def cli() -> None:
    """tickloop: bounded, auditable loops around language models."""


def run(args: list[str]) -> int:
    """Run ``tickloop ARGS`` through click; the exit code of the command or of its usage error."""
    try:
        cli.main(args=args, prog_name="tickloop", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("tickloop: interrupted", err=True)
        return EXIT_INTERRUPTED
    return EXIT_OK
