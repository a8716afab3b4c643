"""Durable writes off the event loop: under concurrency, the protocol's order of durability holds."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import threading
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.disk_witness import DiskWitness

from tickloop.audit.ledger import verify_file
from tickloop.harness import TickOptions, TurnEnded, TurnStarted, open_chat_agent
from tickloop.harness.durable import FsyncPool, Watched
from tickloop.harness.events import TextStreamed
from tickloop.models.base import ChatMessage, StreamEvent, ToolSpec
from tickloop.models.offline import OfflineModel
from tickloop.protocol.policy import PolicySet

SESSIONS, STEPS = 8, 4


class CheckedModel(OfflineModel):
    """The offline model, counting the requests sent while what led to them was still on its way
    to the disk (the agent sends a request ahead; it may not read the answer before)."""

    def __init__(self, witness: DiskWitness, files: list[Path]) -> None:
        super().__init__()
        self._witness, self._files, self.requests, self.ahead = witness, files, 0, 0

    async def stream(
        self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[StreamEvent]:
        self.ahead += any(path.exists() and self._witness.pending(path) > 0 for path in self._files)
        self.requests += 1
        await asyncio.sleep(random.uniform(0, 0.01))
        async for event in super().stream(messages, tools=tools):
            yield event


async def _session(
    index: int, tmp_path: Path, witness: DiskWitness, pool: FsyncPool
) -> tuple[Path, Path, int, int]:
    sid = f"s{index}"
    transcript, ledger = (
        tmp_path / "sessions" / f"session-{sid}.jsonl",
        tmp_path / "ledgers" / f"session-{sid}.jsonl",
    )
    model = CheckedModel(witness, [transcript, ledger])
    ended: list[int] = []

    def on_event(event: object) -> None:
        if isinstance(event, TurnStarted):  # its first line was just written: what queued it is on disk
            witness.assert_durable(ledger, f"start of turn {event.turn.number}")
        if isinstance(event, TextStreamed):  # the answer is read: everything that led to it is on disk
            witness.assert_durable(transcript, f"answer of turn {event.turn}")
            witness.assert_durable(ledger, f"answer of turn {event.turn}")
        if isinstance(event, TurnEnded):  # emitted just before the tick plugin observes the terminal
            witness.assert_durable(transcript, f"terminal of turn {event.terminal.turn}")
            ended.append(event.terminal.turn)

    options = TickOptions(
        default_ticks=STEPS, delay_ms=0, audit_dir=tmp_path / "ledgers", default_policy="default",
        policies=PolicySet({}),
    )  # fmt: skip
    agent = open_chat_agent(
        model, sessions_dir=tmp_path / "sessions", session_id=sid, tick=options, listeners=[on_event],
        fsync_pool=pool,
    )  # fmt: skip
    await agent.start()
    agent.submit("Wait for time steps.")
    await agent.wait_idle()
    agent.submit(f"/tick {STEPS}")
    await agent.wait_idle()
    await agent.close()
    assert ended == list(range(1, STEPS + 2))
    return transcript, ledger, model.requests, model.ahead


async def test_every_record_is_durable_before_anything_acts_on_it_under_concurrency(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """8 sessions on one event loop with slow, jittery fsyncs: each terminal is on disk before the
    tick plugin schedules on it, the ledger records that queued a time step are on disk before its
    turn is written, requests go out ahead of those fsyncs but no answer is read before the records
    that led to its request are on disk, every fsync ran on a worker thread, none was wasted on a
    file already durable (closing a ledger fsyncs it no second time), and every file is wholly
    durable after close."""
    witness = DiskWitness(os.fsync)
    monkeypatch.setattr(os, "fsync", witness)
    pool = FsyncPool(workers=16)
    try:
        results = await asyncio.gather(*(_session(i, tmp_path, witness, pool) for i in range(SESSIONS)))
    finally:
        pool.shutdown()
    assert witness.loop_thread not in witness.threads
    assert all(name.startswith("tickloop-fsync") for name in witness.threads)
    assert witness.wasted == []
    assert sum(ahead for *_, ahead in results) > 0  # the requests did not wait for the disk
    for transcript, ledger, requests, _ahead in results:
        assert requests == STEPS + 1
        witness.assert_durable(transcript, "after close")
        witness.assert_durable(ledger, "after close")
        report, _ = verify_file(ledger)
        assert report.violations == []


def test_many_sessions_settling_one_file_share_its_fsyncs_and_all_return(tmp_path: Path) -> None:
    """Records of many sessions written to one file (the experiment's manifest) are each durable
    when their settle returns (records written after it began need not be yet), an fsync serves
    the records written before it began, and a settle
    that arrives just as an fsync ends never spins the event loop (it runs in a thread here, so a
    spin fails the join instead of hanging the suite)."""
    path = tmp_path / "shared.jsonl"
    path.write_bytes(b"")
    witness = DiskWitness(os.fsync, delay=(0.0, 0.002))
    fsyncs: list[int] = []

    def counted(fd: int) -> None:
        fsyncs.append(fd)
        witness(fd)

    async def scenario() -> None:
        pool = FsyncPool(workers=8)
        watched = pool.watch(path)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)

        async def writer(n: int) -> None:
            for i in range(25):
                await asyncio.sleep(random.uniform(0, 0.002))  # sessions arrive at any moment
                os.write(fd, b"%d %d\n" % (n, i))
                mine = os.lseek(fd, 0, os.SEEK_CUR)  # O_APPEND: the end of this writer's record
                watched.wrote()
                await watched.settle()
                assert witness.durable_bytes(path) >= mine, f"writer {n} record {i} is not durable"

        try:
            await asyncio.gather(*(writer(n) for n in range(16)))
        finally:
            os.close(fd)
            watched.close()
            pool.shutdown()

    real = os.fsync
    os.fsync = counted
    try:
        done = threading.Thread(target=asyncio.run, args=(scenario(),), daemon=True)
        done.start()
        done.join(timeout=30)
    finally:
        os.fsync = real
    assert not done.is_alive(), "a settle spun the event loop"
    assert len(fsyncs) < 16 * 25  # concurrent settles shared fsyncs (a group commit)


async def test_a_failed_fsync_reaches_every_settle_waiting_on_it_and_the_next_settle_tries_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk refuses one fsync (EIO): both settles sharing it raise that error, nothing is taken
    for durable, and a later settle fsyncs again and returns."""
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"header\n")
    real, calls = os.fsync, []

    def refuses_once(fd: int) -> None:
        calls.append(fd)
        time.sleep(0.01)  # the second settle arrives while this one is in flight
        if len(calls) == 1:
            raise OSError(5, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", refuses_once)
    pool = FsyncPool(workers=2)
    watched = pool.watch(path)
    try:
        results = await asyncio.gather(watched.settle(), watched.settle(), return_exceptions=True)
        assert [type(r) for r in results] == [OSError, OSError]
        assert watched.synced < watched.written
        await watched.settle()
        assert (len(calls), watched.synced) == (2, watched.written)
    finally:
        watched.close()
        pool.shutdown()


async def test_a_settle_given_up_leaves_the_others_sharing_its_fsync_waiting(tmp_path: Path) -> None:
    """One session's settle is cancelled (an interrupt) while an fsync it shares is in flight: the
    other settle still returns once the fsync ends, and the file is durable."""
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"header\n")
    witness = DiskWitness(os.fsync, delay=(0.05, 0.05))
    pool = FsyncPool(workers=2)
    watched = pool.watch(path)
    real, os.fsync = os.fsync, witness
    try:
        given_up = asyncio.ensure_future(watched.settle())
        kept = asyncio.ensure_future(watched.settle())
        await asyncio.sleep(0.01)
        given_up.cancel()
        await asyncio.wait_for(kept, timeout=5)
        assert given_up.cancelled()
        witness.assert_durable(path, "after the kept settle")
    finally:
        os.fsync = real
        watched.close()
        pool.shutdown()


async def test_jobs_that_finish_together_wake_the_event_loop_once(tmp_path: Path) -> None:
    """Twenty fsyncs that end while the event loop is busy are handed back in one wake-up of the loop,
    not twenty, and each caller gets its own answer."""
    loop = asyncio.get_running_loop()
    wakeups: list[object] = []
    real_wake = loop.call_soon_threadsafe

    def counted(callback: Any, *args: Any, **kwargs: Any) -> Any:
        wakeups.append(callback)
        return real_wake(callback, *args, **kwargs)

    pool = FsyncPool(workers=4)
    loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
    try:
        calls = [asyncio.ensure_future(pool.run(lambda n=n: n * n)) for n in range(20)]
        await asyncio.sleep(0)  # every job is submitted
        time.sleep(0.2)  # the loop is busy while the workers finish them all
        assert await asyncio.gather(*calls) == [n * n for n in range(20)]
    finally:
        del loop.call_soon_threadsafe
        pool.shutdown()
    assert 1 <= len(wakeups) <= 2


class _HeldFsync:
    """``os.fsync`` held on an event until released: how many are on worker threads at once."""

    def __init__(self, real: Any) -> None:
        self.real, self.release, self.lock = real, threading.Event(), threading.Lock()
        self.in_flight = self.most = self.calls = 0

    def __call__(self, fd: int) -> None:
        with self.lock:
            self.calls += 1
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        self.release.wait(timeout=10)
        self.real(fd)
        with self.lock:
            self.in_flight -= 1


@contextlib.asynccontextmanager
async def _held_file(tmp_path: Path) -> AsyncIterator[tuple[Path, Watched, _HeldFsync]]:
    """A file with its header written, watched by a pool whose fsyncs are held until released."""
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"header\n")
    held = _HeldFsync(os.fsync)
    pool = FsyncPool(workers=4)
    watched = pool.watch(path)
    real, os.fsync = os.fsync, held
    try:
        yield path, watched, held
    finally:
        os.fsync = real
        held.release.set()
        watched.close()
        pool.shutdown()


async def _until(condition: Any) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never held")


async def test_a_line_written_after_an_fsync_began_gets_its_own_fsync_at_once(tmp_path: Path) -> None:
    """An fsync in flight cannot cover a line written after it began: a settle of that line starts
    its own fsync beside it instead of waiting for it to end first (one fsync's wait, not two),
    and each settle returns once its own lines are durable."""
    async with _held_file(tmp_path) as (path, watched, held):
        first = asyncio.ensure_future(watched.settle())  # the header
        await _until(lambda: held.in_flight == 1)
        with path.open("ab") as handle:
            handle.write(b"line\n")
        watched.wrote()
        second = asyncio.ensure_future(watched.settle())
        await _until(lambda: held.in_flight == 2)  # started while the first is still held
        held.release.set()
        await asyncio.wait_for(asyncio.gather(first, second), timeout=10)
        assert watched.synced == watched.written
        assert (held.calls, held.most) == (2, 2)


async def test_settles_of_lines_an_fsync_in_flight_covers_share_it(tmp_path: Path) -> None:
    """Ten settles that arrive while an fsync of everything written so far is in flight start no
    fsync of their own: all return when that one ends."""
    async with _held_file(tmp_path) as (_path, watched, held):
        settles = [asyncio.ensure_future(watched.settle())]
        await _until(lambda: held.in_flight == 1)
        settles += [asyncio.ensure_future(watched.settle()) for _ in range(10)]
        await asyncio.sleep(0.05)
        held.release.set()
        await asyncio.wait_for(asyncio.gather(*settles), timeout=10)
        assert held.calls == 1


async def test_closing_a_file_with_an_fsync_still_in_flight_waits_for_it_to_end(tmp_path: Path) -> None:
    """A later fsync may end first and satisfy every settle while an earlier one is still on a worker:
    closing the file then must not pull the descriptor from under that worker."""
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"header\n")
    pool = FsyncPool(workers=4)
    watched = pool.watch(path)
    order: list[str] = []
    real = os.fsync
    gate = threading.Event()

    def fsync(fd: int) -> None:
        if not order:
            order.append("slow")
            gate.wait(timeout=10)  # the first fsync is held
        else:
            order.append("fast")
        real(fd)  # EBADF here if the descriptor were closed under it

    os.fsync = fsync
    try:
        first = asyncio.ensure_future(watched.settle())
        await _until(lambda: order == ["slow"])
        watched.wrote()
        await asyncio.wait_for(watched.settle(), timeout=10)  # the fast one covered every line
        watched.close()
        gate.set()
        await asyncio.wait_for(first, timeout=10)
    finally:
        os.fsync = real
        pool.shutdown()
    assert order == ["slow", "fast"]
