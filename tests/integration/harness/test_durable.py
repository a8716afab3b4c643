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

from tickloop.audit.ledger import verify_file
from tickloop.harness import TickOptions, TurnEnded, TurnStarted, open_chat_agent
from tickloop.harness.durable import FsyncPool
from tickloop.models.base import ChatMessage, StreamEvent, ToolSpec
from tickloop.models.offline import OfflineModel
from tickloop.protocol.policy import PolicySet

SESSIONS, STEPS = 8, 4


class DiskWitness:
    """Wraps the real ``os.fsync``: slow and jittery (as on a loaded disk), and it records, per
    file, how many bytes are known durable and which threads waited for the disk."""

    def __init__(self, real: Any, delay: tuple[float, float] = (0.002, 0.012)) -> None:
        self.real, self.delay, self.lock = real, delay, threading.Lock()
        self.durable: dict[tuple[int, int], int] = {}
        self.threads: set[str] = set()
        self.loop_thread = threading.current_thread().name

    def __call__(self, fd: int) -> None:
        st = os.fstat(fd)
        size = st.st_size  # every byte written before this call is durable once it returns
        time.sleep(random.uniform(*self.delay))
        self.real(fd)
        with self.lock:
            key = (st.st_dev, st.st_ino)
            self.durable[key] = max(self.durable.get(key, 0), size)
            self.threads.add(threading.current_thread().name)

    def assert_durable(self, path: Path, when: str) -> None:
        st = path.stat()
        with self.lock:
            held = self.durable.get((st.st_dev, st.st_ino), 0)
        assert st.st_size <= held, f"{when}: {path.name} has {st.st_size - held} bytes not yet durable"


class CheckedModel(OfflineModel):
    """The offline model, checking at each request that what led to it is durable."""

    def __init__(self, witness: DiskWitness, files: list[Path]) -> None:
        super().__init__()
        self._witness, self._files, self.requests = witness, files, 0

    async def stream(
        self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[StreamEvent]:
        for path in self._files:
            self._witness.assert_durable(path, f"request {self.requests + 1}")
        self.requests += 1
        await asyncio.sleep(random.uniform(0, 0.01))
        async for event in super().stream(messages, tools=tools):
            yield event


async def _session(
    index: int, tmp_path: Path, witness: DiskWitness, pool: FsyncPool
) -> tuple[Path, Path, int]:
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
    return transcript, ledger, model.requests


async def test_every_record_is_durable_before_anything_acts_on_it_under_concurrency(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """8 sessions on one event loop with slow, jittery fsyncs: each terminal is on disk before the
    tick plugin schedules on it, the ledger records that queued a time step are on disk before its
    turn is written, each request goes out only after the records that led to it are on disk, every
    fsync ran on a worker thread, and every file is wholly durable after close."""
    witness = DiskWitness(os.fsync)
    monkeypatch.setattr(os, "fsync", witness)
    pool = FsyncPool(workers=16)
    try:
        results = await asyncio.gather(*(_session(i, tmp_path, witness, pool) for i in range(SESSIONS)))
    finally:
        pool.shutdown()
    assert witness.loop_thread not in witness.threads
    assert all(name.startswith("tickloop-fsync") for name in witness.threads)
    for transcript, ledger, requests in results:
        assert requests == STEPS + 1
        witness.assert_durable(transcript, "after close")
        witness.assert_durable(ledger, "after close")
        report, _ = verify_file(ledger)
        assert report.violations == []
