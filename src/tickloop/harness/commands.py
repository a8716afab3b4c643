"""The command plane: lines that begin with ``/`` are consumed here and never reach the model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tickloop.errors import ConfigError

#: A command handler gets the whole line (``/tick 3``) and returns what to show the person.
Handler = Callable[[str], "CommandResult"]

_MAX_SHOWN = 40


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What a command says back; ``ok=False`` for a refusal or an unknown command."""

    text: str
    ok: bool = True


@dataclass(frozen=True, slots=True)
class Command:
    """A registered command: its name (``tick``), handler and one line of help."""

    name: str
    handler: Handler
    help: str


def is_command(line: str) -> bool:
    """True for a command line. Leading blanks do not smuggle a command to the model."""
    return line.lstrip().startswith("/")


class CommandPlane:
    """Registered commands by name."""

    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}

    def register(self, name: str, handler: Handler, help: str) -> None:  # noqa: A002  (the word users see)
        """Add ``/name``. Two plugins cannot claim the same name."""
        if not name.isascii() or not name.isidentifier():
            raise ConfigError(f"command name {name!r} must be an ASCII identifier")
        if name in self._commands:
            raise ConfigError(f"command /{name} is already registered")
        self._commands[name] = Command(name, handler, help)

    def names(self) -> list[str]:
        return sorted(self._commands)

    def help_text(self) -> str:
        return "\n".join(f"/{c.name:<10} {c.help}" for c in sorted(self._commands.values(), key=_name))

    def dispatch(self, line: str) -> CommandResult:
        """Run the command ``line`` names, or say clearly that there is no such command."""
        stripped = line.strip()
        name = stripped[1:].split(maxsplit=1)[0] if len(stripped) > 1 and not stripped[1].isspace() else ""
        command = self._commands.get(name)
        if command is None:
            known = ", ".join(f"/{n}" for n in self.names())
            shown = repr(stripped[:_MAX_SHOWN]) + ("..." if len(stripped) > _MAX_SHOWN else "")
            return CommandResult(
                f"unknown command {shown}; known commands: {known}. It was not sent to the model.",
                ok=False,
            )
        return command.handler(stripped)


def _name(command: Command) -> str:
    return command.name
