"""The ``tickloop`` command line: thin click commands over the library, loaded lazily.

Exit codes: 0 success; 1 a check found a problem (``audit verify``, ``doctor``); 2 bad usage,
configuration or input (the message says what and where); 130 interrupted.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from tickloop.errors import TickloopError

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
}

EXIT_OK = 0
EXIT_PROBLEM = 1
EXIT_USAGE = 2


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


def main(argv: list[str] | None = None) -> int:
    """Console entry point: library errors become a one-line message and exit code 2."""
    try:
        cli.main(args=argv, prog_name="tickloop", standalone_mode=False)
    except TickloopError as exc:
        click.echo(f"tickloop: {exc}", err=True)
        return EXIT_USAGE
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("tickloop: interrupted", err=True)
        return 130
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
