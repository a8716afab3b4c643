"""The SQLite backend: the embedded default for one machine (stdlib ``sqlite3``)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta
from typing import Any, ClassVar

from tickloop.errors import ConflictError, NotFoundError, StoreBusyError, StoreError
from tickloop.operator.store._rows import iso
from tickloop.operator.store._sql import Tx, load_queries, migrations
from tickloop.operator.store.sqlstore import SqlStore
from tickloop.system import pid_alive

#: How long a writer waits for another process's write lock before giving up (milliseconds).
BUSY_TIMEOUT_MS = 30_000
#: What a file URI keeps as it is (the rest is percent-encoded): ``pathlib``'s choice for ``as_uri``.
_URI_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~/")
_RECORD = "INSERT INTO tickloop_migrations VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))"


class SQLiteStore(SqlStore):
    """A store in one SQLite file, shared safely by many one-shot processes on one machine.

    ``path`` is kept as ``str``: a one-shot tick never imports pathlib (tickloop.dirs says why)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        url: str | None = None,
        migrate: bool = True,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        create: bool = True,
    ) -> None:
        self.path = os.fspath(path)
        self.url = url or f"sqlite://{self.path}"
        self.busy_timeout_ms = busy_timeout_ms
        self._queries = load_queries("sqlite")
        # One connection per store; the lock keeps a threaded caller from interleaving transactions.
        self._lock = threading.RLock()
        self._readers: list[SqlStore] = []  #: loop readers, closed with this store
        self._ensure_file(self.path, create=create)
        self._conn = self._connect(self.path)
        if migrate:
            self.migrate()

    def _ensure_file(self, path: str, *, create: bool) -> None:
        """Make the file (0600, in 0700 directories) when ``create``; else it must exist."""
        if create:
            _create_private(path, self.url)
        elif not os.path.isfile(path):
            raise StoreError(_missing(path, self.url))

    def _connect(self, path: str) -> sqlite3.Connection:
        try:
            # mode=rw: the file exists by now (made 0600 above); connecting never creates one, so a
            # file removed meanwhile is an error rather than a new, empty, world-readable store.
            # isolation_level=None: we issue BEGIN ourselves, so every write can be BEGIN IMMEDIATE.
            conn = sqlite3.connect(
                f"{_file_uri(path)}?mode=rw",
                uri=True,
                isolation_level=None,
                check_same_thread=False,
                timeout=self.busy_timeout_ms / 1000,
            )
            conn.row_factory = sqlite3.Row
            # WAL: readers never block the writer and the writer never blocks readers, so a monitor
            # or a CLI listing can read while a tick writes.
            conn.execute("PRAGMA journal_mode=WAL")
            # busy_timeout: a second process waits for the write lock instead of failing at once.
            conn.execute(f"PRAGMA busy_timeout={self.busy_timeout_ms}")
            # foreign_keys: SQLite leaves them off by default; every row must belong to a profile.
            conn.execute("PRAGMA foreign_keys=ON")
            # synchronous=FULL: a commit is fsynced before it returns. DESIGN.md's contract is that a
            # record is durable before anything acts on it; an executor acts on its claim at once,
            # and NORMAL could lose the last commits (a claim, a spend) to a power cut.
            conn.execute("PRAGMA synchronous=FULL")
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open SQLite store {self.url}: {exc}") from None
        return conn

    def close(self) -> None:
        for reader in self._readers:
            reader.close()
        with self._lock:
            self._conn.close()

    def loop_reader(self, timeout_s: float) -> SqlStore | None:
        from tickloop.operator.store.sqlite_reader import SQLiteLoopReader  # noqa: PLC0415

        reader = SQLiteLoopReader(self.path, url=self.url, timeout_s=timeout_s)
        self._readers.append(reader)
        return reader

    def abandon_transaction(self) -> None:
        # The lock is re-entrant and the handler runs on the interrupted thread, so it already holds
        # it; the interrupted frame never resumes (the process exits), so its COMMIT never runs.
        # That frame may have just stepped a write's `... RETURNING` without fetching its rows yet.
        # ROLLBACK still works then and frees the write lock, but the statement stays in progress and
        # SQLite refuses every later COMMIT on this connection ("SQL statements in progress"), so the
        # last writes (the progress row, the tick lock's release) go through a fresh connection.
        with self._lock:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            self._conn = self._connect(self.path)  # the old one is left to the process's exit

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[Tx]:
        with self._lock:
            try:
                self._begin_immediate() if begin == "BEGIN IMMEDIATE" else self._conn.execute(begin)
            except sqlite3.Error as exc:
                why = f"SQLite store {self.url}: cannot begin a transaction: {exc}"
                raise (StoreBusyError(why) if _busy(exc) else StoreError(why)) from None
            try:
                yield Tx(self._conn, self._queries, iso, _translate)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._conn.execute("ROLLBACK")
                raise StoreError(f"SQLite store {self.url}: commit failed: {exc}") from None

    def _begin_immediate(self) -> None:
        """BEGIN IMMEDIATE, waiting for another process's write lock in short, jittered steps.

        SQLite's own busy handler sleeps 1, 2, 5, 10, ... ms between tries, far longer than a write
        here holds the lock (a fraction of a millisecond), so contending processes would mostly
        sleep while the database sits idle. Only this BEGIN waits our way (busy_timeout is 0 just
        for it); every other statement keeps SQLite's busy_timeout. The deadline uses the
        monotonic clock: it bounds waiting, it is not business time.
        """
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        delay = 0.0001
        self._conn.execute("PRAGMA busy_timeout=0")
        try:
            while True:
                try:
                    self._conn.execute("BEGIN IMMEDIATE")
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or time.monotonic() > deadline:
                        raise
                else:
                    return
                import random  # noqa: PLC0415  (only a contended BEGIN pays for it)

                time.sleep(delay * (0.5 + random.random()))  # noqa: S311  (jitter, not secrets)
                delay = min(delay * 2, 0.004)
        finally:
            self._conn.execute(f"PRAGMA busy_timeout={self.busy_timeout_ms}")

    def _write(self) -> AbstractContextManager[Tx]:
        # BEGIN IMMEDIATE takes the write lock before the first read, so a read-then-write (a claim,
        # a spend) can never be overtaken between its SELECT and its UPDATE by another process.
        return self._transaction("BEGIN IMMEDIATE")

    def _read(self) -> AbstractContextManager[Tx]:
        return self._transaction("BEGIN")

    def _fts_query(self, tokens: list[str]) -> str:
        # Each word quoted as an FTS5 string: implicit AND, and no word is ever an operator.
        return " ".join(f'"{token}"' for token in tokens)

    # -- migrations ---------------------------------------------------------------------------------

    def migrate(self, *, target: int | None = None) -> list[int]:
        applied = []
        current = self.schema_version()  # a plain read: an up-to-date store takes no write lock
        for version, name, sql in migrations("sqlite", after=current):
            if target is not None and version > target:
                break
            if self._apply(version, name, sql):
                applied.append(version)
        return applied

    def _apply(self, version: int, name: str, sql: str) -> bool:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS tickloop_migrations "
                    "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
                )
                done = self._conn.execute("SELECT 1 FROM tickloop_migrations WHERE version = ?", (version,))
                if done.fetchone() is None:
                    for statement in split_script(sql):
                        self._conn.execute(statement)
                    self._conn.execute(_RECORD, (version, name))
                    self._conn.execute("COMMIT")
                    return True
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._conn.execute("ROLLBACK")
                raise StoreError(
                    f"SQLite store {self.url}: migration {version:04d}_{name} failed: {exc}"
                ) from None
            return False

    def schema_version(self) -> int:
        with self._lock:
            try:
                row = self._conn.execute("SELECT MAX(version) FROM tickloop_migrations").fetchone()
            except sqlite3.OperationalError:
                return 0
            return int(row[0] or 0)

    # -- tick locks ---------------------------------------------------------------------------------

    @contextmanager
    def tick_lock(
        self,
        profile: str,
        tick_kind: str,
        *,
        owner: str,
        now: datetime,
        lease: timedelta = timedelta(hours=1),
    ) -> Iterator[bool]:
        held = self._take_tick_lock(profile, tick_kind, owner=owner, now=now, lease=lease)
        if held != 1 and self._reclaim_dead_holder(profile, tick_kind):
            held = self._take_tick_lock(profile, tick_kind, owner=owner, now=now, lease=lease)
        try:
            yield held == 1
        finally:
            if held == 1:
                with self._write() as tx:
                    tx.run("drop_tick_lock", profile=profile, tick_kind=tick_kind, owner=owner)

    def _take_tick_lock(
        self, profile: str, tick_kind: str, *, owner: str, now: datetime, lease: timedelta
    ) -> int:
        with self._write() as tx:
            return int(
                tx.run(
                    "take_tick_lock",
                    profile=profile,
                    tick_kind=tick_kind,
                    owner=owner,
                    now=now,
                    expires_at=now + lease,
                )
            )

    def release_tick_lock(self, profile: str, tick_kind: str, *, owner: str) -> None:
        with self._write() as tx:
            tx.run("drop_tick_lock", profile=profile, tick_kind=tick_kind, owner=owner)

    def _reclaim_dead_holder(self, profile: str, tick_kind: str) -> bool:
        """A holder killed by SIGKILL never releases its lock; if it ran on this host (owner
        ``host:pid:...``) and that pid is gone, take the lock back instead of waiting out the lease."""
        with self._read() as tx:
            row = tx.one("tick_lock_owner", profile=profile, tick_kind=tick_kind)
        owner = str(row["owner"]) if row is not None else ""
        host, _, rest = owner.partition(":")
        pid_text = rest.partition(":")[0]
        if host != os.uname().nodename or not pid_text.isdigit() or pid_alive(int(pid_text)):
            return False
        with self._write() as tx:
            return (
                int(tx.run("reclaim_tick_lock", profile=profile, tick_kind=tick_kind, dead_owner=owner)) == 1
            )


def _file_uri(path: str) -> str:
    """``file:///abs/path``, percent-encoded, for ``sqlite3.connect(..., uri=True)``."""
    raw = os.fsencode(os.path.abspath(path))
    return "file://" + "".join(chr(b) if b in _URI_SAFE else f"%{b:02X}" for b in raw)


def _parent(path: str) -> str:
    """The folder ``path`` is in (``.`` for a bare name), as ``Path.parent`` says."""
    return os.path.dirname(path) or "."


def _missing(path: str, url: str) -> str:
    """Which part of a store's path is missing, and the commands that create it."""
    where = f"the file {path} does not exist"
    if not os.path.isdir(_parent(path)):
        missing = _parent(path)
        while not os.path.isdir(_parent(missing)) and _parent(missing) != missing:
            missing = _parent(missing)
        where = f"the directory {missing} does not exist"
    elif os.path.exists(path):
        where = f"{path} is not a regular file"
    return (
        f"no SQLite store at {url}: {where}; create it with `tickloop operator init` "
        "(or `tickloop operator migrate`)"
    )


def _create_private(path: str, url: str) -> None:
    """Make the store's missing directories (0700) and its file (0600); an existing one is kept."""
    try:
        missing = []
        parent = _parent(path)
        while not os.path.exists(parent):
            missing.append(parent)
            parent = _parent(parent)
        for directory in reversed(missing):
            with contextlib.suppress(FileExistsError):  # another process made it meanwhile
                os.mkdir(directory, mode=0o700)
                os.chmod(directory, 0o700)  # mkdir's mode is cut by the umask; never widened by it
        # The WAL and shared-memory files SQLite makes later take this file's mode.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        os.close(fd)
    except FileExistsError:
        return
    except OSError as exc:
        raise StoreError(f"cannot create SQLite store {url}: {exc}") from None


def split_script(sql: str) -> list[str]:
    """Statements of a migration script, whole (a trigger's inner ``;`` does not end it).

    ``executescript`` would commit on its own, outside our BEGIN IMMEDIATE; this keeps each
    migration and its record in one transaction.
    """
    statements, pending = [], ""
    for line in sql.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    if pending.strip() and not all(
        part.strip().startswith("--") or not part.strip() for part in pending.splitlines()
    ):
        raise StoreError(f"migration ends with an incomplete statement: {pending.strip()[:80]!r}")
    return statements


def _translate(exc: Exception, params: Mapping[str, Any]) -> StoreError | None:
    if isinstance(exc, sqlite3.IntegrityError):
        if "FOREIGN KEY" in str(exc):
            return NotFoundError(
                f"profile {params.get('profile')!r} (or a row this refers to) does not exist; "
                "create the profile with `tickloop operator init`"
            )
        return ConflictError(f"the store refused the write: {exc}")
    if isinstance(exc, sqlite3.Error):
        return (StoreBusyError if _busy(exc) else StoreError)(f"SQLite store: {exc}")
    return None


def _busy(exc: sqlite3.Error) -> bool:
    """Another connection held the store past the busy timeout, or a read ran past its deadline."""
    return isinstance(exc, sqlite3.OperationalError) and any(
        word in str(exc) for word in ("locked", "busy", "interrupted")
    )


class SQLiteMemoryStore(SQLiteStore):
    """``memory://``: the SQLite backend on an in-memory database private to this store (the same
    migrations, queries and rules as a file), gone when the store is closed or the process ends.

    A plain ``:memory:`` database, so no other connection can ever open it. Threads share the one
    connection under the store's lock, as with a file. ``abandon_transaction``'s fresh connection
    gets the committed data copied over (``serialize``/``deserialize``): nothing else can reach it.
    """

    #: A migrated, empty database, built once per process: a new store copies it (``deserialize``,
    #: ~0.1 ms) instead of running every migration again (~3 ms; tests open thousands of stores).
    _template: ClassVar[sqlite3.Connection | None] = None
    _template_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, *, url: str = "memory://", migrate: bool = True) -> None:
        super().__init__(":memory:", url=url, migrate=False)
        if migrate:  # the copy is fully migrated: nothing is left to apply
            self._conn.deserialize(self._migrated())

    @classmethod
    def _migrated(cls) -> bytes:
        with cls._template_lock:
            if cls._template is None:
                built = cls(migrate=False)
                built.migrate()
                cls._template = built._conn
            return cls._template.serialize()

    def _ensure_file(self, path: str, *, create: bool) -> None:
        """No file: the database lives in this process only (a file named ``:memory:`` was once made)."""

    def loop_reader(self, timeout_s: float) -> None:
        """None: the database lives on this store's one connection, so reads take the lock too."""

    def _connect(self, path: str) -> sqlite3.Connection:  # noqa: ARG002  (always a new :memory:)
        try:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            old: sqlite3.Connection | None = getattr(self, "_conn", None)
            if old is not None:  # abandon_transaction: the old connection is rolled back, keep its data
                conn.deserialize(old.serialize())
            conn.row_factory = sqlite3.Row
            # Journal mode, fsync and busy waits mean nothing in memory; foreign keys do.
            conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite store {self.url}: {exc}") from None
        return conn
