"""The dashboard's locks: one-time login tokens, sessions, CSRF tokens and the login rate limit.

Pure Python (no web framework), so each rule is tested without HTTP.

- **Login tokens** are one-time: ``mint_login_token`` writes only the token's ``sha256:`` hash (and
  its expiry) to a 0600 file in the state dir; the token itself is shown once, inside the login URL
  ``tickloop web`` prints. Logging in consumes it. ``tickloop web --login-url`` mints another one
  for a second device while the server runs (the server reads the file at each attempt).
- **Sessions** live in the server's memory: a random id in an HttpOnly, SameSite=Strict cookie,
  a CSRF token of its own, and a fixed lifetime. Restarting the server logs everyone out.
- **Login attempts** are rate-limited per client address and overall: a token is 256 bits, so the
  limit is about noise and log volume, not guessing, and a correct token is never refused by it.
"""

from __future__ import annotations

import fcntl
import hmac
import json
import os
import secrets
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from tickloop.sha256 import sha256

#: the file holding the hashes of unused login tokens, inside the dashboard's state dir
TOKEN_FILE = "login-tokens.json"  # noqa: S105  (a file name; it holds hashes only)
#: how long a printed login URL works
LOGIN_TTL = timedelta(hours=24)
#: how long a session lasts after login
SESSION_TTL = timedelta(hours=12)
#: failed logins allowed per client address within ``FAIL_WINDOW``, and in total
FAILS_PER_CLIENT = 5
FAILS_TOTAL = 50
FAIL_WINDOW = timedelta(minutes=15)


def token_hash(token: str) -> str:
    """``sha256:`` + hex digest of the token: what the token file keeps."""
    return "sha256:" + sha256(token.encode("utf-8")).hexdigest()


def _read(path: Path) -> list[dict[str, str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []


def _write(path: Path, entries: list[dict[str, str]]) -> None:
    """Replace the file atomically, created 0600 (never readable by another user, even briefly)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(entries, out)
        out.flush()
        os.fsync(out.fileno())
    tmp.chmod(0o600)
    tmp.replace(path)


class TokenStore:
    """The hashed one-time login tokens of one dashboard state dir."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / TOKEN_FILE
        self._lock = threading.Lock()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """This process's threads and every other process (``--login-url`` runs, the server) in turn:
        without it two concurrent mints lost one token, or crashed on each other's temporary file."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            with self._lock:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
        finally:
            os.close(fd)  # closing drops the flock

    def mint(self, *, now: datetime) -> str:
        """A new one-time token; only its hash is written. Expired entries are dropped."""
        token = secrets.token_urlsafe(32)
        with self._locked():
            live = [e for e in _read(self.path) if e.get("expires", "") > now.isoformat()]
            live.append({"hash": token_hash(token), "expires": (now + LOGIN_TTL).isoformat()})
            _write(self.path, live)
        return token

    def consume(self, token: str, *, now: datetime) -> bool:
        """True, once, for an unexpired token; the entry is removed so the URL works only once."""
        wanted = token_hash(token)
        with self._locked():
            entries = _read(self.path)
            found = [e for e in entries if hmac.compare_digest(e.get("hash", ""), wanted)]
            if not found or found[0].get("expires", "") <= now.isoformat():
                return False
            _write(self.path, [e for e in entries if e is not found[0]])
        return True


@dataclass(slots=True)
class Session:
    """One logged-in browser."""

    id: str
    csrf: str
    expires: datetime


@dataclass(slots=True)
class Sessions:
    """The server's sessions, in memory."""

    ttl: timedelta = SESSION_TTL
    _by_id: dict[str, Session] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, *, now: datetime) -> Session:
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), now + self.ttl)
        with self._lock:
            self._by_id = {k: s for k, s in self._by_id.items() if s.expires > now}
            self._by_id[session.id] = session
        return session

    def get(self, session_id: str | None, *, now: datetime) -> Session | None:
        """The live session with this id, or None (unknown or expired)."""
        if not session_id:
            return None
        with self._lock:
            session = self._by_id.get(session_id)
            if session is not None and session.expires <= now:
                del self._by_id[session_id]
                return None
        return session

    def end(self, session_id: str) -> None:
        with self._lock:
            self._by_id.pop(session_id, None)


def csrf_ok(expected: str, given: str | None) -> bool:
    """Constant-time comparison; a missing token never matches."""
    return bool(given) and hmac.compare_digest(expected.encode(), (given or "").encode())


@dataclass(slots=True)
class RateLimit:
    """Failed login attempts in a sliding window, per client and in total."""

    per_client: int = FAILS_PER_CLIENT
    total: int = FAILS_TOTAL
    window: timedelta = FAIL_WINDOW
    _fails: dict[str, deque[datetime]] = field(default_factory=dict)
    _all: deque[datetime] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def blocked(self, client: str, *, now: datetime) -> timedelta | None:
        """How long ``client`` must wait before another attempt, or None when it may try now."""
        with self._lock:
            self._expire(now)
            mine = self._fails.get(client, deque())
            if len(mine) >= self.per_client:
                return mine[0] + self.window - now
            if len(self._all) >= self.total:
                return self._all[0] + self.window - now
        return None

    def failed(self, client: str, *, now: datetime) -> None:
        with self._lock:
            self._fails.setdefault(client, deque()).append(now)
            self._all.append(now)

    def _expire(self, now: datetime) -> None:
        cutoff = now - self.window
        while self._all and self._all[0] <= cutoff:
            self._all.popleft()
        for client in list(self._fails):
            fails = self._fails[client]
            while fails and fails[0] <= cutoff:
                fails.popleft()
            if not fails:
                del self._fails[client]
