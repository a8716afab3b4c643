"""Durable writes off the event loop: under concurrency, the protocol's order of durability holds."""

from __future__ import annotations

import asyncio
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
from tickloop.harness.durable import FsyncPool
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
    when their settle returns, an fsync serves the records written before it began, and a settle
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
                watched.wrote()
                await watched.settle()
                witness.assert_durable(path, f"writer {n} record {i}")

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
