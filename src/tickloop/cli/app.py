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


def _env_help() -> str:
    from tickloop.config import CONFIG_ENV, ENV_VARS  # noqa: PLC0415

    rows = [f"  {CONFIG_ENV:<26} path of the TOML config file"]
    rows += [f"  {var:<26} [{sec or 'top'}] {key}" for var, (sec, key) in ENV_VARS.items()]
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
