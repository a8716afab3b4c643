"""The ledger side of ``tickloop audit replay``: one pass through the verifier, as a stream of events.

``LedgerWalk`` reads the ledger a record at a time (each one verified on the way) and turns it into
the events replay pairs with the transcript, in ledger order: a step that went into the agent (once
its terminal can no longer follow: the next enqueue, its run's close or the end of the file), a
cancel that claims the state changed, and a run's close. Only the runs still open and their steps
not yet paired are held; a closed run is handed back once, as its row of the table.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tickloop.audit.ledger import LineReader
from tickloop.audit.transcript import shared
from tickloop.protocol.ledger import RecordType
from tickloop.protocol.verify import Checks, Verifier, VerifyReport

_MAX_QUEUED = 4096  #: events held while a step waits to be settled (a file of nothing else is not held)


@dataclass(slots=True)
class Step:
    """What the ledger says of one step, until it is paired with its turn."""

    enqueued_line: int = 0
    terminal: str | None = None
    terminal_line: int = 0
    cancelled_line: int = 0
    cancel_rule: str | None = None
    scheduled_at: str = ""  #: recordedAt of the step's tick_scheduled
    due: str = ""  #: its dueAt
    content: tuple[Any, Any, Any] | None = None  #: (usage, replySha256, toolResultSha256s) of its terminal


@dataclass(slots=True)
class Run:
    run_id: str
    line: int
    policy: tuple[Any, Any, Any]
    requested: Any  #: as the ledger wrote it
    resume_boundary: bool
    armed_at: str = ""
    steps: dict[int, Step] = field(default_factory=dict)  #: those not yet paired
    enqueued: int = 0
    matched: int = 0
    close: str = "open"
    close_rule: str | None = None
    open_step: int = 0  #: the step enqueued without a terminal when the run closed
    last_paired: tuple[int, bool] | None = None  #: (step, a person's turn followed its turn)
    disagreements: int = 0


@dataclass(slots=True)
class Event:
    """``kind`` is ``step`` (enqueued at ``line``), ``cancel`` or ``close``."""

    kind: str
    run: Run
    step_no: int = 0
    step: Step | None = None
    line: int = 0
    settled: bool = True


class LedgerWalk:
    """The ledger as events; ``report`` is its verification once the walk has ended."""

    def __init__(self, path: Path, checks: Checks, *, cap: int, max_reported: int) -> None:
        self.verifier = Verifier(checks, max_reported=max_reported)
        self.reader = LineReader(path, max_record_bytes=cap)
        self.lines: Iterator[tuple[int, Any]] = iter(self.reader)
        self.runs: dict[str, Run] = {}  #: runs not yet closed (and handed back), in the order armed
        self.queue: deque[Event] = deque()
        self.unsettled: Event | None = None
        self.session_id: str | None = None
        self.records = 0
        self.report: VerifyReport | None = None

    def pull(self) -> bool:
        """Read one more record; ``False`` at the end of the file."""
        for lineno, raw in self.lines:
            rec = self.verifier.feed(lineno, raw)
            if rec is not None:
                self._record(lineno, rec)
            return True
        if self.report is None:
            self.report = self.verifier.finish(torn_tail=self.reader.torn_size > 0)
            self._settle()
        return False

    def events(self) -> Iterator[Event]:
        """Each event once it is settled, in ledger order."""
        while True:
            while not self.queue or not self.queue[0].settled:
                if len(self.queue) > _MAX_QUEUED:
                    self._settle()
                elif not self.pull():
                    break
            if not self.queue:
                return
            yield self.queue.popleft()

    def _settle(self) -> None:
        if self.unsettled is not None:
            self.unsettled.settled, self.unsettled = True, None

    def _record(self, lineno: int, rec: dict[str, Any]) -> None:
        if self.session_id is None:
            self.session_id = str(rec["sessionId"])
        kind, run_id = rec["type"], rec.get("runId")
        if not isinstance(run_id, str):
            return
        run_id = shared(run_id)
        if kind == RecordType.LOOP_ARMED:
            if run_id not in self.runs:
                self.runs[run_id] = Run(
                    run_id=run_id,
                    line=lineno,
                    policy=(rec.get("policyId"), rec.get("timeStepSha256"), rec.get("timeStepBytes")),
                    requested=rec.get("requested"),  # as written, even when invalid (verify names it)
                    resume_boundary=rec.get("resumeBoundary") is True,
                    armed_at=str(rec["recordedAt"]),
                )
            return
        run = self.runs.get(run_id)
        if run is not None:
            self._run_record(lineno, rec, run)

    def _run_record(self, lineno: int, rec: dict[str, Any], run: Run) -> None:
        kind, step_no = rec["type"], rec.get("step")
        if kind in (RecordType.LOOP_COMPLETE, RecordType.LOOP_STOPPED):
            self._close(kind, rec, run)
            return
        if not isinstance(step_no, int):
            return
        step = run.steps.setdefault(step_no, Step())
        if kind == RecordType.TICK_ENQUEUED:
            step.enqueued_line = lineno
            run.enqueued += 1
            self._settle()
            self.unsettled = Event("step", run, step_no, step, lineno, settled=False)
            self.queue.append(self.unsettled)
        elif kind == RecordType.TICK_TERMINAL:
            step.terminal, step.terminal_line = shared(str(rec.get("status"))), lineno
            usage = False if rec.get("usageReported") is False else rec.get("usage")
            results = rec.get("toolResultSha256s")
            step.content = (
                usage,
                shared(rec.get("replySha256")),
                tuple(results) if isinstance(results, list) and results else (),
            )
        elif kind == RecordType.TICK_CANCELLED:
            step.cancelled_line, step.cancel_rule = lineno, rec.get("rule")
            self.queue.append(Event("cancel", run, step_no, step, lineno))
        elif kind == RecordType.TICK_SCHEDULED:
            step.scheduled_at, step.due = str(rec["recordedAt"]), str(rec.get("dueAt", ""))

    def _close(self, kind: str, rec: dict[str, Any], run: Run) -> None:
        if run.close != "open":
            return  # a second close: verify names it; the row keeps the first
        run.close = f"{kind.removeprefix('loop_')} ({rec.get('rule')})"
        run.close_rule = rec.get("rule") if isinstance(rec.get("rule"), str) else None
        last = run.steps.get(run.enqueued)
        if last is not None and last.enqueued_line and last.terminal is None:
            run.open_step = run.enqueued
        if self.unsettled is not None and self.unsettled.run is run:
            self._settle()
        self.queue.append(Event("close", run))
