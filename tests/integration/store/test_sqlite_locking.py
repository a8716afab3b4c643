"""SQLite under a held write lock: writers wait, then fail clearly; readers are never blocked."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from bench.store_load import T0

from tickloop.errors import StoreError
from tickloop.operator.store.sqlite import SQLiteStore


def test_writer_gives_up_with_a_clear_error_and_readers_carry_on(tmp_path: Path) -> None:
    """While another process holds the write lock past the timeout, a write fails with a
    StoreError naming the store, and reads still answer (WAL)."""
    path = tmp_path / "locked.db"
    store = SQLiteStore(path, busy_timeout_ms=300)
    store.create_profile("p", now=T0)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        with pytest.raises(StoreError, match=r"cannot begin a transaction: database is locked") as caught:
            store.add_task("p", "t", now=T0)
        assert 0.25 <= time.monotonic() - started < 5
        assert str(path) in str(caught.value)
        assert [p.name for p in store.list_profiles()] == ["p"]
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert store.add_task("p", "t", now=T0).title == "t"
    store.close()
