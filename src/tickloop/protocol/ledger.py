"""Ledger records (schema ``tickloop.audit.v1``), their canonical JSON, and ``verify``.

Canonical JSON is part of the documented contract: UTF-8, keys sorted, separators ``,`` and ``:``
with no spaces, no NaN or infinities, one record per line terminated by ``\\n``. The optional hash
chain puts ``prev = "sha256:<hex>"`` on each record: the digest of the previous line's bytes
(without its newline). ``GENESIS`` stands in for the line before the first.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from tickloop.errors import LedgerError

SCHEMA = "tickloop.audit.v1"
GENESIS = "sha256:" + "0" * 64


class RecordType(StrEnum):
    """Every kind of ledger record."""

    LOOP_ARMED = "loop_armed"  #: a run was admitted
    TICK_SCHEDULED = "tick_scheduled"  #: a timer will enqueue step N
    TICK_ENQUEUED = "tick_enqueued"  #: step N went into the agent
    TICK_TERMINAL = "tick_terminal"  #: step N's turn ended, with its status
    TICK_CANCELLED = "tick_cancelled_before_enqueue"  #: a pending enqueue was cancelled
    LOOP_STOPPED = "loop_stopped"  #: the run ended before its target
    LOOP_COMPLETE = "loop_complete"  #: the run reached its target
    COMMAND_REJECTED = "command_rejected"  #: a /tick line was refused


CLOSING = frozenset({RecordType.LOOP_STOPPED, RecordType.LOOP_COMPLETE})
#: Record types that must say which rule caused them.
NEEDS_RULE = frozenset(
    {
        RecordType.LOOP_STOPPED,
        RecordType.LOOP_COMPLETE,
        RecordType.TICK_CANCELLED,
        RecordType.COMMAND_REJECTED,
    }
)
#: Record types that belong to a run and carry its frozen policy fields.
RUN_RECORDS = frozenset(RecordType) - {RecordType.COMMAND_REJECTED}
POLICY_FIELDS = ("policyId", "timeStepSha256", "timeStepBytes")
#: optional counts on ``tick_terminal``: tool calls made in the step's turn, and those not ``ok``
TOOL_COUNTS = ("toolCalls", "toolErrors")


def record(
    kind: RecordType,
    *,
    recorded_at: datetime,
    session_id: str,
    **fields: Any,
) -> dict[str, Any]:
    """Build one record (without ``seq`` and ``prev``: the writer stamps those). Drops ``None``s."""
    body = {k: v for k, v in fields.items() if v is not None}
    if kind in NEEDS_RULE and "rule" not in body:
        raise LedgerError(f"a {kind} record must carry the rule that caused it")
    return {
        "schema": SCHEMA,
        "type": str(kind),
        "recordedAt": _utc(recorded_at),
        "sessionId": session_id,
        **body,
    }


def _utc(moment: datetime) -> str:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise LedgerError("recordedAt must be a timezone-aware time")
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def canonical(obj: Mapping[str, Any]) -> bytes:
    """The canonical JSON bytes of a record (no trailing newline)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode(
        "utf-8"
    )


def chain_digest(line: bytes) -> str:
    """The ``prev`` value for the record after ``line``."""
    return "sha256:" + hashlib.sha256(line).hexdigest()


def decode(line: bytes) -> dict[str, Any]:
    """Parse one ledger line, or raise ``LedgerError`` saying what is wrong with it."""
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise LedgerError(f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise LedgerError(f"a record must be a JSON object, got {type(obj).__name__}")
    if obj.get("schema") != SCHEMA:
        raise LedgerError(f"schema is {obj.get('schema')!r}, expected {SCHEMA!r}")
    if obj.get("type") not in RecordType.__members__.values():
        raise LedgerError(f"unknown record type {obj.get('type')!r}")
    seq = obj.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise LedgerError(f"seq must be a positive integer, got {seq!r}")
    for key in ("recordedAt", "sessionId"):
        if not isinstance(obj.get(key), str):
            raise LedgerError(f"{key} must be a string")
    return obj


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken invariant, with the 1-based line it was found on."""

    line: int
    rule: str
    message: str


@dataclass(slots=True)
class _RunTrace:
    run_id: str
    line: int
    policy: tuple[Any, ...]
    target_steps: int
    resume_boundary: bool
    enqueued: int = 0
    last_terminal: tuple[int, str] | None = None  #: (step, status) of the newest tick_terminal
    closed: bool = False


@dataclass(slots=True)
class VerifyReport:
    """What ``verify`` found: the violations, and counts for the one-line summary."""

    violations: list[Violation] = field(default_factory=list)
    records: int = 0
    runs: int = 0
    enqueued: int = 0
    chained: bool = False

    @property
    def ok(self) -> bool:
        return not self.violations

    def summary(self) -> str:
        chain = ", hash chain intact" if self.chained and self.ok else ""
        state = "ok" if self.ok else f"{len(self.violations)} violation(s)"
        return (
            f"{state}: {self.records} records, {self.runs} runs, {self.enqueued} time steps enqueued{chain}"
        )


class _Verifier:
    """Replays records one by one and checks the protocol's invariants."""

    def __init__(self) -> None:
        self.report = VerifyReport()
        self.runs: dict[str, _RunTrace] = {}
        self.active: _RunTrace | None = None
        self.last_seq = 0
        self.session: str | None = None
        self.prev_line: bytes | None = None

    def fail(self, line: int, rule: str, message: str) -> None:
        self.report.violations.append(Violation(line, rule, message))

    def feed(self, lineno: int, raw: bytes) -> None:
        try:
            rec = decode(raw)
        except LedgerError as exc:
            self.fail(lineno, "verify.malformed", str(exc))
            self.prev_line = raw
            self.last_seq += 1  # an unreadable line still occupies its slot: no cascade of seq errors
            return
        self.report.records += 1
        self._check_chain(lineno, raw, rec)
        self._check_seq(lineno, rec)
        kind = RecordType(rec["type"])
        if kind in NEEDS_RULE and not isinstance(rec.get("rule"), str):
            self.fail(lineno, "verify.missing_rule", f"{kind} must name the rule that caused it")
        if kind is RecordType.COMMAND_REJECTED:
            return
        run_id = rec.get("runId")
        if not isinstance(run_id, str):
            self.fail(lineno, "verify.missing_run_id", f"{kind} must carry runId")
            return
        if kind is RecordType.LOOP_ARMED:
            self._armed(lineno, run_id, rec)
            return
        trace = self.runs.get(run_id)
        if trace is None:
            self.fail(lineno, "verify.unknown_run", f"{kind} for run {run_id} that was never armed")
            return
        if trace.closed:
            self.fail(lineno, "verify.record_after_close", f"{kind} after run {run_id} closed")
            return
        if _policy_of(rec) != trace.policy:
            self.fail(lineno, "verify.policy_changed", f"policy fields changed within run {run_id}")
        self._run_record(lineno, kind, trace, rec)

    def _check_chain(self, lineno: int, raw: bytes, rec: Mapping[str, Any]) -> None:
        prev = rec.get("prev")
        if prev is None:
            if self.report.chained:
                self.fail(lineno, "verify.chain_broken", "the hash chain stops here (no prev)")
        else:
            if lineno == 1 or self.report.records == 1:
                self.report.chained = True
            expected = GENESIS if self.prev_line is None else chain_digest(self.prev_line)
            if prev != expected:
                self.fail(lineno, "verify.chain_broken", "prev does not match the previous line")
        self.prev_line = raw

    def _check_seq(self, lineno: int, rec: Mapping[str, Any]) -> None:
        seq = int(rec["seq"])
        if seq != self.last_seq + 1:
            self.fail(lineno, "verify.seq_order", f"seq {seq} follows {self.last_seq}")
        self.last_seq = seq
        if self.session is None:
            self.session = str(rec["sessionId"])
        elif rec["sessionId"] != self.session:
            self.fail(
                lineno,
                "verify.session_mixed",
                f"sessionId {rec['sessionId']!r} in a ledger of {self.session!r}",
            )

    def _armed(self, lineno: int, run_id: str, rec: Mapping[str, Any]) -> None:
        if run_id in self.runs:
            self.fail(lineno, "verify.run_rearmed", f"run {run_id} armed twice")
            return
        if self.active is not None:
            self.fail(
                lineno,
                "verify.concurrent_runs",
                f"run {run_id} armed while run {self.active.run_id} is still active",
            )
        requested = rec.get("requested")
        if not isinstance(requested, int) or isinstance(requested, bool) or requested < 1:
            self.fail(lineno, "verify.malformed", "loop_armed must carry requested >= 1")
            requested = 0
        trace = _RunTrace(
            run_id=run_id,
            line=lineno,
            policy=_policy_of(rec),
            target_steps=requested,
            resume_boundary=rec.get("resumeBoundary") is True,
        )
        if trace.resume_boundary and rec.get("resume") is not True:
            self.fail(lineno, "verify.resume_misuse", "a resume boundary without --resume")
        self.runs[run_id] = trace
        self.active = trace
        self.report.runs += 1

    def _run_record(self, lineno: int, kind: RecordType, trace: _RunTrace, rec: Mapping[str, Any]) -> None:
        if kind is RecordType.TICK_ENQUEUED:
            self._enqueued(lineno, trace, rec)
        elif kind is RecordType.TICK_TERMINAL:
            step, status = rec.get("step"), rec.get("status")
            if step != trace.enqueued or not isinstance(status, str):
                self.fail(
                    lineno,
                    "verify.terminal_out_of_order",
                    f"terminal for step {step!r} but step {trace.enqueued} is current",
                )
            else:
                trace.last_terminal = (trace.enqueued, status)
            for name in TOOL_COUNTS:
                count = rec.get(name)
                if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 0):
                    self.fail(
                        lineno, "verify.malformed", f"tick_terminal {name} must be a non-negative integer"
                    )
        elif kind in CLOSING:
            trace.closed = True
            if self.active is trace:
                self.active = None
            if kind is RecordType.LOOP_COMPLETE and trace.enqueued != trace.target_steps:
                self.fail(
                    lineno,
                    "verify.complete_short",
                    f"loop_complete after {trace.enqueued} of {trace.target_steps} steps",
                )
        elif rec.get("resumeBoundary") is True:
            self.fail(lineno, "verify.resume_misuse", "resumeBoundary appears only on loop_armed")

    def _enqueued(self, lineno: int, trace: _RunTrace, rec: Mapping[str, Any]) -> None:
        step = rec.get("step")
        if step != trace.enqueued + 1:
            self.fail(lineno, "verify.step_order", f"step {step!r} enqueued after step {trace.enqueued}")
        if trace.enqueued >= trace.target_steps:
            self.fail(
                lineno,
                "verify.enqueue_beyond_target",
                f"step {trace.enqueued + 1} exceeds the {trace.target_steps} requested",
            )
        if trace.enqueued >= 1 and trace.last_terminal != (trace.enqueued, "completed"):
            self.fail(
                lineno,
                "verify.enqueue_without_completed_terminal",
                f"step {trace.enqueued + 1} enqueued without a completed terminal for step {trace.enqueued}",
            )
        trace.enqueued += 1
        self.report.enqueued += 1

    def finish(self) -> VerifyReport:
        return self.report


def _policy_of(rec: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(rec.get(name) for name in POLICY_FIELDS)


def verify(lines: Iterable[tuple[int, bytes]]) -> VerifyReport:
    """Replay ``(line number, line bytes)`` pairs and check every protocol invariant.

    Invariants: seq is gapless from 1; one session per ledger; at most one active run; no step
    beyond a run's target; every step after the first follows a ``completed`` terminal for the
    previous step (the single ``--resume`` boundary is recorded on ``loop_armed`` and only there);
    policy fields constant within a run; a run closes at most once and nothing follows its close;
    stops, cancels and refusals name their rule; the hash chain is intact where present.
    """
    verifier = _Verifier()
    for lineno, raw in lines:
        verifier.feed(lineno, raw)
    return verifier.finish()
