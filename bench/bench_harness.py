"""N agents in one process, each running ``/tick 10`` with delayMs 0 and an instant model.

Measures the tick plugin's scheduling overhead per time step: the time spent in its terminal
handler (record the terminal, decide, schedule) plus its timer callback (re-check, record, enqueue).
The ledger records are built as in production but written to a no-op sink (``NullLedger``) and
sessions live in memory: this measures scheduling, not disk. Baselines, measured in the same run:
a bare asyncio ``call_soon`` round trip (a future resolved by ``call_soon`` and awaited), and the
memory of a bare ``loop.call_later`` handle.
"""

from __future__ import annotations

import asyncio
import gc
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from bench._util import percentile, report
from tickloop.harness import Agent, NullLedger, TickOptions, TickPlugin, memory_session
from tickloop.models import OfflineModel

STEPS = 10


async def call_soon_round_trip(rounds: int = 50_000) -> float:
    """Seconds per ``call_soon`` round trip: schedule a callback that resolves a future, await it."""
    loop = asyncio.get_running_loop()
    started = time.perf_counter()
    for _ in range(rounds):
        future = loop.create_future()
        loop.call_soon(future.set_result, None)
        await future
    return (time.perf_counter() - started) / rounds


async def call_later_handle_bytes(count: int = 10_000) -> float:
    """Bytes per pending ``loop.call_later`` handle: the floor for anything that holds a timer."""
    loop = asyncio.get_running_loop()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    handles = [loop.call_later(3600, _noop) for _ in range(count)]
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    for handle in handles:
        handle.cancel()
    return used / count


def _noop() -> None:
    """A timer callback that does nothing."""


def _timed(fn: Callable[..., Any], samples: list[float], cpu: list[float]) -> Callable[..., Any]:
    """Wall time and thread CPU time of each call (CPU time leaves out preemption by other processes)."""

    def wrapper(*args: Any) -> Any:
        started, started_cpu = time.perf_counter(), time.thread_time()
        try:
            return fn(*args)
        finally:
            samples.append(time.perf_counter() - started)
            cpu.append(time.thread_time() - started_cpu)

    return wrapper


async def measure(agents_count: int) -> dict[str, float]:
    """Arm ``/tick 10`` on ``agents_count`` agents and run every step to completion."""
    options = TickOptions.from_mapping({"delayMs": 0, "defaultTicks": STEPS})
    handler: list[float] = []
    fire: list[float] = []
    handler_cpu: list[float] = []
    fire_cpu: list[float] = []
    agents = []
    for i in range(agents_count):
        plugin = TickPlugin(options, NullLedger())
        plugin.on_terminal = _timed(plugin.on_terminal, handler, handler_cpu)  # type: ignore[method-assign]
        plugin._fire = _timed(plugin._fire, fire, fire_cpu)  # type: ignore[method-assign]
        agent = Agent(OfflineModel(reply="ok"), memory_session(f"bench-{i}"), plugins=[plugin])
        await agent.start()
        agent.submit("hello")
        agents.append(agent)
    await asyncio.gather(*(a.wait_idle() for a in agents))
    handler.clear()  # the natural turn's terminal is not a time step
    handler_cpu.clear()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for agent in agents:
        agent.submit(f"/tick {STEPS}")
    armed_bytes = (tracemalloc.get_traced_memory()[0] - before) / agents_count
    tracemalloc.stop()
    # The agents are long-lived: move them out of the collector's view, as a long-running process
    # would after warm-up, so p99 measures scheduling rather than full collections of the heap.
    gc.freeze()
    started = time.perf_counter()
    await asyncio.gather(*(a.wait_idle() for a in agents))
    gc.unfreeze()
    wall = time.perf_counter() - started
    steps = agents_count * STEPS
    if len(fire) != steps or len(handler) != steps:
        raise RuntimeError(f"expected {steps} steps, saw {len(fire)} enqueues and {len(handler)} terminals")
    per_step = [a + b for a, b in zip(handler, fire, strict=True)]
    per_step_cpu = [a + b for a, b in zip(handler_cpu, fire_cpu, strict=True)]
    for agent in agents:
        await agent.close()
    return {
        "p50": percentile(per_step, 50),
        "p99": percentile(per_step, 99),
        "p99_cpu": percentile(per_step_cpu, 99),
        "armed_bytes": armed_bytes,
        "wall_per_step": wall / steps,
    }


async def _main(sizes: tuple[int, int]) -> None:
    round_trip = await call_soon_round_trip()
    handle_bytes = await call_later_handle_bytes()
    print("ledger: records built, written to a no-op sink (NullLedger); sessions in memory")
    results = {}
    for n in sizes:
        results[n] = r = await measure(n)
        us = 1e6
        report(f"per-step overhead p50, N={n:,}", r["p50"] * us, round_trip * us, target="< 50x", unit=" us")
        report(f"per-step overhead p99, N={n:,}", r["p99"] * us, round_trip * us, unit=" us")
        report(f"per-step overhead p99 (thread CPU), N={n:,}", r["p99_cpu"] * us, round_trip * us, unit=" us")
        wall = r["wall_per_step"] * us
        report(f"whole harness wall time per step, N={n:,}", wall, round_trip * us, unit=" us")
        report(f"memory per armed run, N={n:,}", r["armed_bytes"], handle_bytes, unit=" B ")
    small, large = sizes
    report(
        f"flatness: p50 per step N={large:,} vs N={small:,}",
        results[large]["p50"] * 1e6,
        results[small]["p50"] * 1e6,
        target="<= 1.3",
        unit=" us",
    )


def run(*, quick: bool) -> None:
    """``make bench BENCH_ARGS=harness``: N = 1,000 and 10,000 (quick: 100 and 1,000)."""
    asyncio.run(_main((100, 1_000) if quick else (1_000, 10_000)))
