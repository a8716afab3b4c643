"""The run state machine as a ledger shows it: one transition table, and the guards of each step.

Each run record is a transition of its run's ``Phase``; a transition ``TRANSITIONS`` does not allow
is a violation naming its line and rule. ``RunMachine`` keeps every run of a file and checks its
records; ``tickloop.protocol.verify.Verifier`` adds the checks of each line (canonical form, chain,
macs, seq, session, times) and feeds it the records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeGuard

from tickloop.protocol.ledger import (
    ADMIT_RESUME_BOUNDARY,
    CLOSING,
    DUE_SLACK_MS,
    INTERRUPTING_STOPS,
    MAX_REQUESTED,
    NEEDS_RULE,
    NEXT_COUNT_OUT_OF_WINDOW,
    NEXT_OK,
    NEXT_RESUME_BOUNDARY,
    NEXT_TERMINAL_MISSING,
    NEXT_TERMINAL_NOT_COMPLETED,
    RECOVER_ORPHANED_RUN,
    RULES,
    SHA256_HEX,
    STOP_DISPOSED,
    STOP_INCONSISTENT,
    STOP_NO_RUN,
    STOP_TOKEN_BUDGET,
    STOP_USER,
    TERMINAL_STATUSES,
    TIME_FORMAT,
    RecordType,
)
from tickloop.protocol.report import VerifyReport, Violation


class Phase(StrEnum):
    """Where a run is, as its records show it (``tickloop.protocol.run.RunState`` as seen in a ledger).

    ``ended`` is the moment after a step's terminal, before the run's next decision is recorded;
    ``cancelled`` is a cancelled step whose ``loop_stopped`` has not been written yet.
    """

    ARMED = "armed"  #: loop_armed said the next step can be scheduled at once
    WAITING = "waiting"  #: loop_armed said the latest turn had no terminal yet
    SCHEDULED = "scheduled"
    ENQUEUED = "enqueued"
    ENDED = "ended"
    CANCELLED = "cancelled"
    CLOSED = "closed"


Ph = Phase
R = RecordType
#: Every transition a run's records may make. A (phase, record type) pair not listed is a violation;
#: the guards in ``Verifier`` then check the step numbers, rules and counts of the allowed ones.
TRANSITIONS: Mapping[tuple[Phase, RecordType], Phase] = {
    (Ph.ARMED, R.TICK_SCHEDULED): Ph.SCHEDULED,
    (Ph.ARMED, R.LOOP_STOPPED): Ph.CLOSED,
    (Ph.WAITING, R.TICK_SCHEDULED): Ph.SCHEDULED,
    (Ph.WAITING, R.LOOP_STOPPED): Ph.CLOSED,
    (Ph.SCHEDULED, R.TICK_ENQUEUED): Ph.ENQUEUED,
    (Ph.SCHEDULED, R.TICK_CANCELLED): Ph.CANCELLED,
    (Ph.SCHEDULED, R.LOOP_STOPPED): Ph.CLOSED,
    (Ph.CANCELLED, R.LOOP_STOPPED): Ph.CLOSED,
    (Ph.ENQUEUED, R.TICK_TERMINAL): Ph.ENDED,
    (Ph.ENQUEUED, R.LOOP_STOPPED): Ph.CLOSED,
    (Ph.ENDED, R.TICK_SCHEDULED): Ph.SCHEDULED,
    (Ph.ENDED, R.LOOP_COMPLETE): Ph.CLOSED,
    (Ph.ENDED, R.LOOP_STOPPED): Ph.CLOSED,
}
#: The rules a ``loop_stopped`` may carry in each phase (``ended`` depends on the terminal's status;
#: ``cancelled`` must repeat the cancel's own rule).
STOP_RULES: Mapping[Phase, frozenset[str]] = {
    Ph.ARMED: INTERRUPTING_STOPS,
    Ph.WAITING: INTERRUPTING_STOPS | {NEXT_TERMINAL_NOT_COMPLETED, NEXT_COUNT_OUT_OF_WINDOW},
    Ph.SCHEDULED: frozenset({RECOVER_ORPHANED_RUN}),
    Ph.ENQUEUED: INTERRUPTING_STOPS | {STOP_INCONSISTENT},
}
_STOP_AFTER_COMPLETED = frozenset({NEXT_COUNT_OUT_OF_WINDOW, RECOVER_ORPHANED_RUN, STOP_TOKEN_BUDGET})
_STOP_AFTER_FAILED = _STOP_AFTER_COMPLETED | {NEXT_TERMINAL_NOT_COMPLETED}
#: The rule reported when a record type arrives in a phase the table does not allow.
_ILLEGAL: Mapping[RecordType, str] = {
    R.TICK_SCHEDULED: "verify.schedule_out_of_order",
    R.TICK_ENQUEUED: "verify.enqueue_without_schedule",
    R.TICK_TERMINAL: "verify.terminal_out_of_order",
    R.TICK_CANCELLED: "verify.cancel_out_of_order",
    R.LOOP_COMPLETE: "verify.complete_short",
    R.LOOP_STOPPED: "verify.stop_rule_mismatch",
}


@dataclass(slots=True)
class RunTrace:
    run_id: str
    line: int
    policy: tuple[Any, ...]
    requested: int  #: the bound the steps are checked against (``MAX_REQUESTED`` when ``shown`` is invalid)
    resume_boundary: bool
    phase: Phase
    first_rule: str | None  #: the rule loop_armed's ``next`` promised for step 1, when it said
    step: int = 0  #: the step the run is at (scheduled, enqueued or ended)
    enqueued: int = 0
    status: str | None = None  #: the status of the latest terminal
    cancel_rule: str | None = None
    due: str | None = None  #: dueAt of the pending step
    shown: Any = None  #: the requested value as the ledger gave it (named in messages, even when invalid)


_KINDS: Mapping[str, RecordType] = {str(kind): kind for kind in RecordType}
#: What ``RunMachine.runs`` keeps of every closed run (its records are all checked by then).
_CLOSED = RunTrace(
    run_id="", line=0, policy=(), requested=0, resume_boundary=False, phase=Phase.CLOSED, first_rule=None
)


class RunMachine:
    """Every run of one ledger, each at its ``Phase``; ``run_record`` checks one record against them."""

    def __init__(self, report: VerifyReport) -> None:
        self.report = report
        self.runs: dict[str, RunTrace] = {}
        self.open: dict[str, RunTrace] = {}  #: runs armed and not closed, oldest first
        self.armed_any = False

    def fail(self, line: int, rule: str, message: str) -> None:
        self.report.add(Violation(line, rule, message))

    @property
    def active(self) -> RunTrace | None:
        """The newest run still open (there should never be more than one)."""
        return next(reversed(self.open.values()), None)

    def run_record(self, lineno: int, rec: Mapping[str, Any]) -> None:
        """Check one decoded record's rule, then move its run (a ``command_rejected``: the session)."""
        kind = _KINDS[rec["type"]]  # decode() let only known types through
        rule = self._rule(lineno, kind, rec.get("rule"))
        if kind is RecordType.COMMAND_REJECTED:
            self._rejected(lineno, rule)
            return
        if kind is RecordType.LEDGER_MODE:
            return  # the chain's business (tickloop.protocol.chain), not a run's
        run_id = rec.get("runId")
        if not isinstance(run_id, str) or not run_id:
            self.fail(lineno, "verify.missing_run_id", f"{kind} must carry runId")
            return
        self.check_policy(lineno, rec)
        if kind is RecordType.LOOP_ARMED:
            self._armed(lineno, run_id, rec, rule)
            return
        trace = self.runs.get(run_id)
        if trace is None:
            self.fail(lineno, "verify.unknown_run", f"{kind} for run {run_id} that was never armed")
            return
        if trace.phase is Phase.CLOSED:
            self.fail(lineno, "verify.record_after_close", f"{kind} after run {run_id} closed")
            return
        if _policy_of(rec) != trace.policy:
            self.fail(lineno, "verify.policy_changed", f"policy fields changed within run {run_id}")
        if rec.get("resumeBoundary") is not None:
            self.fail(lineno, "verify.resume_misuse", "resumeBoundary appears only on loop_armed")
        self._transition(lineno, kind, trace, rec, rule)

    def check_policy(self, lineno: int, rec: Mapping[str, Any]) -> None:
        """The policy fields of a run record (``Verifier`` checks their form)."""

    def _rule(self, lineno: int, kind: RecordType, rule: Any) -> str | None:
        if kind in NEEDS_RULE or rule is not None:
            if not isinstance(rule, str):
                self.fail(lineno, "verify.missing_rule", f"{kind} must name the rule that caused it")
                return None
            if rule not in RULES.get(kind, ()):
                self.fail(lineno, "verify.unknown_rule", f"{rule!r} is not a rule a {kind} record can carry")
        return rule if isinstance(rule, str) else None

    # -- records outside a run -------------------------------------------------------------------------

    def _rejected(self, lineno: int, rule: str | None) -> None:
        contradiction = None
        if rule == "admit.run_active" and self.active is None:
            contradiction = "refused as 'a run is active' while no run is active"
        elif rule == STOP_NO_RUN and self.active is not None:
            contradiction = f"refused as 'no active run' while run {self.active.run_id} is active"
        elif rule in {"admit.natural_context", "admit.no_closed_turn"} and self.armed_any:
            contradiction = f"refused as {rule} after a run was armed, which needed a closed natural turn"
        if contradiction is not None:
            self.fail(lineno, "verify.refusal_contradicts_state", contradiction)

    def _armed(self, lineno: int, run_id: str, rec: Mapping[str, Any], rule: str | None) -> None:
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
        if not (is_int(requested) and 1 <= requested <= MAX_REQUESTED):
            self.fail(
                lineno,
                "verify.bad_field",
                f"loop_armed must carry requested in 1..{MAX_REQUESTED}, not {str(requested)[:40]!r}",
            )
            shown: Any = str(requested)[:40]
            requested = MAX_REQUESTED
        else:
            shown = requested
        resume, boundary = rec.get("resume"), rec.get("resumeBoundary")
        if resume is not None and not isinstance(resume, bool):
            self.fail(lineno, "verify.bad_field", "resume must be true or false")
        if boundary not in (None, True):
            self.fail(lineno, "verify.bad_field", "resumeBoundary, when present, must be true")
        boundary = boundary is True
        if boundary and (resume is not True or rule not in (None, ADMIT_RESUME_BOUNDARY)):
            self.fail(lineno, "verify.resume_misuse", "a resume boundary without --resume and its admit rule")
            boundary = False
        elif rule == ADMIT_RESUME_BOUNDARY and not boundary:
            self.fail(lineno, "verify.resume_misuse", "admitted across a resume boundary it does not record")
            boundary = True
        first = rec.get("next")
        phase = Phase.ARMED
        if first is not None:
            allowed = {NEXT_RESUME_BOUNDARY if boundary else NEXT_OK, NEXT_TERMINAL_MISSING}
            if first not in allowed:
                self.fail(lineno, "verify.unknown_rule", f"next {first!r} cannot follow this admission")
                first = None
            elif first == NEXT_TERMINAL_MISSING:
                phase, first = Phase.WAITING, None
        trace = RunTrace(
            run_id=run_id,
            line=lineno,
            policy=_policy_of(rec),
            requested=requested,
            shown=shown,
            resume_boundary=boundary,
            phase=phase,
            first_rule=first,
        )
        self.runs[run_id] = trace
        self.open[run_id] = trace
        self.armed_any = True
        self.report.runs += 1

    # -- the state machine -------------------------------------------------------------------------------

    def _transition(
        self, lineno: int, kind: RecordType, trace: RunTrace, rec: Mapping[str, Any], rule: str | None
    ) -> None:
        target = TRANSITIONS.get((trace.phase, kind))
        if target is None:
            self._illegal(lineno, kind, trace, rec)
        elif kind is R.TICK_SCHEDULED:
            self._scheduled(lineno, trace, rec, rule)
        elif kind is R.TICK_ENQUEUED:
            self._enqueued(lineno, trace, rec)
        elif kind is R.TICK_TERMINAL:
            self._terminal(lineno, trace, rec)
        elif kind is R.TICK_CANCELLED:
            self._step_is(lineno, trace, rec, "verify.step_order", "cancelled")
            trace.cancel_rule = rule
        elif kind is R.LOOP_STOPPED:
            self._stopped(lineno, trace, rule)
        elif kind is R.LOOP_COMPLETE:
            self._complete(lineno, trace)
        if target is None:
            target = Phase.CLOSED if kind in CLOSING else _RESYNC.get(kind, trace.phase)
        trace.phase = target
        if kind in CLOSING:
            self._close(lineno, trace, rec)

    def _illegal(self, lineno: int, kind: RecordType, trace: RunTrace, rec: Mapping[str, Any]) -> None:
        rule = _ILLEGAL[kind]
        if kind is R.TICK_CANCELLED:
            trace.cancel_rule = rec.get("rule")
        if kind is R.TICK_ENQUEUED and trace.phase is Phase.CANCELLED:
            rule = "verify.enqueue_after_cancel"
        if kind is R.LOOP_COMPLETE and trace.phase is Phase.CANCELLED:
            rule = "verify.complete_short"
        step = rec.get("step")
        if is_int(step) and kind in (R.TICK_SCHEDULED, R.TICK_ENQUEUED, R.TICK_TERMINAL, R.TICK_CANCELLED):
            trace.step = step
            if kind is R.TICK_ENQUEUED:
                trace.enqueued = max(trace.enqueued, step)
                self.report.enqueued += 1
        self.fail(lineno, rule, f"{kind} is not allowed while run {trace.run_id} is {trace.phase}")

    def _step_is(self, lineno: int, trace: RunTrace, rec: Mapping[str, Any], rule: str, what: str) -> bool:
        step = rec.get("step")
        if step != trace.step or not is_int(step):
            self.fail(lineno, rule, f"{what} step {step!r} but step {trace.step} is pending")
            return False
        return True

    def _scheduled(self, lineno: int, trace: RunTrace, rec: Mapping[str, Any], rule: str | None) -> None:
        step = rec.get("step")
        if trace.phase is Phase.ENDED and trace.status != "completed":
            self.fail(
                lineno,
                "verify.schedule_without_completed_terminal",
                f"step {step!r} scheduled after step {trace.step} ended {trace.status}",
            )
        if step != trace.step + 1 or not is_int(step):
            self.fail(lineno, "verify.step_order", f"step {step!r} scheduled after step {trace.step}")
        elif step > trace.requested:
            self.fail(
                lineno,
                "verify.enqueue_beyond_target",
                f"step {step} exceeds the {trace.shown} requested",
            )
        if rule == NEXT_RESUME_BOUNDARY and not (trace.resume_boundary and trace.step == 0):
            self.fail(
                lineno,
                "verify.resume_misuse",
                "the resume boundary is crossed only before step 1 of a resumed run",
            )
        elif (
            trace.phase is Phase.ARMED
            and trace.first_rule is not None
            and rule not in (None, trace.first_rule)
        ):
            self.fail(
                lineno,
                "verify.resume_misuse",
                f"loop_armed promised {trace.first_rule}, the schedule says {rule}",
            )
        trace.step = step if is_int(step) else trace.step + 1
        due = rec.get("dueAt")
        trace.due = None
        if due is not None:
            if not (isinstance(due, str) and TIME_FORMAT.fullmatch(due)):
                self.fail(lineno, "verify.bad_field", "dueAt is not YYYY-MM-DDTHH:MM:SS.mmmZ")
            else:
                trace.due = due
                at = rec["recordedAt"]
                if due < at and ms(due) < ms(at) - DUE_SLACK_MS:
                    self.fail(lineno, "verify.time_order", f"dueAt {due} is before the step was scheduled")

    def _enqueued(self, lineno: int, trace: RunTrace, rec: Mapping[str, Any]) -> None:
        self._step_is(lineno, trace, rec, "verify.step_order", "enqueued")
        at = rec["recordedAt"]
        due = trace.due
        if due is not None and at < due and TIME_FORMAT.fullmatch(at) and ms(at) < ms(due) - DUE_SLACK_MS:
            self.fail(lineno, "verify.time_order", f"step {trace.step} enqueued before it was due")
        trace.enqueued += 1
        self.report.enqueued += 1

    def _terminal(self, lineno: int, trace: RunTrace, rec: Mapping[str, Any]) -> None:
        self._step_is(lineno, trace, rec, "verify.terminal_out_of_order", "terminal for")
        status = rec.get("status")
        if status not in TERMINAL_STATUSES:
            self.fail(lineno, "verify.bad_field", f"status {status!r} is not a terminal status")
        trace.status = status if isinstance(status, str) else None
        problem = _usage_problem(rec, status)
        if problem:
            self.fail(lineno, "verify.bad_field", problem)

    def _stopped(self, lineno: int, trace: RunTrace, rule: str | None) -> None:
        if rule is None:
            return
        if trace.phase is Phase.CANCELLED:
            allowed = frozenset({trace.cancel_rule or "", RECOVER_ORPHANED_RUN})
        elif trace.phase is Phase.ENDED:
            allowed = _STOP_AFTER_COMPLETED if trace.status == "completed" else _STOP_AFTER_FAILED
            if trace.status == "completed" and trace.step < trace.requested:
                allowed = allowed | {STOP_USER, STOP_DISPOSED}
        else:
            allowed = STOP_RULES[trace.phase]
        if rule not in allowed:
            self.fail(
                lineno,
                "verify.stop_rule_mismatch",
                f"loop_stopped by {rule} cannot happen while {trace.phase}",
            )

    def _complete(self, lineno: int, trace: RunTrace) -> None:
        if trace.status != "completed":
            self.fail(lineno, "verify.complete_short", f"loop_complete after {_terminal_named(trace.status)}")
        elif trace.enqueued != trace.requested:
            self.fail(
                lineno,
                "verify.complete_short",
                f"loop_complete after {trace.enqueued} of {trace.shown} steps",
            )

    def _close(self, lineno: int, trace: RunTrace, rec: Mapping[str, Any]) -> None:
        steps = rec.get("steps")
        if steps is not None and steps != trace.enqueued:
            self.fail(
                lineno,
                "verify.steps_mismatch",
                f"closes after {steps!r} steps; {trace.enqueued} were enqueued",
            )
        self.open.pop(trace.run_id, None)
        self.runs[trace.run_id] = _CLOSED  # a closed run is remembered by its id alone: memory stays flat


#: Where a run is after a record the table does not allow: the record's own phase (no cascade).
_RESYNC: Mapping[RecordType, Phase] = {
    R.TICK_SCHEDULED: Phase.SCHEDULED,
    R.TICK_ENQUEUED: Phase.ENQUEUED,
    R.TICK_TERMINAL: Phase.ENDED,
    R.TICK_CANCELLED: Phase.CANCELLED,
}


def is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def ms(at: str) -> int:
    """Milliseconds since the epoch of a ``YYYY-MM-DDTHH:MM:SS.mmmZ`` time (checked by the caller)."""
    moment = datetime(
        int(at[0:4]), int(at[5:7]), int(at[8:10]), int(at[11:13]), int(at[14:16]), int(at[17:19]), tzinfo=UTC
    )
    return int(moment.timestamp()) * 1000 + int(at[20:23])


def _usage_problem(rec: Mapping[str, Any], status: Any) -> str | None:
    usage, reported = rec.get("usage"), rec.get("usageReported")
    if usage is not None:
        if not (
            isinstance(usage, dict)
            and set(usage) == {"inputTokens", "outputTokens"}
            and all(is_int(v) and v >= 0 for v in usage.values())
        ):
            return "usage must be {inputTokens, outputTokens} with non-negative integers"
        if reported is not None:
            return "usage and usageReported are exclusive"
    if reported is not None and (reported is not False or status != "completed"):
        return "usageReported appears only as false, on a completed terminal"
    for name in ("toolCalls", "toolErrors"):
        value = rec.get(name)
        if value is not None and not (is_int(value) and value >= 0):
            return f"{name} must be a non-negative integer"
    return _content_problem(rec)


def _content_problem(rec: Mapping[str, Any]) -> str | None:
    reply, results = rec.get("replySha256"), rec.get("toolResultSha256s")
    if reply is not None and not (isinstance(reply, str) and SHA256_HEX.fullmatch(reply)):
        return "replySha256 must be 64 lowercase hex digits"
    if results is not None and not (
        isinstance(results, list)
        and results
        and all(isinstance(r, str) and SHA256_HEX.fullmatch(r) for r in results)
    ):
        return "toolResultSha256s must be a non-empty list of 64-hex-digit digests"
    if results is not None and rec.get("toolCalls") not in (None, len(results)):
        return f"toolResultSha256s lists {len(results)} results for {rec.get('toolCalls')!r} tool calls"
    return None


def _policy_of(rec: Mapping[str, Any]) -> tuple[Any, ...]:
    return (rec.get("policyId"), rec.get("timeStepSha256"), rec.get("timeStepBytes"))  # POLICY_FIELDS


def _terminal_named(status: str | None) -> str:
    """``an error terminal``, ``a cancelled terminal``; ``no valid terminal`` when none was read."""
    if not status:
        return "no valid terminal"
    return f"{'an' if status[0] in 'aeiou' else 'a'} {status} terminal"
