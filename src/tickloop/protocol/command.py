"""The /tick grammar.

::

    /tick [<count>] [--policy <id> | --policy=<id>] [--resume]
    /tick policies
    /tick status
    /tick stop

``parse_tick`` returns a ``TickStart`` or a ``TickControl``; for anything else it raises
``TickCommandError`` (and nothing else) naming the offending token and the rule. Options may come in
any order; each may appear once.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from enum import StrEnum

from tickloop.errors import TickCommandError
from tickloop.protocol.policy import is_valid_policy_id

COMMAND = "/tick"
MIN_COUNT = 1
MAX_COUNT = 256

_INTEGER = re.compile(r"-?[0-9]+", re.ASCII)


class ControlOp(StrEnum):
    """The control operations: they never become model input."""

    POLICIES = "policies"  #: list id, bytes and sha256 of each policy
    STATUS = "status"  #: show the active run
    STOP = "stop"  #: cancel a pending enqueue and disarm the run


@dataclass(frozen=True, slots=True)
class TickStart:
    """Arm a run of ``count`` time steps with one policy."""

    count: int
    policy_id: str
    resume: bool = False


@dataclass(frozen=True, slots=True)
class TickControl:
    """A control operation."""

    op: ControlOp


TickCommand = TickStart | TickControl


def parse_tick(
    line: str,
    *,
    default_count: int,
    default_policy: str,
    known_policies: Collection[str],
) -> TickCommand:
    """Parse one command line. Raises ``TickCommandError`` for anything the grammar refuses."""
    tokens = line.split()
    if not tokens or tokens[0] != COMMAND:
        raise TickCommandError(
            f"not a {COMMAND} command: {line[:40]!r}", rule="command.not_tick", token=line[:40]
        )
    args = tokens[1:]
    if args and args[0] in ControlOp.__members__.values():
        return _parse_control(args)
    count, policy_id, resume = _parse_start_args(args)
    count = default_count if count is None else count
    policy_id = _known_policy(default_policy if policy_id is None else policy_id, known_policies)
    return TickStart(count=count, policy_id=policy_id, resume=resume)


def _known_policy(policy_id: str, known_policies: Collection[str]) -> str:
    if policy_id not in known_policies:
        known = ", ".join(sorted(known_policies))
        raise TickCommandError(
            f"unknown policy {policy_id!r} (known: {known}); see /tick policies",
            rule="command.unknown_policy",
            token=policy_id,
        )
    return policy_id


def _parse_control(args: list[str]) -> TickControl:
    op = ControlOp(args[0])
    if len(args) > 1:
        raise TickCommandError(
            f"'/tick {op}' takes no arguments; unexpected {args[1]!r}",
            rule="command.extra_argument",
            token=args[1],
        )
    return TickControl(op=op)


def _parse_start_args(args: list[str]) -> tuple[int | None, str | None, bool]:
    count: int | None = None
    policy_id: str | None = None
    resume = False
    seen: set[str] = set()
    rest = iter(args)
    for token in rest:
        name, _, inline = token.partition("=")
        if name in ("--policy", "--resume"):
            _once(seen, name, token)
        if name == "--resume":
            resume = _resume_flag(token)
        elif name == "--policy":
            policy_id = _policy_id(inline if token != name else _option_value(rest, token))
        elif token.startswith("--") or (token.startswith("-") and not _INTEGER.fullmatch(token)):
            raise _unknown_option(token)
        else:
            count = _only_count(count, token)
    return count, policy_id, resume


def _unknown_option(token: str) -> TickCommandError:
    return TickCommandError(
        f"unknown option {token!r} (options: --policy ID, --resume)",
        rule="command.unknown_option",
        token=token,
    )


def _once(seen: set[str], name: str, token: str) -> None:
    if name in seen:
        raise TickCommandError(f"option {name} given twice", rule="command.duplicate_option", token=token)
    seen.add(name)


def _resume_flag(token: str) -> bool:
    if "=" in token:  # --resume=...
        raise TickCommandError(
            f"--resume takes no value: {token!r}", rule="command.option_takes_no_value", token=token
        )
    return True


def _option_value(rest: Iterator[str], token: str) -> str:
    """The token after ``--policy``, which is its value."""
    value = next(rest, None)
    if value is None:
        raise TickCommandError("--policy needs a policy id", rule="command.missing_value", token=token)
    return value


def _only_count(count: int | None, token: str) -> int:
    if count is not None:
        raise TickCommandError(
            f"unexpected argument {token!r}: /tick takes at most one count",
            rule="command.extra_argument",
            token=token,
        )
    return _count(token)


def _policy_id(value: str) -> str:
    if not is_valid_policy_id(value):
        raise TickCommandError(
            f"invalid policy id {value!r}: an ASCII letter, then at most 63 ASCII letters, "
            "digits, '.', '_' or '-'",
            rule="command.invalid_policy_id",
            token=value,
        )
    return value


def _count(token: str) -> int:
    if not _INTEGER.fullmatch(token):
        raise TickCommandError(
            f"count {token!r} is not an integer: write a whole number from {MIN_COUNT} to {MAX_COUNT} "
            "in ASCII digits",
            rule="command.count_not_integer",
            token=token,
        )
    digits = token.lstrip("-").lstrip("0") or "0"
    # Compare lengths first: int() of a huge digit string is slow, and Python caps it at 4,300.
    in_range = not token.startswith("-") and len(digits) <= 3 and MIN_COUNT <= int(digits) <= MAX_COUNT
    if not in_range:
        raise TickCommandError(
            f"count {token[:20]!r} is out of range: it must be from {MIN_COUNT} to {MAX_COUNT}",
            rule="command.count_out_of_range",
            token=token,
        )
    return int(digits)
