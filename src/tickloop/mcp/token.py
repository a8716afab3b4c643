"""The HTTP transport's bearer token: made on first use, kept as a hash in a 0600 file in the state dir.

Only ``sha256:`` of the token is stored, so the token can be shown exactly once (when it is made)
and a copy of the state dir does not leak it. ``check`` compares in constant time.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path

from tickloop.errors import ConfigError, ValidationError
from tickloop.sha256 import sha256

FILE_NAME = "mcp-token.json"


def token_path(state_dir: Path | None = None) -> Path:
    """``$XDG_STATE_HOME/tickloop/mcp-token.json`` (tickloop.dirs) unless ``state_dir`` is given."""
    if state_dir is None:
        from tickloop.dirs import user_state_path  # noqa: PLC0415

        state_dir = user_state_path()
    return state_dir / FILE_NAME


def digest(token: str) -> str:
    """``sha256:`` + hex of the token's UTF-8 bytes."""
    return "sha256:" + sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def issue(path: Path, *, rotate: bool = False) -> str:
    """Make a token, store its hash at ``path`` (0600, created atomically) and return the token.

    Refuses (``ValidationError``) when one was already issued, unless ``rotate``: a token is shown
    once, and rotating makes the old one stop working."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(32)
    record = json.dumps({"hash": digest(token), "issued": datetime.now(UTC).isoformat(timespec="seconds")})
    if rotate:
        temp = path.with_name(f".{path.name}.{os.getpid()}")
        _write_new(temp, record)
        temp.replace(path)
        return token
    try:
        _write_new(path, record)
    except FileExistsError:
        raise ValidationError(
            f"an MCP token was already issued ({path}); it is shown only once. "
            "`tickloop mcp token --rotate` issues a new one (the old one stops working)"
        ) from None
    return token


def _write_new(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


def stored(path: Path) -> str | None:
    """The stored ``sha256:`` hash, or None when no token was issued yet."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    if path.stat().st_mode & 0o077:
        raise ConfigError(f"{path} is readable by other users; `chmod 600 {path}` or rotate the token")
    try:
        value = json.loads(raw)["hash"]
    except (ValueError, KeyError, TypeError):
        raise ConfigError(f"{path} is not a tickloop MCP token file; `tickloop mcp token --rotate`") from None
    if not isinstance(value, str) or not value.startswith("sha256:"):
        raise ConfigError(f"{path} holds no sha256 token hash; `tickloop mcp token --rotate`")
    return value


def check(presented: str, expected_hash: str) -> bool:
    """True when ``presented`` is the token whose hash is ``expected_hash`` (constant time)."""
    return hmac.compare_digest(digest(presented).encode("ascii", "replace"), expected_hash.encode("ascii"))
