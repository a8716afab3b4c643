"""Durability off the event loop: lines are written at once and fsynced by worker threads.

By default every transcript and ledger append fsyncs before it returns, on the caller's thread. For
one chat that is right. For many sessions on one event loop it is not: while one session waits for
the disk, no other session runs (about 8 fsyncs a step; on a loaded disk or a network volume each
takes milliseconds). With an ``FsyncPool`` an agent's files write their lines at once (into the
page cache) and leave the fsync to a pool of threads, and the ``Agent`` awaits ``settle()`` at
every point where the protocol needs its records durable before something acts on them:

- before a queued input starts its turn: the ledger records that scheduled it (``tick_terminal``,
  ``tick_scheduled``, ``tick_enqueued``) are durable before the turn's first line is written;
- before a model's answer is read: the turn's input and the tool results (the request itself goes
  out at once and the fsyncs run while it is in flight: ``harness.ahead``);
- after a round's tool calls are recorded, before any of them runs;
- after a terminal is written, before any plugin observes it (the tick plugin schedules on it);
- when the agent closes, before the files are released.

A record is durable before any line that depends on it is even written (the kernel may write a
dirty page back at any time, so waiting only before the effect would not do). So the protocol's
order is unchanged; only the thread that waits for the disk is. A step costs three dependent fsyncs
(terminal, ledger, next input) instead of about eight on the event loop, and only the terminal's
delays the next request. Concurrent settles
of one file share one fsync (a group commit). ``fsync`` is per file, not per descriptor,
so the pool fsyncs through a read-only descriptor of its own.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from tickloop.harness.jsonl import RecordLog
from tickloop.harness.tick_ledger import LedgerSink

T = TypeVar("T")

#: ``LedgerFile(fsync_every=...)`` for a ledger whose fsyncs the pool makes: never on append
NEVER = 2**62


class FsyncPool:
    """Worker threads that wait for the disk, shared by every session of one process."""

    def __init__(self, workers: int = 16) -> None:
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tickloop-fsync")

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a worker thread (a blocking, durable write)."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def watch(self, path: Path) -> Watched:
        return Watched(path, self)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)


class Watched:
    """One file whose appends the pool makes durable; it starts dirty (its header was written)."""

    def __init__(self, path: Path, pool: FsyncPool) -> None:
        self.path, self._pool = path, pool
        self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        self.written, self.synced = 1, 0
        self._inflight: asyncio.Future[None] | None = None

    def wrote(self) -> None:
        """A line was written (not yet durable)."""
        self.written += 1

    async def settle(self) -> None:
        """Return once every line written so far is durable. Settles that arrive while an fsync is
        in flight wait for it, then share the next one (a group commit)."""
        while self.synced < self.written:
            if self._inflight is None:
                self._inflight = asyncio.ensure_future(self._fsync(self.written))
            await asyncio.shield(self._inflight)

    async def _fsync(self, target: int) -> None:
        # The state changes inside the task, before it is done: a settle never finds a finished
        # fsync still in flight (awaiting a done future does not yield, so that would spin).
        try:
            await self._pool.run(os.fsync, self._fd)
            self.synced = max(self.synced, target)
        finally:
            self._inflight = None

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class Durability:
    """One agent's files under an ``FsyncPool``: what ``Agent`` settles and finally closes."""

    def __init__(self, pool: FsyncPool) -> None:
        self.pool = pool
        self._watched: list[Watched] = []
        self._closers: list[Callable[[], None]] = []

    def watch(self, path: Path) -> Watched:
        watched = self.pool.watch(path)
        self._watched.append(watched)
        return watched

    def log(self, log: RecordLog, path: Path) -> DeferredLog:
        """Wrap a session's ``JsonlLog(fsync=False)``."""
        return DeferredLog(log, self.watch(path))

    def ledger(self, ledger: Any) -> DeferredLedger:
        """Wrap a ``LedgerFile`` opened with ``fsync_every=NEVER``: it is closed by ``aclose``."""
        self._closers.append(ledger.close)
        return DeferredLedger(ledger, self.watch(ledger.path))

    @property
    def dirty(self) -> bool:
        """Some line written to one of the agent's files is not yet known durable."""
        return any(w.synced < w.written for w in self._watched)

    async def settle(self) -> None:
        """Every line written so far to any of the agent's files is durable when this returns."""
        dirty = [w for w in self._watched if w.synced < w.written]  # most settles find nothing to do
        if len(dirty) == 1:
            await dirty[0].settle()
        elif dirty:
            await asyncio.gather(*(w.settle() for w in dirty))

    async def aclose(self) -> None:
        """Settle, then release the files (a ledger's close runs on a worker thread)."""
        try:
            await self.settle()
            for close in self._closers:
                await self.pool.run(close)
        finally:
            for watched in self._watched:
                watched.close()


class DeferredLog:
    """A session's transcript: appends write at once; ``Durability`` makes them durable."""

    def __init__(self, log: RecordLog, watched: Watched) -> None:
        self._log, self._watched = log, watched
        self.path = watched.path

    def append(self, record: Mapping[str, Any]) -> None:
        self._log.append(record)
        self._watched.wrote()

    def close(self) -> None:
        self._log.close()


class DeferredLedger:
    """The tick plugin's ledger sink: appends write at once; ``Durability`` makes them durable."""

    def __init__(self, ledger: LedgerSink, watched: Watched) -> None:
        self._ledger, self._watched = ledger, watched

    def append(self, rec: dict[str, Any]) -> dict[str, Any]:
        written = self._ledger.append(rec)
        self._watched.wrote()
        return written

    def close(self) -> None:
        """Nothing yet: the plugin is disposed before its last records are durable."""
