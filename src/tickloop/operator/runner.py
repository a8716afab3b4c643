"""One tick per process, and one progress row on every path.

``run_tick`` opens the store, takes the (profile, kind) advisory lock, runs the tick and records its
row: on success, refusal, gate stop and exception alike. On SIGTERM or SIGINT mid-tick a handler
abandons the interrupted transaction, commits one ``failed`` row, then frees the tick lock, and exits
128+signal. The guard is marked recorded *before* the final write, so a signal arriving during that
write does not add a second row: the handler then only notes the exit code and lets the write
finish. One row, never two.

The handler runs wherever the main thread was between two bytecodes, so it starts no thread and
takes no lock the interrupted code might hold: it arms a watchdog thread, started with the handler,
by a write to a pipe. From then on the whole handler (row and lock release) has a hard 2.5 s cap; a
Python handler cannot interrupt a blocked C call, the watchdog can end the process. If the cap
strikes, stderr says which step it cut; a lock it left behind is reclaimed by the next tick.

SIGKILL (and a crash before the store is open) writes nothing; the stall monitor, which runs
outside the loop, reports that as SILENT. So does a SIGTERM that arrives while the process is still
starting, before ``run_tick`` installs its handler: Python's default action ends the process with no
row. From the handler's installation on, every path leaves exactly one row.

Exit codes (``tickloop operator tick``):

==== ==================================================================================
0    the tick ran and recorded its row (done, staged, noop, refused, gate_stop, blocked)
1    the tick failed; its row says why
2    bad usage, configuration or profile: no row could be written (the message says why)
128+N interrupted by signal N (143 for SIGTERM, 130 for SIGINT). Its row is a ``failed`` one naming
     the signal, or the tick's own if the signal came while that row was being written
==== ==================================================================================
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from tickloop.clock import Clock, SystemClock, utc_iso
from tickloop.config import Settings
from tickloop.inert import inert
from tickloop.operator.domain import NewProgress, Outcome

if TYPE_CHECKING:
    from tickloop.models.base import ChatModel
    from tickloop.operator.store.base import Store

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
FLUSH_CAP_SECONDS = 2.5

#: tick kind -> "module:function"; a tick module is imported only by the process that runs it.
TICKS = {
    "observe": "tickloop.operator.ticks.observe:run",
    "fast": "tickloop.operator.ticks.fast:run",
    "slow": "tickloop.operator.ticks.slow:run",
    "executor": "tickloop.operator.ticks.executor:run",
    "consolidate": "tickloop.operator.ticks.consolidate:run",
}


class TickResult(msgspec.Struct, frozen=True):
    """What a tick reports; the runner turns it into the progress row."""

    outcome: Outcome
    detail: str = ""
    error: str = ""
    intent_id: int | None = None
    extra: Mapping[str, object] = msgspec.field(default_factory=dict)  #: prompt sha256, model, tokens in/out


class TickContext(msgspec.Struct):
    """What a tick may use. Time comes from ``clock``; secrets from ``env`` (never argv)."""

    store: Store
    profile: str
    kind: str
    settings: Settings
    clock: Clock
    env: Mapping[str, str]
    log: Callable[[str], None]
    owner: str
    options: Mapping[str, object] = msgspec.field(default_factory=dict)  #: per-kind flags (--day, --dry-run)
    #: seconds this tick has waited on its model so far (``ticks._ask`` adds each call's)
    model_seconds: float = 0.0
    _model: ChatModel | None = None

    def model(self) -> ChatModel:
        """The configured model, built on first use (only the model path imports a model SDK).

        The built-in offline model answers the operator's structured requests with
        ``tickloop.operator.offline.answer``, so the whole loop runs with no network; the chat's
        offline model is built elsewhere and keeps its plain replies."""
        if self._model is None:
            from tickloop.models.offline import OfflineModel  # noqa: PLC0415
            from tickloop.models.registry import get_model  # noqa: PLC0415

            model = get_model(self.settings.model.name, self.settings, self.env)
            if isinstance(model, OfflineModel) and model.json_reply is None:
                from tickloop.operator.offline import answer  # noqa: PLC0415

                model.json_reply = answer
            self._model = model
        return self._model


class Tick(Protocol):
    def __call__(self, ctx: TickContext) -> TickResult: ...


class Guard:
    """Makes sure exactly one progress row is written for this tick, whatever happens."""

    def __init__(self, store: Store, profile: str, kind: str, clock: Clock) -> None:
        self.store = store
        self.profile = profile
        self.kind = kind
        self.clock = clock
        self.started_at: datetime = clock.now()
        self.state_hash = ""  #: the board hash the tick saw, set as soon as it is read
        self.recorded = False
        self.pending_exit: int | None = None
        self.lock_owner: str | None = None  #: set while this tick holds its (profile, kind) lock
        self.watchdog: _Watchdog | None = None  #: started with the signal handler
        self.flush_step = ""  #: what the signal handler is doing, for the watchdog's message

    def record(self, result: TickResult) -> bool:
        """Write the row unless one was written (or is being written); True if this call wrote it."""
        if self.recorded:
            return False
        self.recorded = True  # before the write: a signal during it must not add a second row
        try:
            self.store.record_progress(self.profile, self._row(result))
        except Exception:
            self.recorded = False  # the write itself failed (not a signal): let the failure path retry
            raise
        return True

    def _row(self, result: TickResult) -> NewProgress:
        detail = result.detail
        if result.extra:
            detail = (detail + " " if detail else "") + " ".join(f"{k}={v}" for k, v in result.extra.items())
        return NewProgress(
            tick_kind=self.kind,
            outcome=result.outcome,
            started_at=self.started_at,
            ended_at=self.clock.now(),
            state_hash=self.state_hash,
            intent_id=result.intent_id,
            error=result.error[:2000],
            detail=detail[:4000],
        )

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        """Flush one failed row (capped) and exit 128+signum; during the final write, only note it.

        Nothing may raise out of this handler: an exception would surface in the interrupted code
        with ``recorded`` already set, and that tick would end with no row at all."""
        code = 128 + signum
        if self.recorded:
            self.pending_exit = code
            return
        self.recorded = True
        try:
            if self.watchdog is not None:
                self.watchdog.arm(code)
            self._flush(f"interrupted by {signal.Signals(signum).name}")
        except Exception as exc:  # noqa: BLE001  (exiting anyway: say why the flush failed)
            # os.write, not print: the interrupted code may be inside sys.stderr's own buffer lock.
            _say(f"tickloop: could not record the interrupted {self.kind} tick ({self.flush_step}): {exc!r}")
        finally:
            os._exit(code)

    def _flush(self, error: str) -> None:
        self.flush_step = "rolling back the interrupted transaction"
        self.store.abandon_transaction()
        self.flush_step = "writing the failed row"
        self.store.record_progress(self.profile, self._row(TickResult(Outcome.FAILED, error=error)))
        if self.lock_owner is not None:  # exiting skips tick_lock's own release
            self.flush_step = "releasing the tick lock (the row is written)"
            self.store.release_tick_lock(self.profile, self.kind, owner=self.lock_owner)


class _Watchdog:
    """The signal handler's hard cap: a daemon thread, started before the handler is installed, that
    ends the process ``FLUSH_CAP_SECONDS`` after the handler arms it.

    Armed through a pipe because the handler runs on the interrupted thread: ``os.write`` takes no
    Python lock, while starting a thread there could raise into the interrupted code, or wait
    forever on a lock of ``threading`` that the interrupted code holds."""

    def __init__(self, step: Callable[[], str]) -> None:
        self._step = step
        self._read, self._write = os.pipe()  # not inherited by child processes (PEP 446)
        threading.Thread(target=self._run, name="tickloop-flush-cap", daemon=True).start()

    def arm(self, code: int) -> None:
        os.write(self._write, bytes([code]))

    def disarm(self) -> None:
        os.close(self._write)  # the thread reads end-of-file and returns

    def _run(self) -> None:
        # The kernel may hand a process-directed signal to any thread that does not block it; this
        # one must not take it, or a main thread asleep in a C call would not wake to run the handler.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        try:
            armed = os.read(self._read, 1)
        finally:
            os.close(self._read)
        if armed:
            time.sleep(FLUSH_CAP_SECONDS)
            _say(f"tickloop: gave up after {FLUSH_CAP_SECONDS:g} s while {self._step()}")
            os._exit(armed[0])


def _say(line: str) -> None:
    """One line on stderr, written directly: safe in a signal handler and in the watchdog."""
    with contextlib.suppress(OSError):
        os.write(2, (line + "\n").encode(errors="replace"))


@contextlib.contextmanager
def _signals(guard: Guard) -> Iterator[None]:
    guard.watchdog = watchdog = _Watchdog(lambda: guard.flush_step)
    previous: dict[signal.Signals, Any] = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, guard.on_signal)
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        watchdog.disarm()  # after the handlers are gone: none can arm it any more


def load_tick(kind: str) -> Tick:
    """The tick function for ``kind``."""
    module_name, attr = TICKS[kind].split(":")
    tick: Tick = getattr(importlib.import_module(module_name), attr)
    return tick


def run_tick(
    kind: str,
    *,
    store: Store,
    profile: str,
    settings: Settings,
    env: Mapping[str, str],
    clock: Clock | None = None,
    log: Callable[[str], None] | None = None,
    options: Mapping[str, object] | None = None,
    model: ChatModel | None = None,
) -> int:
    """Run one tick of ``kind`` for ``profile``; returns the process exit code. ``model`` replaces
    the configured one (tests, benchmarks); by default it is built from settings on first use."""
    clock = clock or SystemClock()
    guard = Guard(store, profile, kind, clock)
    ctx = TickContext(
        store=store,
        profile=profile,
        kind=kind,
        settings=settings,
        clock=clock,
        env=env,
        log=log or _stderr_log(clock),
        owner=f"{os.uname().nodename}:{os.getpid()}:{os.urandom(4).hex()}",
        options=options or {},
        _model=model,
    )
    with _signals(guard):
        code = _guarded(ctx, guard)
    return guard.pending_exit or code


def _guarded(ctx: TickContext, guard: Guard) -> int:
    result = _attempt(ctx, guard)
    after = getattr(sys.modules.get(TICKS[ctx.kind].split(":")[0]), "after", None)
    if after is not None:
        with contextlib.suppress(Exception):  # best effort (e.g. a critique): never changes the row
            after(ctx, result)
    return EXIT_FAILED if result.outcome is Outcome.FAILED else EXIT_OK


def _attempt(ctx: TickContext, guard: Guard) -> TickResult:
    """Run the tick under its lock and record its row; an exception becomes a failed row."""
    try:
        tick = load_tick(ctx.kind)
        with ctx.store.tick_lock(ctx.profile, ctx.kind, owner=ctx.owner, now=ctx.clock.now()) as held:
            if held:
                guard.lock_owner = ctx.owner
                guard.state_hash = ctx.store.board_hash(ctx.profile)
                result = tick(ctx)
            else:
                result = TickResult(Outcome.NOOP, detail=f"skipped: another {ctx.kind} tick is running")
            guard.record(result)
            return result
    except Exception as exc:  # noqa: BLE001  (every path leaves a row; the row carries the error)
        failed = TickResult(Outcome.FAILED, error=f"{type(exc).__name__}: {exc}")
        ctx.log(f"{ctx.kind} tick failed: {failed.error}")
        guard.record(failed)
        return failed


def _stderr_log(clock: Clock) -> Callable[[str], None]:
    def log(line: str) -> None:
        # A log line may quote model output, titles or source text: inert on a terminal. A message
        # of several lines keeps them (the executor's dry-run lines do), each continuation indented,
        # so quoted text can never pass for a log line of its own.
        first, *rest = inert(line).split("\n")
        shown = "\n".join([first, *(row if row[:1] in (" ", "\t") else f"  {row}" for row in rest)])
        print(f"[{utc_iso(clock.now())}] {shown}", file=sys.stderr, flush=True)  # noqa: T201

    return log
