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
delays the next request. Concurrent settles of one file share fsyncs (a group commit; see
``Watched``). ``fsync`` is per file, not per descriptor,
so the pool fsyncs through a read-only descriptor of its own, and a ledger it settled is closed
without another fsync.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from queue import SimpleQueue
from typing import Any, TypeVar

from tickloop.harness.jsonl import RecordLog
from tickloop.harness.tick_ledger import LedgerSink

T = TypeVar("T")

#: ``LedgerFile(fsync_every=...)`` for a ledger whose fsyncs the pool makes: never on append
NEVER = 2**62
#: fsyncs of one file on worker threads at once (``Watched``)
IN_FLIGHT = 2


class _Job:
    """One blocking call for a worker thread, and what came of it."""

    __slots__ = ("args", "done", "error", "fn", "result")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], done: Callable[[_Job], None]) -> None:
        self.fn, self.args, self.done = fn, args, done
        self.result: Any = None
        self.error: BaseException | None = None


class FsyncPool:
    """Worker threads that wait for the disk, shared by every session of one process.

    Lean on purpose, since a step costs three fsyncs: a job is a plain object on a ``SimpleQueue``,
    and a finished job goes on a deque that the event loop drains, woken once per batch (a worker
    that finds a wake-up already pending adds its job to it), with no ``concurrent.futures`` future,
    no task and no wake-up per fsync. Threads start as jobs need them, up to ``workers``."""

    def __init__(self, workers: int = 16) -> None:
        self._workers = workers
        self._jobs: SimpleQueue[_Job | None] = SimpleQueue()
        self._finished: deque[_Job] = deque()
        self._threads: list[threading.Thread] = []
        self._open = 0  #: jobs submitted and not yet drained (read and written on the loop's thread)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake_pending = False

    def submit(self, fn: Callable[..., Any], args: tuple[Any, ...], done: Callable[[_Job], None]) -> None:
        """Run ``fn(*args)`` on a worker thread; ``done(job)`` is called on the event loop's thread."""
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError("an FsyncPool serves one event loop")
        self._open += 1
        if self._open > len(self._threads) and len(self._threads) < self._workers:
            thread = threading.Thread(
                target=self._work, name=f"tickloop-fsync-{len(self._threads)}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        self._jobs.put(_Job(fn, args, done))

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a worker thread (a blocking, durable write)."""
        answer: asyncio.Future[T] = asyncio.get_running_loop().create_future()

        def done(job: _Job) -> None:
            if not answer.done():  # the caller may have been cancelled meanwhile
                if job.error is not None:
                    answer.set_exception(job.error)
                else:
                    answer.set_result(job.result)

        self.submit(fn, args, done)
        return await answer

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                job.result = job.fn(*job.args)
            except BaseException as exc:  # noqa: BLE001  (handed to the caller on the loop's thread)
                job.error = exc
            self._finished.append(job)
            # The loop's drain clears the flag before it empties the deque, so a job appended after
            # it looked is never stranded: this worker then sees the flag clear and wakes it again.
            if not self._wake_pending:
                self._wake_pending = True
                loop = self._loop
                if loop is not None and not loop.is_closed():
                    loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        self._wake_pending = False
        while self._finished:
            job = self._finished.popleft()
            self._open -= 1
            job.done(job)

    def watch(self, path: Path) -> Watched:
        return Watched(path, self)

    def shutdown(self) -> None:
        """Stop the threads once the jobs already submitted have run (call it on the loop's thread:
        their callers are told here)."""
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            thread.join()
        self._threads.clear()
        self._drain()  # jobs that finished after the loop's last drain: their callers are told


class Watched:
    """One file whose appends the pool makes durable; it starts dirty (its header was written).

    An fsync makes durable the lines written before it began. A settle shares an fsync in flight
    that began after its lines were written; otherwise it starts one at once beside the one in
    flight (waiting for an fsync that cannot cover its lines, then starting another, costs two
    fsyncs' time instead of one). At most ``IN_FLIGHT`` fsyncs of a file run at once: past that, a
    settle waits for one to end, and the next covers every line written by then. So concurrent
    settles of one file share fsyncs (a group commit) and a sparse writer waits for one fsync."""

    def __init__(self, path: Path, pool: FsyncPool) -> None:
        self.path, self._pool = path, pool
        self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        self.written, self.synced = 1, 0
        self._in_flight: list[int] = []  #: the targets (``written`` when each began) of fsyncs on workers
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []  #: (lines it needs durable, waiter)
        self._closing = False

    def wrote(self) -> None:
        """A line was written (not yet durable)."""
        self.written += 1

    async def settle(self) -> None:
        """Return once every line written so far is durable."""
        need = self.written
        while self.synced < need:
            self.start()
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append((need, waiter))
            await waiter  # a waiter of its own: a cancelled settle cancels nobody else's

    def start(self) -> None:
        """Send an fsync of every line written so far to a worker, unless one in flight covers them."""
        target = self.written
        covered = any(began >= target for began in self._in_flight)
        if self.synced < target and not covered and len(self._in_flight) < IN_FLIGHT:
            self._in_flight.append(target)
            self._pool.submit(os.fsync, (self._fd,), lambda job: self._synced(job, target))

    def _synced(self, job: _Job, target: int) -> None:
        # The state changes before any waiter runs: a settle never finds a finished fsync still in
        # flight (that would spin the event loop).
        self._in_flight.remove(target)
        if job.error is None:
            self.synced = max(self.synced, target)
        waiting = []
        for need, waiter in self._waiters:
            if waiter.done():
                continue
            if need <= self.synced:
                waiter.set_result(None)
            elif job.error is not None and need <= target:  # the fsync that was to cover it failed
                waiter.set_exception(job.error)
            else:
                waiting.append((need, waiter))
        self._waiters = waiting
        if waiting:
            self.start()  # a settle that found every slot taken: the next fsync covers it
        if self._closing and not self._in_flight:
            self.close()

    def close(self) -> None:
        """Release the descriptor, once no fsync of it is on a worker (a later fsync may have ended
        first and satisfied every settle)."""
        if self._in_flight:
            self._closing = True
        elif self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class Durability:
    """One agent's files under an ``FsyncPool``: what ``Agent`` settles and finally closes."""

    def __init__(self, pool: FsyncPool) -> None:
        self.pool = pool
        self._watched: list[Watched] = []
        self._ledgers: list[Any] = []

    def watch(self, path: Path) -> Watched:
        watched = self.pool.watch(path)
        self._watched.append(watched)
        return watched

    def log(self, log: RecordLog, path: Path) -> DeferredLog:
        """Wrap a session's ``JsonlLog(fsync=False)``."""
        return DeferredLog(log, self.watch(path))

    def ledger(self, ledger: Any) -> DeferredLedger:
        """Wrap a ``LedgerFile`` opened with ``fsync_every=NEVER``: it is closed by ``aclose``."""
        self._ledgers.append(ledger)
        return DeferredLedger(ledger, self.watch(ledger.path))

    @property
    def dirty(self) -> bool:
        """Some line written to one of the agent's files is not yet known durable."""
        return any(w.synced < w.written for w in self._watched)

    async def settle(self) -> None:
        """Every line written so far to any of the agent's files is durable when this returns."""
        dirty = [w for w in self._watched if w.synced < w.written]  # most settles find nothing to do
        for watched in dirty:  # the files' fsyncs run at once, side by side
            watched.start()
        for watched in dirty:
            await watched.settle()

    async def aclose(self) -> None:
        """Settle, then release the files. A ledger's records were just made durable through the
        pool's own descriptor of it, so its close fsyncs nothing again (``LedgerFile.settled``)."""
        try:
            await self.settle()
            for ledger in self._ledgers:
                ledger.settled()
                ledger.close()
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
