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

Both files are read line by line under a size cap; only a few fields per turn are kept.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tickloop.audit.ledger import DEFAULT_MAX_RECORD_BYTES, LineReader, file_checks
from tickloop.audit.replay_report import Disagreement, ReplayReport, RunRow
from tickloop.audit.transcript import TranscriptReader, Turn, shared
from tickloop.errors import LedgerError
from tickloop.filenames import session_file_name
from tickloop.protocol.ledger import (
    CANCEL_PERSON_MESSAGE,
    CANCEL_STATE_CHANGED,
    MAX_REPORTED,
    RecordType,
)
from tickloop.protocol.verify import Checks, Verifier

__all__ = ["Disagreement", "ReplayReport", "RunRow", "replay", "transcript_path"]

#: Cancels that claim the state changed: the transcript must show the change (a person's message).
_STATE_CANCELS = frozenset({CANCEL_STATE_CHANGED, CANCEL_PERSON_MESSAGE})
#: Closes that can end a run while its step's turn is still running (its terminal then is not logged).
_CLOSE_WHILE_ENQUEUED = frozenset(
    {"stop.user", "stop.disposed", "stop.inconsistent_turn", "recover.orphaned_run"}
)


@dataclass(slots=True)
class _Step:
    enqueued_line: int = 0
    terminal: str | None = None
    terminal_line: int = 0
    cancelled_line: int = 0
    cancel_rule: str | None = None
    scheduled_at: str = ""  #: recordedAt of the step's tick_scheduled
    due: str = ""  #: its dueAt
    content: tuple[Any, Any, Any] | None = None  #: (usage, replySha256, toolResultSha256s) of its terminal


@dataclass(slots=True)
class _Run:
    run_id: str
    line: int
    policy: tuple[Any, Any, Any]
    requested: Any  #: as the ledger wrote it
    resume_boundary: bool
    armed_at: str = ""
    steps: dict[int, _Step] = field(default_factory=dict)
    enqueued: int = 0
    matched: int = 0
    close: str = "open"
    close_line: int = 0
    close_rule: str | None = None
    open_step: int = 0  #: the step enqueued without a terminal when the run closed
    disagreements: int = 0


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
        self.checks = checks
        self.runs: dict[str, _Run] = {}
        self.enqueued: list[tuple[str, int, int]] = []  #: (runId, step, ledger line) in ledger order
        self.session_id: str | None = None
        self.turns: list[Turn] = []
        self.by_key: dict[tuple[Any, Any] | None, Turn] = {}
        self.human: list[tuple[str, int]] = []  #: (at, turn number) of every turn a person started
        self.report = ReplayReport(ledger=ledger, transcript=Path(), max_reported=max_reported)

    def ledger_says(self, line: int, message: str, run: _Run | None = None) -> None:
        self.report.add(Disagreement(self.ledger_path, line, message))
        if run is not None:
            run.disagreements += 1

    def transcript_says(self, line: int, message: str, run: _Run | None = None) -> None:
        self.report.add(Disagreement(self.report.transcript, line, message))
        if run is not None:
            run.disagreements += 1

    # -- the ledger ---------------------------------------------------------------------------------

    def read_ledger(self) -> None:
        verifier = Verifier(self.checks, max_reported=self.report.max_reported)
        reader = LineReader(self.ledger_path, max_record_bytes=self.cap)
        for lineno, raw in reader:
            rec = verifier.feed(lineno, raw)
            if rec is not None:
                self._ledger_record(lineno, rec)
        report = verifier.finish(torn_tail=reader.torn_size > 0)
        self.report.verify = report
        self.report.records = report.records
        for violation in report.violations:
            self.ledger_says(violation.line, f"{violation.rule}: {violation.message}")
        self.report.disagreement_count += report.violation_count - len(report.violations)
        if self.session_id is None:
            raise LedgerError(f"{self.ledger_path}: no readable record names a session")

    def _ledger_record(self, lineno: int, rec: dict[str, Any]) -> None:
        if self.session_id is None:
            self.session_id = str(rec["sessionId"])
        kind, run_id = rec["type"], rec.get("runId")
        if not isinstance(run_id, str):
            return
        run_id = shared(run_id)
        if kind == RecordType.LOOP_ARMED:
            if run_id not in self.runs:
                requested = rec.get("requested")
                self.runs[run_id] = _Run(
                    run_id=run_id,
                    line=lineno,
                    policy=(rec.get("policyId"), rec.get("timeStepSha256"), rec.get("timeStepBytes")),
                    requested=requested,  # as written, even when invalid (verify names it)
                    resume_boundary=rec.get("resumeBoundary") is True,
                    armed_at=str(rec["recordedAt"]),
                )
            return
        run = self.runs.get(run_id)
        step_no = rec.get("step")
        if run is None:
            return
        if kind in (RecordType.LOOP_COMPLETE, RecordType.LOOP_STOPPED):
            run.close, run.close_line = f"{kind.removeprefix('loop_')} ({rec.get('rule')})", lineno
            run.close_rule = rec.get("rule") if isinstance(rec.get("rule"), str) else None
            last = run.steps.get(run.enqueued)
            if last is not None and last.enqueued_line and last.terminal is None:
                run.open_step = run.enqueued
            return
        if not isinstance(step_no, int):
            return
        step = run.steps.setdefault(step_no, _Step())
        if kind == RecordType.TICK_ENQUEUED:
            step.enqueued_line = lineno
            run.enqueued += 1
            self.enqueued.append((run_id, step_no, lineno))
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
        elif kind == RecordType.TICK_SCHEDULED:
            step.scheduled_at, step.due = str(rec["recordedAt"]), str(rec.get("dueAt", ""))

    # -- the transcript -----------------------------------------------------------------------------

    def read_transcript(self) -> None:
        assert self.session_id is not None
        path = transcript_path(self.sessions_dir, self.session_id)
        self.report.transcript = path
        reader = TranscriptReader(path, self.session_id, self.transcript_says, cap=self.cap)
        reader.read()
        self.turns = reader.turns
        self.report.turns = len(self.turns)

    # -- the two together ---------------------------------------------------------------------------

    def match(self) -> None:
        plugin_turns = [turn for turn in self.turns if turn.plugin]
        needed = {  # the turns a state-change cancel is checked against: few, so only those are indexed
            (run.run_id, step_no - 1)
            for run in self.runs.values()
            for step_no, step in run.steps.items()
            if step.cancelled_line and step.cancel_rule in _STATE_CANCELS
        }
        self.by_key = {turn.key: turn for turn in reversed(plugin_turns) if turn.key in needed}
        self.human = sorted((turn.at, turn.number) for turn in self.turns if not turn.plugin)
        last: dict[tuple[Any, Any] | None, int] = {}  #: where each key's last plugin message is
        for index, plugin_turn in enumerate(plugin_turns):
            last[plugin_turn.key] = index
        i = j = 0
        while i < len(self.enqueued) or j < len(plugin_turns):
            ledger_key = self.enqueued[i][:2] if i < len(self.enqueued) else None
            turn = plugin_turns[j] if j < len(plugin_turns) else None
            if turn is not None and ledger_key is not None and turn.key == ledger_key:
                self._pair(self.enqueued[i][2], turn)
                i, j = i + 1, j + 1
            elif turn is not None and (ledger_key is None or last.get(ledger_key, -1) > j):
                run = self.runs.get(str(turn.key[0])) if turn.key else None
                self.transcript_says(
                    turn.line,
                    f"plugin message {_key_text(turn.key)} has no tick_enqueued in the ledger",
                    run,
                )
                j += 1
            else:
                assert ledger_key is not None
                self.ledger_says(
                    self.enqueued[i][2],
                    f"tick_enqueued {_key_text(ledger_key)} has no plugin message in the transcript",
                    self.runs.get(ledger_key[0]),
                )
                i += 1
        self._cancels()

    def _pair(self, ledger_line: int, turn: Turn) -> None:
        assert turn.key is not None
        run_id, step_no = str(turn.key[0]), int(turn.key[1])
        run = self.runs[run_id]
        run.matched += 1
        step = run.steps[step_no]
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
        self._preceding(run, step_no, turn, ledger_line)
        self._during_delay(run, step_no, step)

    def _terminal(self, run: _Run, step_no: int, step: _Step, turn: Turn) -> None:
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

    def _content(self, run: _Run, step_no: int, step: _Step, turn: Turn) -> None:
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

    def _preceding(self, run: _Run, step_no: int, turn: Turn, ledger_line: int) -> None:
        before = self.turns[turn.number - 2] if turn.number >= 2 else None
        if before is None:
            self.transcript_says(
                turn.line,
                f"step {step_no} of run {run.run_id} is the first turn: no turn ended before it",
                run,
            )
            return
        if step_no > 1:
            if before.key != (run.run_id, step_no - 1):
                what = "a plugin message" if before.plugin else "a human message"
                self.transcript_says(
                    before.line,
                    f"turn {before.number} ({what}) came between step {step_no - 1} "
                    f"and step {step_no} of run {run.run_id}, "
                    "and the ledger has no tick_cancelled_before_enqueue for it",
                    run,
                )
            elif before.terminal != "completed":
                self.ledger_says(
                    ledger_line,
                    f"step {step_no} followed turn {before.number}, "
                    f"which ended {before.terminal}, not completed",
                    run,
                )
            return
        expected = "interrupted" if run.resume_boundary else "completed"
        if before.terminal != expected:
            why = (
                "it was armed across the --resume boundary"
                if run.resume_boundary
                else "it was not armed with a resume boundary"
            )
            self.ledger_says(
                run.line,
                f"run {run.run_id} started after turn {before.number}, which ended {before.terminal}; {why}",
                run,
            )

    def _during_delay(self, run: _Run, step_no: int, step: _Step) -> None:
        """A person's message written while the step waited for its due time needed a cancel."""
        if not (step.scheduled_at and step.due > step.scheduled_at):
            return
        index = bisect.bisect_right(self.human, (step.scheduled_at, len(self.turns) + 1))
        if index < len(self.human) and self.human[index][0] < step.due:
            at, number = self.human[index]
            self.transcript_says(
                self.turns[number - 1].line,
                f"turn {number} (a human message at {at}) came while step {step_no} of run {run.run_id} "
                f"waited for {step.due}, and the ledger enqueued it instead of cancelling",
                run,
            )

    def _cancels(self) -> None:
        for run in self.runs.values():
            for step_no, step in run.steps.items():
                if not step.cancelled_line or step.cancel_rule not in _STATE_CANCELS:
                    continue
                if step_no == 1:
                    changed = bool(self.human) and self.human[-1][0] >= run.armed_at
                else:
                    previous = self.by_key.get((run.run_id, step_no - 1))
                    changed = previous is None or (
                        previous.number < len(self.turns) and not self.turns[previous.number].plugin
                    )
                if not changed:
                    self.ledger_says(
                        step.cancelled_line,
                        f"step {step_no} of run {run.run_id} was cancelled "
                        "for a state change the transcript does not show",
                        run,
                    )

    def rows(self) -> None:
        self.report.rows = [
            RunRow(
                run.run_id,
                str(run.policy[0]),
                run.requested,
                run.enqueued,
                run.matched,
                run.close,
                run.disagreements,
            )
            for run in self.runs.values()
        ]


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
    job.read_ledger()
    job.read_transcript()
    job.match()
    job.rows()
    return job.report
