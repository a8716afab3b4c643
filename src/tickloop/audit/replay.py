"""``tickloop audit replay``: a ledger read against its session transcript.

The ledger says what the scheduler decided; the transcript says what the agent saw. Replay checks
that each decision was right given the transcript, and that the two files tell one story:

- each ``tick_enqueued`` matches exactly one plugin message of the transcript (its ``runId`` and
  ``step``, the text's sha256 and UTF-8 byte count), in the same order; no plugin message is left
  unaccounted for;
- the turn a step follows is the previous step's turn (for step 1, the run's starting turn), and it
  ended ``completed``, or ``interrupted`` exactly when the run was armed across the ``--resume``
  boundary; any other turn in between (a human message) needed a ``tick_cancelled_before_enqueue``;
- each ``tick_terminal`` has the status of its turn's durable terminal, and a turn's terminal missing
  from the ledger is one the run had already been closed for (``/tick stop``, a crash);
- a step cancelled for a state change has the change in the transcript.

Both files are read in step, a line at a time under a size cap (``replay_ledger.LedgerWalk`` and
``transcript.TranscriptReader.turns``): only the runs still open, the steps not yet paired, a short
window of turns read ahead and the delay check's recent times (``replay_delay``) are held.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tickloop.audit.ledger import DEFAULT_MAX_RECORD_BYTES, file_checks
from tickloop.audit.replay_delay import DelayCheck
from tickloop.audit.replay_ledger import Event, LedgerWalk, Run, Step
from tickloop.audit.replay_report import Disagreement, ReplayReport, RunRow
from tickloop.audit.transcript import TranscriptReader, Turn
from tickloop.errors import LedgerError
from tickloop.filenames import session_file_name
from tickloop.protocol.ledger import (
    CANCEL_PERSON_MESSAGE,
    CANCEL_STATE_CHANGED,
    MAX_REPORTED,
)
from tickloop.protocol.verify import Checks

__all__ = ["Disagreement", "ReplayReport", "RunRow", "replay", "transcript_path"]

#: Cancels that claim the state changed: the transcript must show the change (a person's message).
_STATE_CANCELS = frozenset({CANCEL_STATE_CHANGED, CANCEL_PERSON_MESSAGE})
#: Closes that can end a run while its step's turn is still running (its terminal then is not logged).
_CLOSE_WHILE_ENQUEUED = frozenset(
    {"stop.user", "stop.disposed", "stop.inconsistent_turn", "recover.orphaned_run"}
)
_LOOKAHEAD = 256  #: plugin turns read ahead to tell an extra turn from a missing one


def transcript_path(sessions_dir: Path, session_id: str) -> Path:
    """Where ``tickloop chat`` keeps the transcript of ``session_id``."""
    return sessions_dir / session_file_name(session_id)


class _Replay:
    def __init__(
        self, ledger: Path, sessions_dir: Path, *, max_record_bytes: int, checks: Checks, max_reported: int
    ) -> None:
        self.ledger_path = ledger
        self.sessions_dir = sessions_dir
        self.cap = max_record_bytes
        self.walk = LedgerWalk(ledger, checks, cap=max_record_bytes, max_reported=max_reported)
        self.ahead: deque[Turn] = deque()  #: plugin turns read ahead of the ledger (a bounded window)
        self.turns: Iterator[Turn] = iter(())
        self.pending_first: list[tuple[Run, int]] = []  #: step-1 state cancels (and their line) awaiting
        self.human_at = ""  #: the latest time a person started a turn
        self.report = ReplayReport(ledger=ledger, transcript=Path(), max_reported=max_reported)

    def ledger_says(self, line: int, message: str, run: Run | None = None) -> None:
        self.report.add(Disagreement(self.ledger_path, line, message))
        if run is not None:
            run.disagreements += 1

    def transcript_says(self, line: int, message: str, run: Run | None = None) -> None:
        self.report.add(Disagreement(self.report.transcript, line, message))
        if run is not None:
            run.disagreements += 1

    def open_transcript(self) -> None:
        """Read the ledger up to the session it names, and open that session's transcript."""
        while self.walk.session_id is None and self.walk.pull():
            pass
        session_id = self.walk.session_id
        if session_id is None:
            raise LedgerError(f"{self.ledger_path}: no readable record names a session")
        path = transcript_path(self.sessions_dir, session_id)
        self.report.transcript = path
        reader = TranscriptReader(path, session_id, self.transcript_says, cap=self.cap)
        self.turns = reader.turns()
        self.delays = DelayCheck(
            self.transcript_says,
            transcript_time=lambda: reader.last_at,
            ledger_time=lambda: self.walk.verifier.last_time,
        )

    # -- the two in step ----------------------------------------------------------------------------

    def run(self) -> None:
        for event in self.walk.events():
            if event.kind == "step":
                self._step(event)
                _forget(event)
            elif event.kind == "cancel":
                self._cancel(event)
                _forget(event)
            else:
                self._row(event.run)
        self.delays.ledger_ended()
        while (turn := self._plugin_turn(0)) is not None:
            self.ahead.popleft()
            self._extra(turn)
        for run in list(self.walk.runs.values()):
            self._row(run)
        for run, line in self.pending_first:
            self._no_change(run, 1, line)
        self._verified()

    def _step(self, event: Event) -> None:
        """Pair one enqueued step with the transcript's next plugin turn, or say which side lacks one."""
        key = (event.run.run_id, event.step_no)
        while (turn := self._plugin_turn(0)) is not None and turn.key != key:
            if not self._later(key):
                break
            self.ahead.popleft()
            self._extra(turn)
        if turn is not None and turn.key == key:
            self.ahead.popleft()
            self._pair(event, turn)
            return
        self.ledger_says(
            event.line, f"tick_enqueued {_key_text(key)} has no plugin message in the transcript", event.run
        )

    def _later(self, key: tuple[str, int]) -> bool:
        """The key is one of the plugin turns after the first in the window read ahead."""
        for index in range(1, _LOOKAHEAD):
            turn = self._plugin_turn(index)
            if turn is None:
                return False
            if turn.key == key:
                return True
        return False

    def _plugin_turn(self, index: int) -> Turn | None:
        """The ``index``-th plugin turn not yet paired, reading the transcript on as far as needed."""
        while len(self.ahead) <= index:
            turn = next(self.turns, None)
            if turn is None:
                self.delays.transcript_ended()
                return None
            self.report.turns += 1
            if turn.plugin:
                self.ahead.append(turn)
            else:
                self._human(turn)
        return self.ahead[index]

    def _extra(self, turn: Turn) -> None:
        run = self.walk.runs.get(str(turn.key[0])) if turn.key else None
        self.transcript_says(
            turn.line, f"plugin message {_key_text(turn.key)} has no tick_enqueued in the ledger", run
        )

    def _human(self, turn: Turn) -> None:
        self.delays.human(turn.at, turn.number, turn.line)
        self.human_at = max(self.human_at, turn.at)
        if self.pending_first:
            self.pending_first = [p for p in self.pending_first if p[0].armed_at > turn.at]

    def _row(self, run: Run) -> None:
        self.report.add_row(
            RunRow(
                run.run_id,
                str(run.policy[0]),
                run.requested,
                run.enqueued,
                run.matched,
                run.close,
                run.disagreements,
            )
        )
        self.walk.runs.pop(run.run_id, None)

    def _verified(self) -> None:
        report = self.walk.report
        assert report is not None
        self.report.verify = report
        self.report.records = report.records
        for violation in report.violations:
            self.ledger_says(violation.line, f"{violation.rule}: {violation.message}")
        self.report.disagreement_count += report.violation_count - len(report.violations)

    def _pair(self, event: Event, turn: Turn) -> None:
        run, step_no, step, run_id = event.run, event.step_no, event.step, event.run.run_id
        assert step is not None
        run.matched += 1
        run.last_paired = (step_no, turn.followed_by_human)
        _, sha, nbytes = run.policy
        if (turn.sha256, turn.nbytes) != (sha, nbytes):
            self.transcript_says(
                turn.line,
                f"step {step_no} of run {run_id}: the message text "
                f"({turn.nbytes} bytes, sha256 {turn.sha256[:12]}) "
                f"is not the run's policy text ({nbytes} bytes, sha256 {str(sha)[:12]})",
                run,
            )
        if turn.policy is not None and turn.policy != run.policy[0]:
            self.transcript_says(
                turn.line,
                f"step {step_no} was sent under policy {str(turn.policy)[:64]!r}; "
                f"the ledger says run {run_id} used {str(run.policy[0])[:64]!r}",
                run,
            )
        if turn.of != run.requested:
            self.transcript_says(
                turn.line,
                f"step {step_no} says it is of {turn.of!r}; the run was armed for {run.requested!r}",
                run,
            )
        self._terminal(run, step_no, step, turn)
        self._preceding(run, step_no, turn, event.line)
        if step.scheduled_at and step.due > step.scheduled_at:
            self.delays.window(step.scheduled_at, step.due, f"step {step_no} of run {run_id}", run)

    def _terminal(self, run: Run, step_no: int, step: Step, turn: Turn) -> None:
        if step.terminal is not None:
            if turn.terminal is None:
                self.ledger_says(
                    step.terminal_line,
                    f"step {step_no} ended {step.terminal}, "
                    f"but its turn {turn.number} has no terminal in the transcript",
                    run,
                )
            elif turn.terminal != step.terminal:
                self.ledger_says(
                    step.terminal_line,
                    f"step {step_no} ended {step.terminal}; "
                    f"the transcript says turn {turn.number} ended {turn.terminal}",
                    run,
                )
            elif turn.recovered:
                self.transcript_says(
                    turn.terminal_line,
                    f"turn {turn.number} was recovered after a crash, but the ledger saw it end live",
                    run,
                )
            else:
                self._content(run, step_no, step, turn)
        elif turn.terminal is not None and not (
            run.open_step == step_no and run.close_rule in _CLOSE_WHILE_ENQUEUED
        ):
            self.transcript_says(
                turn.terminal_line,
                f"turn {turn.number} (step {step_no} of run {run.run_id}) ended {turn.terminal}; "
                "the ledger has no tick_terminal for it",
                run,
            )

    def _content(self, run: Run, step_no: int, step: Step, turn: Turn) -> None:
        """The step's token usage, reply and tool results are the transcript's, record by record."""
        usage, reply, results = step.content or (None, None, ())
        where = f"step {step_no} of run {run.run_id} (turn {turn.number})"
        if usage != turn.usage:
            self.ledger_says(
                step.terminal_line,
                f"{where}: the ledger's usage {_usage_text(usage)} "
                f"is not the transcript's {_usage_text(turn.usage)}",
                run,
            )
        if reply != turn.reply_sha256:
            said = "records no reply" if reply is None else f"recorded reply sha256 {str(reply)[:12]}"
            seen = (
                "no reply" if turn.reply_sha256 is None else f"a reply with sha256 {turn.reply_sha256[:12]}"
            )
            self.transcript_says(
                turn.terminal_line, f"{where}: the ledger {said}; the transcript has {seen}", run
            )
        if results != turn.tool_sha256s:
            self.transcript_says(
                turn.terminal_line,
                f"{where}: the ledger's {len(results)} tool result digest(s) are not "
                f"the transcript's {len(turn.tool_sha256s)}",
                run,
            )

    def _preceding(self, run: Run, step_no: int, turn: Turn, ledger_line: int) -> None:
        if turn.before is None:
            self.transcript_says(
                turn.line,
                f"step {step_no} of run {run.run_id} is the first turn: no turn ended before it",
                run,
            )
            return
        number, line, key, plugin, terminal = turn.before
        if step_no > 1:
            if key != (run.run_id, step_no - 1):
                what = "a plugin message" if plugin else "a human message"
                self.transcript_says(
                    line,
                    f"turn {number} ({what}) came between step {step_no - 1} "
                    f"and step {step_no} of run {run.run_id}, "
                    "and the ledger has no tick_cancelled_before_enqueue for it",
                    run,
                )
            elif terminal != "completed":
                self.ledger_says(
                    ledger_line,
                    f"step {step_no} followed turn {number}, which ended {terminal}, not completed",
                    run,
                )
            return
        expected = "interrupted" if run.resume_boundary else "completed"
        if terminal != expected:
            why = (
                "it was armed across the --resume boundary"
                if run.resume_boundary
                else "it was not armed with a resume boundary"
            )
            self.ledger_says(
                run.line,
                f"run {run.run_id} started after turn {number}, which ended {terminal}; {why}",
                run,
            )

    def _cancel(self, event: Event) -> None:
        """A cancel that claims the state changed: the transcript shows a person's turn after the step
        before it (for step 1: after the run was armed)."""
        step, run = event.step, event.run
        if step is None or step.cancel_rule not in _STATE_CANCELS:
            return
        if event.step_no == 1:
            if self.human_at < run.armed_at:
                self.pending_first.append(
                    (run, step.cancelled_line)
                )  # a person's turn may still come later in the transcript
            return
        paired = run.last_paired
        if paired is not None and paired[0] == event.step_no - 1 and not paired[1]:
            self._no_change(run, event.step_no, step.cancelled_line)

    def _no_change(self, run: Run, step_no: int, line: int) -> None:
        self.ledger_says(
            line,
            f"step {step_no} of run {run.run_id} was cancelled "
            "for a state change the transcript does not show",
            run,
        )


def _forget(event: Event) -> None:
    """A step paired (or a cancel checked) is no longer held by its run."""
    if event.run.steps.get(event.step_no) is event.step:
        del event.run.steps[event.step_no]


def _usage_text(usage: Any) -> str:
    if usage is False:
        return "(not reported)"
    if isinstance(usage, dict):
        return f"{usage.get('inputTokens')!r} in / {usage.get('outputTokens')!r} out"
    return "(none)"


def _key_text(key: tuple[Any, Any] | None) -> str:
    run_id, step = key if key is not None else (None, None)
    return f"(run {str(run_id)[:40]}, step {str(step)[:12]})"


def replay(
    ledger: Path,
    sessions_dir: Path,
    *,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    key: bytes | None = None,
    require_chain: bool = False,
    require_key: bool = False,
    max_reported: int = MAX_REPORTED,
) -> ReplayReport:
    """Read ``ledger`` against its session's transcript in ``sessions_dir``; raises ``LedgerError``
    when either file cannot be read as what it claims to be (a directory, a device, another session).
    The ledger itself is verified on the way (``tickloop.audit.ledger.file_checks``)."""
    checks = file_checks(ledger, key=key, require_chain=require_chain, require_key=require_key)
    job = _Replay(
        ledger, sessions_dir, max_record_bytes=max_record_bytes, checks=checks, max_reported=max_reported
    )
    job.open_transcript()
    job.run()
    return job.report
