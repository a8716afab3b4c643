"""Executor worker processes for the chaos test and the benchmark.

``python -m bench.executor_load JSON`` registers a test-only reversible handler ``sink``
(one ``write`` of the intent id to a file opened with ``O_APPEND`` per side effect; without a sink
file it does nothing: the benchmark's no-op handler), then runs real executor passes, armed
(``TICKLOOP_DRY_RUN=0``), until a pass finds nothing to claim, logging to the ``log`` file if one
is given. It prints a JSON result.

The workers call the executor's pass directly rather than through ``run_tick``, because the tick
lock would otherwise let only one of them run at a time: here they contend on the claims.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any, TextIO

from bench.store_load import T0
from tickloop.clock import Clock, utc_iso
from tickloop.config import Settings
from tickloop.operator.domain import Tier
from tickloop.operator.handlers import HandlerContext, HandlerRequest, HandlerResult, HandlerStatus, registry
from tickloop.operator.handlers.registry import HandlerSpec
from tickloop.operator.runner import TickContext
from tickloop.operator.store import Store, open_store
from tickloop.operator.ticks import executor

SINK_TYPE = "sink"
_sink: dict[str, Any] = {"path": None, "linger_s": 0.0}


def sink_handler(request: HandlerRequest, _context: HandlerContext) -> HandlerResult:
    """Append ``ID\\n`` to the sink file in one O_APPEND write: the effect an outside observer counts."""
    path = _sink["path"]
    if path and not request.dry_run:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, f"{request.intent_id}\n".encode())
        finally:
            os.close(fd)
        if _sink["linger_s"]:
            # Widen the window between the effect and its record, where a kill is most dangerous.
            time.sleep(_sink["linger_s"])
    verb = "WOULD call" if request.dry_run else "called"
    return HandlerResult(
        HandlerStatus.SENT, "sink.append", str(path or ""), f"{verb} sink.append()", request.dry_run
    )


def register_sink(path: str | None, *, linger_s: float = 0.0) -> None:
    """Add the ``sink`` action type (tier reversible) to this process's handler registry."""
    _sink.update(path=path, linger_s=linger_s)
    registry.HANDLERS = MappingProxyType(
        {**registry.HANDLERS, SINK_TYPE: HandlerSpec(Tier.REVERSIBLE, sink_handler)}
    )


class ShiftedClock:
    """Real time moved so that ``epoch`` (a shared ``time.time()``) is T0, the day seeded intents carry."""

    def __init__(self, epoch: float) -> None:
        self.epoch = epoch

    def now(self) -> datetime:
        return T0 + timedelta(seconds=time.time() - self.epoch)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:  # pragma: no cover  (the executor never sleeps)
        raise NotImplementedError


def armed_context(
    store: Store, profile: str, owner: str, clock: Clock, *, log: Callable[[str], None] | None = None
) -> TickContext:
    """A tick context for an armed executor (``TICKLOOP_DRY_RUN=0``); without ``log`` it logs nothing."""
    return TickContext(
        store=store,
        profile=profile,
        kind="executor",
        settings=Settings(),
        clock=clock,
        env={"TICKLOOP_DRY_RUN": "0"},
        log=log or (lambda _line: None),
        owner=owner,
    )


def line_log(stream: TextIO, clock: Clock) -> Callable[[str], None]:
    """The tick's log as ``run_tick`` writes it to stderr: a timestamped line, flushed at once."""

    def log(line: str) -> None:
        stream.write(f"[{utc_iso(clock.now())}] {line}\n")
        stream.flush()

    return log


def drain(ctx: TickContext, *, batch: int = 10) -> int:
    """Run armed executor passes until one considers nothing; the number of intents executed."""
    settings = executor.ExecutorSettings(batch=batch, reap_after_s=900)
    handlers = executor.handler_context(ctx)
    executed = 0
    while (tally := executor.execute_pass(ctx, settings, handlers, dry=False)).considered:
        executed += tally.executed
    return executed


def executor_worker(args: dict[str, Any]) -> Any:
    """Drain the queue as one executor process; return the count executed and the seconds taken."""
    register_sink(args.get("sink"), linger_s=args.get("linger_s", 0.0))
    store = open_store(args["url"], migrate=False)
    clock = ShiftedClock(args["epoch"])
    with contextlib.ExitStack() as stack:
        log = None
        if args.get("log"):  # the tick's own log lines, to a file as a tick writes them to stderr
            log = line_log(stack.enter_context(Path(args["log"]).open("a", encoding="utf-8")), clock)
        ctx = armed_context(store, args["profile"], args["owner"], clock, log=log)
        while time.time() < args["start_at"]:
            time.sleep(0.001)
        started = time.perf_counter()
        executed = drain(ctx, batch=args.get("batch", 10))
        elapsed = time.perf_counter() - started
    store.close()
    return {"executed": executed, "seconds": elapsed}


def main(argv: Sequence[str]) -> int:
    """``python -m bench.executor_load JSON``: run one worker, print its JSON result."""
    print(json.dumps(executor_worker(json.loads(argv[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
