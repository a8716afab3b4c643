"""The tick lock across real processes, including a holder that is killed mid-tick."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest
from bench.store_load import T0, start_process

from tickloop.operator.store import open_store

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated store URL on each real backend."""
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'lock.db'}"
    found: str = request.getfixturevalue("pg_url")
    open_store(found).close()
    return found


def _wait_for(marker: Path) -> str:
    deadline = time.monotonic() + 30
    while not marker.exists() or not marker.read_text(encoding="utf-8"):
        assert time.monotonic() < deadline, "the lock holder never started"
        time.sleep(0.02)
    return marker.read_text(encoding="utf-8")


def _eventually_free(url: str) -> bool:
    """The server drops a dead session's locks once it sees the disconnect; give it a moment."""
    deadline = time.monotonic() + 10
    with open_store(url) as store:
        while time.monotonic() < deadline:
            with store.tick_lock("p", "fast", owner="tick-3", now=T0) as held:
                if held:
                    return True
            time.sleep(0.05)
    return False


def test_second_process_is_refused_then_recovers_after_a_kill(url: str, tmp_path: Path) -> None:
    """While one process holds (profile, kind) another is refused; a killed holder frees it
    (at once on PostgreSQL, when its lease runs out on SQLite)."""
    open_store(url).close()
    marker = tmp_path / "held"
    args = {
        "url": url,
        "profile": "p",
        "kind": "fast",
        "owner": "tick-1",
        "marker": str(marker),
        "hold_s": 60,
    }
    holder = start_process("lock", args)
    try:
        assert _wait_for(marker) == "held"
        with open_store(url) as store:
            with store.tick_lock("p", "fast", owner="tick-2", now=T0) as held:
                assert not held
            with store.tick_lock("p", "slow", owner="tick-2", now=T0) as other_kind:
                assert other_kind
    finally:
        holder.kill()
        holder.communicate()
    if url.startswith("postgres"):
        assert _eventually_free(url), "a killed holder's advisory lock was not released"
    after_lease = T0 + timedelta(hours=1, seconds=1)
    with open_store(url) as store, store.tick_lock("p", "fast", owner="tick-3", now=after_lease) as held:
        assert held


def test_sqlite_reclaims_a_lock_whose_holder_died_on_this_host(tmp_path: Path) -> None:
    """A tick killed by SIGKILL on this host does not block its kind for the whole lease: the next
    tick sees the holder's pid is gone and takes the lock; a live holder is never displaced."""
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    with subprocess.Popen(["true"]) as gone:
        gone.wait()
    host = os.uname().nodename
    with open_store(f"sqlite:///{tmp_path / 's.db'}") as store:
        store.create_profile("p", now=T0)
        live = store.tick_lock("p", "fast", owner=f"{host}:{os.getpid()}:live", now=T0)
        assert live.__enter__()  # held by a live process (this one), never released here
        with store.tick_lock("p", "fast", owner=f"{host}:{os.getpid()}:other", now=T0) as second:
            assert not second
        killed = store.tick_lock("p", "slow", owner=f"{host}:{gone.pid}:killed", now=T0)
        assert killed.__enter__()  # entered and never left: what a SIGKILLed tick leaves behind
        with store.tick_lock("p", "slow", owner=f"{host}:{os.getpid()}:next", now=T0) as taken:
            assert taken
        for held in (killed, live):  # tidy up while the store is open
            held.__exit__(None, None, None)
