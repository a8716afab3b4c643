"""SQLite reads for an event loop: a second connection to the same file that only reads, with a deadline.

The dashboard reads on its event loop where it can: a SQLite read takes well under a millisecond, and a
trip to a worker thread costs as much again (the issue 30 measurements). What makes that safe:

- the reader has its own connection, so it never waits for a write of this process (those hold the
  writing store's lock, perhaps for the 30 s busy timeout);
- in WAL mode no writer of any process blocks a reader, and while the reader is open no process can
  switch the file to exclusive locking mode (the one way to lock WAL readers out);
- what can still hold a read (a statement that runs long, another connection recovering the WAL) is
  bounded: a progress handler and the busy timeout both end a read transaction ``timeout_s`` after
  it began, with ``StoreBusyError``.
"""

from __future__ import annotations

import math
import sqlite3
import time
from contextlib import AbstractContextManager
from os import PathLike

from tickloop.errors import StoreError
from tickloop.operator.store._sql import Tx
from tickloop.operator.store.sqlite import SQLiteStore
from tickloop.operator.store.sqlstore import SqlStore

#: SQLite virtual-machine steps between two looks at the deadline (some microseconds of work)
PROGRESS_STEPS = 1_000


class SQLiteLoopReader(SQLiteStore):
    """The store's file through a connection that only reads (``query_only``), each read transaction
    bounded by ``timeout_s``. For one thread: the event loop's."""

    def __init__(self, path: str | PathLike[str], *, url: str, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._deadline = math.inf
        busy_ms = max(1, math.ceil(timeout_s * 1000))
        super().__init__(path, url=url, migrate=False, busy_timeout_ms=busy_ms, create=False)

    def _connect(self, path: str) -> sqlite3.Connection:
        conn = super()._connect(path)
        try:
            conn.execute("PRAGMA query_only=ON")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite store {self.url} for reading: {exc}") from None
        conn.set_progress_handler(self._past_deadline, PROGRESS_STEPS)
        return conn

    def _past_deadline(self) -> int:
        """Non-zero interrupts the running statement (SQLite's progress handler contract)."""
        return int(time.monotonic() > self._deadline)

    def loop_reader(self, timeout_s: float) -> SqlStore | None:
        del timeout_s
        return self

    def _read(self) -> AbstractContextManager[Tx]:
        self._deadline = time.monotonic() + self.timeout_s
        return super()._read()

    def _write(self) -> AbstractContextManager[Tx]:
        raise StoreError(f"SQLite store {self.url}: this connection only reads (a page's reader)")
