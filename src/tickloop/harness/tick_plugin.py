"""The tick plugin: the Tick Protocol hosted on an Agent. One run and one timer per agent.

The pure core decides (``parse_tick``, ``admit``, ``next_step``, ``Run.to``); this module adds the
timer, the ledger writes and the ``/tick`` command. Every decision leaves a ledger record, written
(and, with a ``LedgerFile``, fsynced) before the plugin acts on it.

States follow ``tickloop.protocol.run``: armed -> waiting | scheduled; scheduled -> enqueued (the
timer fired, the run generation matches and the whole predicate still holds on an identical state)
or cancelled (at once when a person's message is submitted, or when the timer finds the state
changed); enqueued -> scheduled | complete | stopped on the step's terminal.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from tickloop.clock import utc_iso
from tickloop.errors import ConfigError, TickCommandError
from tickloop.harness.commands import CommandResult
from tickloop.harness.plugin import PluginHost
from tickloop.harness.session import Terminal, Turn
from tickloop.harness.tick_ledger import RECOVER_ORPHANED_RUN, LedgerSink, orphaned_run
from tickloop.harness.tick_options import TickOptions
from tickloop.harness.timers import LoopTimers, TimerHandle, Timers
from tickloop.protocol.command import ControlOp, TickControl, TickStart, parse_tick
from tickloop.protocol.envelope import PLUGIN_NAME, Message, time_step_message
from tickloop.protocol.ledger import (  # the rule ids live with the verifier's vocabulary
    CANCEL_PERSON_MESSAGE,
    CANCEL_STATE_CHANGED,
    STOP_DISPOSED,
    STOP_INCONSISTENT,
    STOP_NO_RUN,
    STOP_TOKEN_BUDGET,
    STOP_USER,
    RecordType,
    record,
)
from tickloop.protocol.policy import CompiledPolicy
from tickloop.protocol.predicates import Decision, Next, SessionView, TerminalStatus, admit, next_step
from tickloop.protocol.run import Run, RunState

#: A model that reports no usage is charged this estimate instead (and the stop record says so).
CHARS_PER_TOKEN = 4


class TickPlugin:
    """Hosts ``/tick``. Construct with options and a ledger sink; the Agent calls ``start``."""

    name = PLUGIN_NAME

    def __init__(
        self,
        options: TickOptions,
        ledger: LedgerSink,
        *,
        timers: Timers | None = None,
        prior_records: Iterable[Mapping[str, Any]] = (),
    ) -> None:
        self.options = options
        self.ledger = ledger
        self.timers: Timers = timers or LoopTimers()
        self._orphan = orphaned_run(prior_records)
        self._host: PluginHost | None = None
        self._run: Run | None = None
        self._generation = 0  #: bumps on every schedule and close: a stale timer sees a mismatch
        self._timer: TimerHandle | None = None
        self._token: Hashable = None  #: the agent state when the pending step was scheduled
        self._due: datetime | None = None
        self._last: str | None = None  #: one line about the most recent closed run, for /tick status
        self._reset_counters()

    def _reset_counters(self) -> None:
        """The current run's counters, zero when a run is armed."""
        self._enqueued = 0  #: steps of the current run enqueued so far
        #: a person's message queued while the run waited for a turn: the next step is cancelled as
        #: soon as it is scheduled (that message goes first, so the state will have changed)
        self._person_queued = False
        self._spent = 0  #: tokens the current run's steps used (reported, or estimated when not)
        self._estimated = False  #: some of ``_spent`` is an estimate: the model reported no usage

    @property
    def run(self) -> Run | None:
        """The current run, if one is active."""
        return self._run

    @property
    def busy(self) -> bool:
        return self._run is not None

    # -- plugin hooks ------------------------------------------------------------------------------

    def start(self, host: PluginHost) -> None:
        if self._host is not None:
            raise ConfigError("a TickPlugin serves exactly one agent: one run and one timer per agent")
        self._host = host
        host.register_command(
            "tick", self.handle, "/tick [N] [--policy ID] [--resume] | status | stop | policies"
        )
        if self._orphan is not None:
            self._write(RecordType.LOOP_STOPPED, **self._orphan, rule=RECOVER_ORPHANED_RUN)
            host.notice(
                f"closed run {self._orphan['runId']} left open by an earlier process ({RECOVER_ORPHANED_RUN})"
            )
            self._orphan = None

    def on_terminal(self, turn: Turn) -> None:
        with self._guard():
            self._observe(turn)

    def _observe(self, turn: Turn) -> None:
        run = self._run
        if run is None or turn.terminal is None:
            return
        if run.state is RunState.ENQUEUED:
            self._step_ended(run, turn, turn.terminal)
        elif run.state is RunState.WAITING:
            self._advance()
        # SCHEDULED: the timer re-checks the whole state when it fires and cancels on any change.

    def _step_ended(self, run: Run, turn: Turn, terminal: Terminal) -> None:
        """The enqueued step's turn ended: record it, then stop (not that step; over budget) or go on."""
        if turn.input.meta.get("runId") != run.run_id or turn.input.meta.get("step") != self._enqueued:
            self._close(RecordType.LOOP_STOPPED, STOP_INCONSISTENT, RunState.STOPPED)
            return
        self._write_run(
            RecordType.TICK_TERMINAL,
            step=self._enqueued,
            status=str(terminal.status),
            **terminal.usage_fields(),
            **terminal.tool_fields(),
            **turn.content_fields(),
        )
        if self._over_budget(turn):
            self._stop_over_budget()
            return
        self._advance()

    def _stop_over_budget(self) -> None:
        self._close(
            RecordType.LOOP_STOPPED,
            STOP_TOKEN_BUDGET,
            RunState.STOPPED,
            tokens=self._spent,
            usageEstimated=self._estimated,
        )

    def _over_budget(self, turn: Turn) -> bool:
        """Charge the step's tokens to the run; True once the run has spent more than its budget.

        The model's reported usage counts; a turn without it is charged an estimate from the text
        (``CHARS_PER_TOKEN``), and the stop record says the total holds an estimate."""
        terminal = turn.terminal
        if terminal is not None and terminal.usage is not None:
            self._spent += terminal.usage.input_tokens + terminal.usage.output_tokens
        else:
            reply = "" if turn.reply is None else turn.reply.text
            self._spent += -(-(len(turn.input.text) + len(reply)) // CHARS_PER_TOKEN)
            self._estimated = True
        budget = self.options.max_tokens_per_run
        return budget > 0 and self._spent > budget

    def on_person_message(self, message: Message) -> None:  # noqa: ARG002  (any person's message counts)
        """A person's message cancels a pending time step now: the cancel, the disposed timer, the stop.

        While a turn runs (a step's, or the one an armed run waits for), the next step is cancelled
        the moment it is scheduled: the message is queued ahead of it, so it could never be sent.
        """
        with self._guard():
            if self._run is None:
                return
            if self._run.state is RunState.SCHEDULED:
                self._cancel_for_person()
            else:
                self._person_queued = True

    def dispose(self) -> None:
        if self._run is not None:
            self._stop(STOP_DISPOSED)
        close = getattr(self.ledger, "close", None)
        if close is not None:
            close()

    # -- the /tick command ---------------------------------------------------------------------------

    def handle(self, line: str) -> CommandResult:
        """Run one ``/tick`` line; every outcome, refusals included, is in the ledger first."""
        result = CommandResult("/tick failed; the run was abandoned (see the message above)", ok=False)
        with self._guard():
            result = self._handle(line)
        return result  # noqa: RET504  (the guard may swallow the exception: result keeps the fallback)

    def _handle(self, line: str) -> CommandResult:
        opts = self.options
        try:
            command = parse_tick(
                line,
                default_count=opts.default_ticks,
                default_policy=opts.default_policy,
                known_policies=opts.policies,
            )
        except TickCommandError as exc:
            return self._reject(exc.rule, exc.message, token=exc.token)
        if isinstance(command, TickControl):
            return self._control(command)
        return self._arm(command)

    def _control(self, command: TickControl) -> CommandResult:
        if command.op is ControlOp.POLICIES:
            return CommandResult(self.policies_text())
        if command.op is ControlOp.STATUS:
            return CommandResult(self.status_text())
        if self._run is None:
            return self._reject(STOP_NO_RUN, "no active run to stop")
        run_id = self._run.run_id
        final = self._stop(STOP_USER)
        # the word /tick status uses for the same run: cancelled (a pending step dropped) or stopped
        return CommandResult(f"run {run_id} {final} ({STOP_USER})")

    def _reject(self, rule: str, message: str, *, token: str | None = None) -> CommandResult:
        self._write(RecordType.COMMAND_REJECTED, rule=rule, token=None if token is None else token[:64])
        return CommandResult(f"/tick refused: {message} [{rule}]", ok=False)

    def _arm(self, command: TickStart) -> CommandResult:
        host = self._require_host()
        view = host.view()
        decision = admit(
            view,
            run_active=self._run is not None,
            policy_known=command.policy_id in self.options.policies,
            resume=command.resume,
        )
        if not decision.allowed:
            message = _admit_message(decision.rule, view.latest_terminal, resume=command.resume)
            return self._reject(decision.rule, message)
        run = self._begin(command, view, decision.rule)
        host.changed()
        self._advance()
        return CommandResult(
            f"run {run.run_id} armed: {command.count} time step(s) with policy {run.policy.id}"
        )

    def _begin(self, command: TickStart, view: SessionView, rule: str) -> Run:
        """A new run, its counters at zero and its ``loop_armed`` record written."""
        run = self._run = _new_run(command, view, self.options.policies[command.policy_id])
        self._reset_counters()
        first = next_step(run, view)  # recorded here so a run that starts by waiting says so
        self._write_run(
            RecordType.LOOP_ARMED,
            requested=command.count,
            resume=command.resume,
            resumeBoundary=True if rule == "admit.resume_boundary" else None,
            rule=rule,
            next=first.rule,
        )
        return run

    # -- the run -----------------------------------------------------------------------------------

    def _advance(self) -> None:
        """Ask ``next_step`` what the run does now, and do it."""
        run, host = self._run, self._require_host()
        if run is None:
            return
        decision = next_step(run, host.view())
        if decision.next is Next.SCHEDULE:
            self._schedule(run, decision)
        elif decision.next is Next.WAIT:
            self._run = run.to(RunState.WAITING)
        elif decision.next is Next.COMPLETE:
            self._close(RecordType.LOOP_COMPLETE, decision.rule, RunState.COMPLETE)
        else:
            self._close(RecordType.LOOP_STOPPED, decision.rule, RunState.STOPPED)

    def _schedule(self, run: Run, decision: Decision) -> None:
        host = self._require_host()
        delay = self.options.delay_ms / 1000
        self._generation += 1
        self._token = host.state_token()
        self._due = host.clock.now() + timedelta(seconds=delay)
        self._write_run(
            RecordType.TICK_SCHEDULED, step=self._enqueued + 1, rule=decision.rule, dueAt=utc_iso(self._due)
        )
        self._run = run.to(RunState.SCHEDULED)
        if self._person_queued:
            self._cancel_for_person()
            return
        generation = self._generation
        self._timer = self.timers.call_later(delay, lambda: self._fire(generation))

    def _fire(self, generation: int) -> None:
        """The timer: enqueue only if this is still the run's pending step and nothing changed."""
        with self._guard():
            self._fire_checked(generation)

    def _fire_checked(self, generation: int) -> None:
        run, host = self._run, self._require_host()
        if generation != self._generation or run is None or run.state is not RunState.SCHEDULED:
            return  # a stale timer from an earlier schedule or run: never enqueue into a newer one
        self._timer = None
        decision = next_step(run, host.view())
        if host.state_token() != self._token or not host.idle():
            self._cancel(CANCEL_STATE_CHANGED)
        elif decision.next is not Next.SCHEDULE:
            self._cancel(decision.rule)
        else:
            self._enqueue(run)

    def _enqueue(self, run: Run) -> None:
        self._enqueued += 1
        self._write_run(RecordType.TICK_ENQUEUED, step=self._enqueued)
        self._run, self._due = run.to(RunState.ENQUEUED), None
        meta = {"runId": run.run_id, "step": self._enqueued, "of": run.requested, "policy": run.policy.id}
        self._require_host().enqueue(replace(time_step_message(run.policy), meta=meta))

    def _stop(self, rule: str) -> RunState:
        """End the run: ``cancelled`` if a step was pending (it is never sent), else ``stopped``."""
        if self._run is not None and self._run.state is RunState.SCHEDULED:
            self._cancel(rule)
            return RunState.CANCELLED
        self._close(RecordType.LOOP_STOPPED, rule, RunState.STOPPED)
        return RunState.STOPPED

    def _cancel_for_person(self) -> None:
        """The person's message goes first: cancel the pending step, and say so in one line."""
        run_id = self._run.run_id if self._run is not None else "?"
        self._cancel(CANCEL_PERSON_MESSAGE)
        self._require_host().notice(
            f"run {run_id} {RunState.CANCELLED} ({CANCEL_PERSON_MESSAGE}): your message goes first; "
            "/tick N starts a new run"
        )

    def _cancel(self, rule: str) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._write_run(RecordType.TICK_CANCELLED, step=self._enqueued + 1, rule=rule)
        self._close(RecordType.LOOP_STOPPED, rule, RunState.CANCELLED)

    def _close(self, kind: RecordType, rule: str, final: RunState, **extra: Any) -> None:
        run = self._run
        if run is None:
            return
        run.to(final)  # checks the transition table before anything is written
        self._write_run(kind, rule=rule, steps=self._enqueued, **extra)
        self._last = (
            f"last run {run.run_id} {final} ({rule}) after {self._enqueued} of {run.requested} steps, "
            f"policy {run.policy.id} sha256:{run.policy.time_step_sha256[:12]}"
        )
        self._run, self._due, self._token, self._person_queued = None, None, None, False
        self._generation += 1
        self._require_host().changed()

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        """If acting fails (e.g. the ledger cannot be written), abandon the run rather than hang.

        The ledger then shows the run open; the next start closes it as ``recover.orphaned_run``.
        """
        try:
            yield
        except Exception as exc:  # noqa: BLE001  (any failure here must release the agent, and say so)
            if self._timer is not None:
                self._timer.cancel()
            self._run, self._timer, self._due, self._token = None, None, None, None
            self._person_queued = False
            self._generation += 1
            if self._host is not None:
                self._host.notice(f"tick run abandoned: {exc!r}", error=True)
                self._host.changed()

    # -- records and text --------------------------------------------------------------------------

    def _write_run(self, kind: RecordType, **fields: Any) -> None:
        run = self._run
        if run is None:
            return
        policy = run.policy
        self._write(
            kind,
            runId=run.run_id,
            policyId=policy.id,
            timeStepSha256=policy.time_step_sha256,
            timeStepBytes=policy.time_step_bytes,
            **fields,
        )

    def _write(self, kind: RecordType, **fields: Any) -> None:
        host = self._require_host()
        self.ledger.append(record(kind, recorded_at=host.clock.now(), session_id=host.session_id, **fields))

    def _require_host(self) -> PluginHost:
        if self._host is None:
            raise RuntimeError("the tick plugin has not been started by an Agent")
        return self._host

    def status_text(self) -> str:
        """Run id, policy id with a sha256 prefix, "k of n", state, and when the next step is due."""
        run = self._run
        if run is None:
            return "no active run" + (f"; {self._last}" if self._last else "")
        policy = run.policy
        due = "-"
        if self._due is not None:
            left_ms = max(0, round((self._due - self._require_host().clock.now()).total_seconds() * 1000))
            due = f"{utc_iso(self._due)} (in {left_ms} ms)"
        return (
            f"run {run.run_id}  policy {policy.id} sha256:{policy.time_step_sha256[:12]}  "
            f"step {self._enqueued} of {run.requested}  state {run.state}  next step due {due}"
        )

    def policies_text(self) -> str:
        """One line per policy: id, UTF-8 bytes, sha256."""
        return "\n".join(
            f"{p.id:<24} {p.time_step_bytes:>5} B  sha256:{p.time_step_sha256}"
            for p in self.options.policies.values()
        )


_ADMIT_MESSAGES = {
    "admit.natural_context": "no settled natural turn yet: say something to the model first",
    "admit.no_closed_turn": "no turn has ended yet",
    "admit.run_active": "a run is already active: /tick status shows it, /tick stop ends it",
    "admit.unknown_policy": "unknown policy: /tick policies lists them",
}


def _admit_message(rule: str, latest: TerminalStatus | None, *, resume: bool) -> str:
    """What a refusal says, with the way out that works for the latest turn's terminal.

    Only an ``interrupted`` turn can be crossed with ``--resume``; after ``error`` or ``unknown`` the
    way on is a new message from the person, whose completed turn lets ``/tick`` start again.
    """
    if rule != "admit.terminal_not_completed":
        return _ADMIT_MESSAGES.get(rule, rule)
    if latest is TerminalStatus.INTERRUPTED:
        return "the latest turn was interrupted; /tick N --resume continues across that one turn"
    crossed = "; --resume crosses only an interrupted turn" if resume else ""
    return (
        f"the latest turn ended {latest}{crossed}. Send the model a message: once that turn completes, "
        "/tick can start"
    )


def _new_run(command: TickStart, view: SessionView, policy: CompiledPolicy) -> Run:
    """A run of ``command.count`` time steps counted from the session's time steps so far."""
    return Run(
        run_id=uuid.uuid4().hex,
        policy=policy,
        start_count=view.time_steps,
        target_count=view.time_steps + command.count,
        resume_allowed=command.resume,
    )
