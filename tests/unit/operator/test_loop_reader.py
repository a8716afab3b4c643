"""A SQLite store's loop reader: the dashboard's reads on its event loop, on a real file.

What makes a read on the event loop safe is pinned here: the reader sees every committed write, never
waits for a writer (of this process or another), refuses to write, and gives up at its timeout with
``StoreBusyError`` when something still holds it (a process in exclusive locking mode, a statement
that runs on past the deadline).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import tickloop.operator.store.sqlite_reader as reader_module
from tickloop.errors import StoreBusyError, StoreError
from tickloop.operator.domain import NewProgress, Outcome
from tickloop.operator.store import Store, open_store

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
P = "r"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def store(db: Path) -> Iterator[Store]:
    with open_store(f"sqlite://{db}") as opened:
        opened.create_profile(P, now=NOW)
        yield opened


def _reader(store: Store, timeout_s: float = 3.0) -> Store:
    reader = store.loop_reader(timeout_s)
    assert reader is not None
    return reader


def test_a_loop_reader_sees_every_committed_write_and_refuses_to_write(store: Store) -> None:
    reader = _reader(store)
    assert reader.get_profile(P).name == P
    store.create_profile("later", now=NOW)
    assert {p.name for p in reader.list_profiles()} == {P, "later"}
    with pytest.raises(StoreError, match="only reads"):
        reader.create_profile("never", now=NOW)
    assert {p.name for p in store.list_profiles()} == {P, "later"}


def test_a_writer_waiting_for_the_lock_never_holds_the_loop_reader(store: Store, db: Path) -> None:
    """Another process holds the write lock; this store's write waits for it in a thread, holding the
    store's own lock; the reader still answers at once, with what was committed before."""
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("UPDATE profiles SET timezone = 'Europe/Berlin'")
    writer = threading.Thread(target=lambda: _write_ignoring_busy(store), daemon=True)
    writer.start()
    try:
        time.sleep(0.2)  # the writer is inside its BEGIN IMMEDIATE now, the store's lock held
        reader = _reader(store)
        started = time.monotonic()
        assert reader.get_profile(P).timezone == "UTC"
        assert time.monotonic() - started < 1.0
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        writer.join(timeout=30)
    assert not writer.is_alive()


def _write_ignoring_busy(store: Store) -> None:
    store.record_progress(P, NewProgress("fast", Outcome.DONE, NOW, NOW))


def test_no_process_can_lock_an_open_loop_reader_out(store: Store, db: Path) -> None:
    """Exclusive locking mode, the one way to keep WAL readers out, needs every other connection
    closed: while the reader is open another process cannot take it, and the reader reads on."""
    reader = _reader(store, timeout_s=0.4)
    holder = sqlite3.connect(db, isolation_level=None, timeout=0.2)
    try:
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            holder.execute("BEGIN EXCLUSIVE")
        assert reader.get_profile(P).name == P
    finally:
        holder.close()


def test_a_read_still_running_at_its_deadline_is_interrupted(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The progress handler ends a statement past the read's deadline (the clock jumps past it at once,
    as a statement that runs too long would see), with StoreBusyError; the next read is unharmed."""
    for i in range(300):
        at = NOW + timedelta(seconds=i)
        store.record_progress(P, NewProgress("fast", Outcome.DONE, at, at, detail="x" * 50))
    reader = _reader(store, timeout_s=1.0)
    assert len(reader.progress_filtered(P, limit=300)) == 300
    calls = iter([0.0])  # _read's deadline: 0 + 1 s; every later look sees 10 s

    monkeypatch.setattr(reader_module.time, "monotonic", lambda: next(calls, 10.0))
    with pytest.raises(StoreBusyError, match="interrupted"):
        reader.progress_filtered(P, limit=300)
    monkeypatch.undo()
    assert len(reader.progress_filtered(P, limit=300)) == 300


def test_closing_the_store_closes_its_loop_readers(db: Path) -> None:
    with open_store(f"sqlite://{db}") as opened:
        opened.create_profile(P, now=NOW)
        reader = _reader(opened)
    with pytest.raises(StoreError):
        reader.get_profile(P)


def test_a_store_in_memory_offers_no_loop_reader() -> None:
    """One connection holds the whole database: a second reader cannot exist, so pages read in a thread."""
    with open_store("memory://") as opened:
        assert opened.loop_reader(3.0) is None
