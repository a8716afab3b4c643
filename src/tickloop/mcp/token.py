"""The HTTP transport's bearer tokens, one per agent by name, kept as hashes in a 0600 file in the state dir.

Only ``sha256:`` of each token is stored, so a token can be shown exactly once (when it is made)
and a copy of the state dir does not leak it. The file maps a name to its hash::

    {"tokens": {"default": {"hash": "sha256:...", "issued": "..."}, "claude-desktop": {...}}}

(the first version's ``{"hash": ..., "issued": ...}`` reads as the token ``default``). A running
server reads the file again whenever it changes (:class:`Keyring`), so rotating or revoking a token
takes effect on the next request, with no restart. ``Keyring.who`` compares in constant time.
"""

from __future__ import annotations

import fcntl
import hmac
import json
import os
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tickloop.errors import ConfigError, ValidationError
from tickloop.sha256 import sha256

FILE_NAME = "mcp-token.json"
DEFAULT_NAME = "default"
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def token_path(state_dir: Path | None = None) -> Path:
    """``$XDG_STATE_HOME/tickloop/mcp-token.json`` (tickloop.dirs) unless ``state_dir`` is given."""
    if state_dir is None:
        from tickloop.dirs import user_state_path  # noqa: PLC0415

        state_dir = user_state_path()
    return state_dir / FILE_NAME


def digest(token: str) -> str:
    """``sha256:`` + hex of the token's UTF-8 bytes."""
    return "sha256:" + sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def check_name(name: str) -> str:
    """``name`` if it can name a token (lower-case letters, digits, ``. _ -``; at most 64), else refuse."""
    if not _NAME.fullmatch(name):
        raise ValidationError(
            f"--name {name!r}: a token name is 1-64 lower-case letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (for example claude-desktop)"
        )
    return name


def issue(path: Path, *, name: str = DEFAULT_NAME, rotate: bool = False) -> str:
    """Make the token ``name``, store its hash at ``path`` (0600, replaced atomically), return it.

    Refuses (``ValidationError``) when ``name`` was already issued, unless ``rotate``: a token is
    shown once, and rotating makes the old one stop working."""
    check_name(name)
    token = secrets.token_urlsafe(32)
    with _locked(path):
        found = _entries(path)
        if name in found and not rotate:
            flag = "" if name == DEFAULT_NAME else f" --name {name}"
            raise ValidationError(
                f"the MCP token {name!r} was already issued ({path}); it is shown only once. "
                f"`tickloop mcp token{flag} --rotate` issues a new one (the old one stops working)"
            )
        issued = datetime.now(UTC).isoformat(timespec="seconds")
        _write(path, {**found, name: {"hash": digest(token), "issued": issued}})
    return token


def revoke(path: Path, name: str) -> None:
    """Remove the token ``name``: the next request that presents it gets 401."""
    with _locked(path):
        found = _entries(path)
        if name not in found:
            raise ValidationError(f"no MCP token is named {name!r}; `tickloop mcp token --list` shows them")
        _write(path, {k: v for k, v in found.items() if k != name})


def listing(path: Path) -> list[tuple[str, str]]:
    """``(name, issued)`` of every token, by name."""
    return sorted((name, str(entry.get("issued", ""))) for name, entry in _entries(path).items())


def stored(path: Path) -> dict[str, str]:
    """name -> ``sha256:`` hash of every issued token (empty when none was issued yet)."""
    return {name: entry["hash"] for name, entry in _entries(path).items()}


@dataclass
class Keyring:
    """The token file as a running server sees it: read again whenever the file changes."""

    path: Path
    _seen: tuple[int, int, int] | None = None
    _hashes: dict[str, bytes] = field(default_factory=dict)

    def who(self, presented: str) -> str | None:
        """The name of the token ``presented``, or None; every stored hash is compared (constant time)."""
        hashes = self._current()
        offered = digest(presented).encode("ascii", "replace")
        found = None
        for name, expected in hashes.items():
            if hmac.compare_digest(offered, expected):
                found = name
        return found

    def _current(self) -> dict[str, bytes]:
        try:
            info = self.path.stat()
        except FileNotFoundError:
            self._seen, self._hashes = None, {}
            return self._hashes
        seen = (info.st_ino, info.st_mtime_ns, info.st_size)
        if seen != self._seen:
            # a file made unreadable or corrupt while serving locks everyone out (fail closed)
            try:
                self._hashes = {k: v.encode("ascii") for k, v in stored(self.path).items()}
            except ConfigError:
                self._hashes = {}
            self._seen = seen
        return self._hashes


# -- the file -------------------------------------------------------------------------------------------


def _entries(path: Path) -> dict[str, dict[str, Any]]:
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if path.stat().st_mode & 0o077:
        raise ConfigError(f"{path} is readable by other users; `chmod 600 {path}` or rotate the token")
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    entries = _shape(value)
    if entries is None:
        raise ConfigError(f"{path} is not a tickloop MCP token file; remove it and `tickloop mcp token`")
    return entries


def _shape(value: Any) -> dict[str, dict[str, Any]] | None:
    if isinstance(value, dict) and "hash" in value and "tokens" not in value:
        value = {"tokens": {DEFAULT_NAME: value}}  # the first version's single token
    tokens = value.get("tokens") if isinstance(value, dict) else None
    if not isinstance(tokens, dict):
        return None
    for entry in tokens.values():
        hashed = entry.get("hash") if isinstance(entry, dict) else None
        if not isinstance(hashed, str) or not hashed.startswith("sha256:"):
            return None
    return tokens


def _write(path: Path, entries: dict[str, dict[str, Any]]) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    temp.unlink(missing_ok=True)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"tokens": entries}, out, sort_keys=True, indent=1)
        out.flush()
        os.fsync(out.fileno())
    temp.replace(path)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One writer at a time (two `tickloop mcp token` runs must not lose each other's token)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
