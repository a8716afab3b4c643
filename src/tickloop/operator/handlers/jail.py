"""The workspace jail: every path a build is handed must resolve inside one directory.

The rules are strict on purpose, so that each is easy to state: a path is relative, uses ``/`` as its
only separator, has no ``..`` component, every component is at most 255 bytes of the portable filename
set (letters, digits, ``._+@=,-``: no unicode look-alikes of ``.`` or ``/``), and the whole resolves,
symlinks followed, to a place inside the jail. It is a policy check on what the operator asks for, not a
sandbox: a build it starts can still do anything its own code does.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

from tickloop.errors import HandlerError, JailError

MAX_PATH_CHARS = 1024
MAX_COMPONENT_BYTES = 255
MAX_ARGS = 64
MAX_ARG_CHARS = 4096
_PORTABLE = re.compile(r"[A-Za-z0-9._+@=,-]+")
_PRINTABLE = re.compile(r"[\x20-\x7e]*")


def jail_root(configured: str) -> Path:
    """The jail directory with symlinks resolved; refuses an empty setting or a missing directory."""
    if not configured:
        raise HandlerError("handlers.workspace.jail is empty: configure a workspace directory first")
    root = Path(os.path.realpath(Path(configured).expanduser()))
    if not root.is_dir():
        raise HandlerError(f"handlers.workspace.jail: {root} is not a directory")
    return root


def resolve_in_jail(jail: Path, raw: object, *, where: str, base: Path | None = None) -> Path:
    """The real path of ``raw`` (relative to ``base``, a directory in the jail; default the jail root).

    Raises JailError naming ``where`` if the path could leave the jail.
    """
    if not isinstance(raw, str) or not raw or len(raw) > MAX_PATH_CHARS:
        raise JailError(f"{where}: a path must be text of 1 to {MAX_PATH_CHARS} characters")
    if raw.startswith(("/", "~")):
        raise JailError(f"{where}: {raw[:80]!r} is absolute; give a path relative to the workspace")
    for part in raw.removesuffix("/").split("/"):
        _check_component(part, raw, where)
    target = Path(os.path.realpath((base or jail) / raw))
    if target != jail and not target.is_relative_to(jail):
        raise JailError(f"{where}: {raw[:80]!r} resolves outside the workspace (through a symlink)")
    return target


def _check_component(part: str, raw: str, where: str) -> None:
    if part == "..":
        raise JailError(f"{where}: {raw[:80]!r} has a '..' component")
    if part == "":
        raise JailError(f"{where}: {raw[:80]!r} has an empty component ('//')")
    if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
        raise JailError(f"{where}: a component of {raw[:40]!r}… is longer than {MAX_COMPONENT_BYTES} bytes")
    if not _PORTABLE.fullmatch(part):
        raise JailError(
            f"{where}: component {part[:80]!r} uses characters outside the portable set [A-Za-z0-9._+@=,-]"
        )


def check_argv(
    jail: Path, argv: object, *, cwd: Path, programs: Sequence[str], path: str | None
) -> list[str]:
    """Validate a build's argv: an allowed program, then every argument that could name a file
    (path-like, or naming an existing entry in ``cwd``, such as a symlink) must resolve inside the jail."""
    if not isinstance(argv, list) or not 1 <= len(argv) <= MAX_ARGS:
        raise HandlerError(f"payload.argv must be a list of 1 to {MAX_ARGS} strings")
    for index, arg in enumerate(argv):
        if not isinstance(arg, str) or len(arg) > MAX_ARG_CHARS or not _PRINTABLE.fullmatch(arg):
            raise JailError(
                f"argv[{index}] must be printable ASCII text of at most {MAX_ARG_CHARS} characters"
            )
    resolved = [_program(jail, cwd, argv[0], programs, path)]
    for index, arg in enumerate(argv[1:], start=1):
        for candidate in _path_candidates(arg, cwd):
            resolve_in_jail(jail, candidate, where=f"argv[{index}]", base=cwd)
        resolved.append(arg)
    return resolved


def _program(jail: Path, cwd: Path, program: str, programs: Sequence[str], path: str | None) -> str:
    if program in programs:
        found = program if program.startswith("/") else shutil.which(program, path=path)
        if not found:
            raise HandlerError(f"argv[0]: {program!r} is allowed but not found on the build's PATH")
        return found
    if "/" in program and not program.startswith("/"):
        script = resolve_in_jail(jail, program, where="argv[0]", base=cwd)
        if not script.is_file():
            raise HandlerError(f"argv[0]: {program!r} is not a file in the workspace")
        return str(script)
    raise JailError(
        f"argv[0]: {program[:80]!r} is not in handlers.workspace.programs and not a script in the workspace"
    )


def _path_candidates(arg: str, cwd: Path) -> list[str]:
    """The parts of ``arg`` that could name a file: itself, ``--opt=VALUE``, ``VAR=VALUE``, ``-IVALUE``;
    kept if path-like or if they name something that exists (a bare symlink name can point out)."""
    parts = [arg]
    if "=" in arg:
        parts.append(arg.split("=", 1)[1])
    if arg.startswith("-") and not arg.startswith("--") and len(arg) > 2:
        parts.append(arg[2:])
    return [part for part in parts if _path_like(part) or (part and os.path.lexists(cwd / part))]


def _path_like(text: str) -> bool:
    return "/" in text or text.startswith("~") or text == ".."
