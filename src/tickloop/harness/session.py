"""Sessions: a transcript of message envelopes grouped in turns, each closed by one terminal.

On disk a session is an append-only JSONL file (``session-<escaped id>.jsonl``)::

    {"type": "session", "id": "demo", "version": 1, "createdAt": "..."}
    {"type": "message", "turn": 1, "role": "user", "content": [...], "source": {"kind": "user"}, ...}
    {"type": "message", "turn": 1, "role": "assistant", "content": [...], "source": {...}, ...}
    {"type": "terminal", "turn": 1, "status": "completed", "usage": {...}, "at": "..."}

A turn with tools has, before its reply, one ``tool_calls`` record per round (the calls the model
asked for, written and fsynced *before* any of them runs) and one ``tool_result`` per call::

    {"type": "tool_calls", "turn": 2, "round": 1, "text": "", "calls": [{"id": "c1", "tool": "list_dir",
     "args": "{}", "argsSha256": "sha256:...", "argsChars": 2}], "at": "..."}
    {"type": "tool_result", "turn": 2, "round": 1, "id": "c1", "tool": "list_dir", "status": "ok",
     "durationMs": 3, "result": "...", "resultSha256": "sha256:...", "resultChars": 120, "at": "..."}

A call cut off by an interrupt or a crash gets ``"status": "unknown", "outcome": "unknown"``: whether
it took effect is not known, and nothing re-runs it. The terminal of such a turn counts
``toolCalls`` and ``toolErrors`` (every call that did not end ``ok``).

A completed turn whose model reported no token usage (llama-cpp-python streams none) says so with
``"usageReported": false`` instead of leaving ``usage`` out without a word; tickloop never estimates it.

A terminal is fsynced before ``end_turn`` returns, so nothing can schedule on a terminal that a
crash could lose. A turn a crash left open gets a *new* ``interrupted`` terminal record with
``"recovered": true`` when the session is reopened; nothing already written is rewritten.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tickloop.audit import session_file_name
from tickloop.clock import Clock, SystemClock, utc_iso
from tickloop.errors import LedgerError, TransitionError
from tickloop.harness.jsonl import JsonlLog, MemoryLog, RecordLog, SessionError, private_dir, read_records
from tickloop.harness.tools.base import ARGS_CAP, CallResult, CallStatus, cap, digest, unknown_result
from tickloop.inert import inert
from tickloop.models.base import ToolCall, Usage
from tickloop.protocol.envelope import USER_SOURCE, Message, Source, is_time_step
from tickloop.protocol.predicates import SessionView, TerminalStatus
from tickloop.sha256 import sha256

if TYPE_CHECKING:
    from tickloop.harness.durable import Durability

VERSION = 1
ASSISTANT_SOURCE = Source("assistant")
DEFAULT_SESSIONS_DIR = ".tickloop-sessions"


@dataclass(frozen=True, slots=True)
class Terminal:
    """How one turn ended, with the token usage when the model reported it."""

    turn: int
    status: TerminalStatus
    usage: Usage | None = None
    detail: str | None = None  #: the provider's error message, for ``error``
    recovered: bool = False  #: written on reopen for a turn a crash left open
    tool_calls: int | None = None  #: calls made in the turn (None: no tools were offered)
    tool_errors: int | None = None  #: calls that did not end ``ok``

    def tool_fields(self) -> dict[str, int]:
        """``toolCalls`` and ``toolErrors`` for a turn that offered tools; nothing otherwise."""
        if self.tool_calls is None:
            return {}
        return {"toolCalls": self.tool_calls, "toolErrors": self.tool_errors or 0}

    def usage_fields(self) -> dict[str, Any]:
        """What the session file and the ledger say about tokens: the model's own counts, or for a
        turn the model finished without reporting any, ``usageReported: false``, so a reader never
        takes a server that counts nothing for a count lost on the way. An unfinished turn has none."""
        if self.usage is not None:
            return {"usage": self.usage.to_dict()}
        if self.status is TerminalStatus.COMPLETED:
            return {"usageReported": False}
        return {}


@dataclass(frozen=True, slots=True)
class ToolRound:
    """One round of a turn: the model's text and calls, and the result of each call so far."""

    number: int
    text: str
    calls: tuple[ToolCall, ...]
    results: tuple[CallResult, ...] = ()

    def result_of(self, call_id: str) -> CallResult | None:
        return next((r for r in self.results if r.call.id == call_id), None)

    def pending(self) -> tuple[ToolCall, ...]:
        return tuple(c for c in self.calls if self.result_of(c.id) is None)


@dataclass(frozen=True, slots=True)
class Turn:
    """One input message, its tool rounds, the assistant's reply (if any), and at most one terminal."""

    number: int
    input: Message
    reply: Message | None = None
    terminal: Terminal | None = None
    rounds: tuple[ToolRound, ...] = ()
    tools_offered: bool = False

    def content_fields(self) -> dict[str, Any]:
        """What the ledger's ``tick_terminal`` says of the step's content: the sha256 of the reply text
        (``replySha256``) and of each tool result in order (``toolResultSha256s``), so an edited
        transcript fails replay and the keyed chain covers what the model said, not only the decisions."""
        out: dict[str, Any] = {}
        if self.reply is not None:
            out["replySha256"] = sha256("".join(self.reply.content).encode("utf-8", "replace")).hexdigest()
        results = [r.sha256.removeprefix("sha256:") for rnd in self.rounds for r in rnd.results]
        if results:
            out["toolResultSha256s"] = results
        return out

    def call_counts(self) -> tuple[int, int]:
        """(calls, calls that did not end ``ok``) over all rounds."""
        results = [r for rnd in self.rounds for r in rnd.results]
        return len(results), sum(1 for r in results if r.status is not CallStatus.OK)


@dataclass(slots=True)
class _Counters:
    natural_context: bool = False
    time_steps: int = 0
    revision: int = 0  #: bumps on every change; the tick timer compares it to see "state changed"


@dataclass(slots=True)
class Session:
    """An in-memory transcript backed by a ``RecordLog``. Use ``open_session`` or ``memory_session``."""

    session_id: str
    log: RecordLog
    clock: Clock = field(default_factory=SystemClock)
    turns: list[Turn] = field(default_factory=list)
    recovered: list[Terminal] = field(default_factory=list)
    _counters: _Counters = field(default_factory=_Counters)

    @property
    def revision(self) -> int:
        return self._counters.revision

    @property
    def open_turn(self) -> Turn | None:
        """The newest turn if it has no terminal yet."""
        if self.turns and self.turns[-1].terminal is None:
            return self.turns[-1]
        return None

    def view(self) -> SessionView:
        """What the Tick Protocol's predicates may see: structure only, never text."""
        closed = next((t for t in reversed(self.turns) if t.terminal is not None), None)
        return SessionView(
            natural_context=self._counters.natural_context,
            latest_terminal=None if closed is None or closed.terminal is None else closed.terminal.status,
            turn_open=self.open_turn is not None,
            time_steps=self._counters.time_steps,
        )

    def messages(self) -> Iterator[Message]:
        """Every message in order: each turn's input, then its reply."""
        for turn in self.turns:
            yield turn.input
            if turn.reply is not None:
                yield turn.reply

    def start_turn(self, message: Message) -> Turn:
        """Open a new turn with ``message`` as its input. Only one turn may be open."""
        if self.open_turn is not None:
            raise TransitionError(f"turn {self.turns[-1].number} is still open; it needs a terminal first")
        turn = Turn(number=len(self.turns) + 1, input=message)
        self.log.append(_message_record(turn.number, message, self.clock))
        self.turns.append(turn)
        self._apply_message(message)
        return turn

    def add_reply(self, text: str) -> None:
        """Record the assistant's reply to the open turn."""
        turn = self._require_open()
        reply = Message(role="assistant", content=(text,), source=ASSISTANT_SOURCE)
        self.log.append(_message_record(turn.number, reply, self.clock))
        self.turns[-1] = replace(turn, reply=reply)
        self._counters.revision += 1

    def offer_tools(self) -> None:
        """Mark the open turn as one whose model was offered tools (its terminal counts calls)."""
        turn = self._require_open()
        self.turns[-1] = replace(turn, tools_offered=True)

    def begin_tool_round(self, text: str, calls: tuple[ToolCall, ...]) -> ToolRound:
        """Record the calls the model asked for, durably, before any of them runs."""
        turn = self._require_open()
        rnd = ToolRound(number=len(turn.rounds) + 1, text=text, calls=calls)
        self.log.append(_tool_calls_record(turn.number, rnd, self.clock))
        self.turns[-1] = replace(turn, rounds=(*turn.rounds, rnd), tools_offered=True)
        self._counters.revision += 1
        return rnd

    def add_tool_result(self, result: CallResult, *, reason: str | None = None) -> None:
        """Record how one call of the newest round ended (``reason``: why its outcome is unknown)."""
        turn = self._require_open()
        if not turn.rounds:
            raise TransitionError("no tool round is open")
        rnd = turn.rounds[-1]
        self.log.append(_tool_result_record(turn.number, rnd.number, result, reason, self.clock))
        rounds = (*turn.rounds[:-1], replace(rnd, results=(*rnd.results, result)))
        self.turns[-1] = replace(turn, rounds=rounds)
        self._counters.revision += 1

    def settle_open_calls(self, why: str) -> None:
        """Every call of the open turn without a result gets outcome ``unknown`` (never re-run)."""
        turn = self.open_turn
        if turn is None or not turn.rounds:
            return
        for call in turn.rounds[-1].pending():
            self.add_tool_result(unknown_result(call, 0, why), reason=why)

    def end_turn(
        self, status: TerminalStatus, *, usage: Usage | None = None, detail: str | None = None
    ) -> Terminal:
        """Close the open turn. The terminal is durable when this returns."""
        self.settle_open_calls(f"the turn ended {status}")
        turn = self._require_open()
        calls, errors = turn.call_counts()
        terminal = Terminal(
            turn=turn.number,
            status=status,
            usage=usage,
            detail=detail,
            tool_calls=calls if turn.tools_offered else None,
            tool_errors=errors if turn.tools_offered else None,
        )
        self.log.append(_terminal_record(terminal, self.clock))
        self._apply_terminal(turn, terminal)
        return terminal

    def _require_open(self) -> Turn:
        turn = self.open_turn
        if turn is None:
            raise TransitionError("no turn is open")
        return turn

    def _apply_message(self, message: Message) -> None:
        if is_time_step(message):
            self._counters.time_steps += 1
        self._counters.revision += 1

    def _apply_terminal(self, turn: Turn, terminal: Terminal) -> None:
        self.turns[-1] = replace(turn, terminal=terminal)
        if turn.input.source == USER_SOURCE:
            self._counters.natural_context = True
        self._counters.revision += 1

    def close(self) -> None:
        self.log.close()


def memory_session(session_id: str = "memory", *, clock: Clock | None = None) -> Session:
    """A session that lives only in memory (tests, embedders, benchmarks)."""
    check_session_id(session_id)
    return Session(session_id=session_id, log=MemoryLog(), clock=clock or SystemClock())


def check_session_id(session_id: str) -> str:
    """``session_id`` unchanged, or ``SessionError`` if it holds a control or bidi character.

    A newline, an escape or a right-to-left override in an id would break ``sessions list``, the chat
    header and every line that names the session.
    """
    # str.isprintable() is False for C0/C1 controls, format characters (bidi overrides among them)
    # and separators other than the ASCII space.
    bad = next((c for c in session_id if not c.isprintable()), None)
    if bad is not None:
        raise SessionError(
            f"invalid session id '{inert(session_id, keep_newlines=False)}': it holds the control "
            f"character U+{ord(bad):04X}; a session id is printable text (letters, digits, '-', '.')"
        )
    return session_id


def session_path(sessions_dir: Path, session_id: str) -> Path:
    """The file of ``session_id``; the name is escaped, so it always stays inside ``sessions_dir``."""
    check_session_id(session_id)
    try:
        name = session_file_name(session_id)
    except LedgerError as exc:
        raise SessionError(f"invalid session id: {exc}") from None
    path = sessions_dir / name
    if path.resolve().parent != sessions_dir.resolve():
        raise SessionError(f"session id {session_id!r} would leave {sessions_dir}")
    return path


def open_session(
    sessions_dir: Path, session_id: str, *, clock: Clock | None = None, durability: Durability | None = None
) -> Session:
    """Open (creating if needed) a session; a turn a crash left open gets an ``interrupted`` terminal.

    With ``durability`` appends only write, and the agent settles them (``harness.durable``)."""
    clock = clock or SystemClock()
    check_session_id(session_id)  # before any directory is made for it
    path = session_path(private_dir(sessions_dir), session_id)
    records = read_records(path) if path.exists() else []
    log: RecordLog = JsonlLog(path, fsync=durability is None)
    if durability is not None:
        log = durability.log(log, path)
    session = Session(session_id=session_id, log=log, clock=clock)
    if not records:
        session.log.append(
            {"type": "session", "id": session_id, "version": VERSION, "createdAt": utc_iso(clock.now())}
        )
    else:
        check_header(path, records[0], session_id)
        replay(session, path, records[1:])
    _recover_open_turn(session)
    return session


def check_header(path: Path, header: Mapping[str, Any], session_id: str) -> None:
    if header.get("type") != "session" or header.get("id") != session_id:
        raise SessionError(f"{path}: line 1 is not the header of session {session_id!r}")
    if header.get("version") != VERSION:
        raise SessionError(f"{path}: session format version {header.get('version')!r}, expected {VERSION}")


def replay(session: Session, path: Path, records: list[dict[str, Any]]) -> None:
    for lineno, rec in enumerate(records, start=2):
        try:
            _replay_one(session, rec)
        except (KeyError, TypeError, ValueError, TransitionError) as exc:
            raise SessionError(f"{path}, line {lineno}: unreadable session record ({exc!r})") from None


def _replay_one(session: Session, rec: Mapping[str, Any]) -> None:
    kind, number = rec["type"], rec["turn"]
    if kind == "message":
        _replay_message(session, rec, number)
    elif kind == "terminal":
        turn = session._require_open()
        session._apply_terminal(turn, _terminal_from(rec))
    elif kind == "tool_calls":
        turn = session._require_open()
        calls = tuple(ToolCall(str(c["id"]), str(c["tool"]), str(c["args"])) for c in rec["calls"])
        rnd = ToolRound(number=int(rec["round"]), text=str(rec.get("text", "")), calls=calls)
        session.turns[-1] = replace(turn, rounds=(*turn.rounds, rnd), tools_offered=True)
    elif kind == "tool_result":
        _replay_tool_result(session, rec)
    else:
        raise ValueError(f"unknown record type {kind!r}")


def _replay_message(session: Session, rec: Mapping[str, Any], number: Any) -> None:
    """An assistant message is the open turn's reply; any other message opens the next turn."""
    if rec["role"] == "assistant":
        turn = session._require_open()
        session.turns[-1] = replace(turn, reply=_message_from(rec))
        return
    if session.open_turn is not None or number != len(session.turns) + 1:
        raise ValueError(f"turn {number} starts out of order")
    message = _message_from(rec)
    session.turns.append(Turn(number=number, input=message))
    session._apply_message(message)


def _replay_tool_result(session: Session, rec: Mapping[str, Any]) -> None:
    turn = session._require_open()
    if not turn.rounds:
        raise ValueError("a tool_result before any tool_calls")
    rnd = turn.rounds[-1]
    call = next((c for c in rnd.calls if c.id == rec["id"]), None)
    if call is None or rnd.result_of(call.id) is not None:
        raise ValueError(
            f"a tool_result for call {rec['id']!r}, which its round did not make or already answered"
        )
    result = CallResult(
        call=call,
        status=CallStatus(rec["status"]),
        text=str(rec["result"]),
        duration_ms=int(rec["durationMs"]),
        sha256=str(rec["resultSha256"]),
        chars=int(rec["resultChars"]),
    )
    done = replace(rnd, results=(*rnd.results, result))
    session.turns[-1] = replace(turn, rounds=(*turn.rounds[:-1], done))


def _recover_open_turn(session: Session) -> None:
    turn = session.open_turn
    if turn is None:
        return
    session.settle_open_calls("the process ended while it ran")
    turn = session._require_open()
    calls, errors = turn.call_counts()
    terminal = Terminal(
        turn=turn.number,
        status=TerminalStatus.INTERRUPTED,
        recovered=True,
        tool_calls=calls if turn.tools_offered else None,
        tool_errors=errors if turn.tools_offered else None,
    )
    session.log.append(_terminal_record(terminal, session.clock))
    session._apply_terminal(turn, terminal)
    session.recovered.append(terminal)


def _message_record(turn: int, message: Message, clock: Clock) -> dict[str, Any]:
    rec: dict[str, Any] = {"type": "message", "turn": turn, **message.to_dict(), "at": utc_iso(clock.now())}
    if message.meta:
        rec["meta"] = dict(message.meta)
    return rec


def _terminal_record(terminal: Terminal, clock: Clock) -> dict[str, Any]:
    rec: dict[str, Any] = {"type": "terminal", "turn": terminal.turn, "status": str(terminal.status)}
    rec.update(terminal.usage_fields())
    if terminal.detail:
        rec["detail"] = terminal.detail
    if terminal.recovered:
        rec["recovered"] = True
    rec.update(terminal.tool_fields())
    rec["at"] = utc_iso(clock.now())
    return rec


def _tool_calls_record(turn: int, rnd: ToolRound, clock: Clock) -> dict[str, Any]:
    calls = [
        {
            "id": call.id,
            "tool": call.name,
            "args": cap(call.arguments, ARGS_CAP),
            "argsSha256": digest(call.arguments),
            "argsChars": len(call.arguments),
        }
        for call in rnd.calls
    ]
    return {
        "type": "tool_calls",
        "turn": turn,
        "round": rnd.number,
        "text": rnd.text,
        "calls": calls,
        "at": utc_iso(clock.now()),
    }


def _tool_result_record(
    turn: int, number: int, result: CallResult, reason: str | None, clock: Clock
) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "type": "tool_result",
        "turn": turn,
        "round": number,
        "id": result.call.id,
        "tool": result.call.name,
        "status": str(result.status),
        "durationMs": result.duration_ms,
        "result": result.text,
        "resultSha256": result.sha256,
        "resultChars": result.chars,
    }
    if result.status is CallStatus.UNKNOWN:
        rec["outcome"] = "unknown"
        rec["reason"] = reason or "cut off"
    rec["at"] = utc_iso(clock.now())
    return rec


def _message_from(rec: Mapping[str, Any]) -> Message:
    source = rec["source"]
    return Message(
        role=str(rec["role"]),
        content=tuple(str(part["text"]) for part in rec["content"]),
        source=Source(str(source["kind"]), source.get("plugin")),
        meta=dict(rec.get("meta", {})),
    )


def _terminal_from(rec: Mapping[str, Any]) -> Terminal:
    usage = rec.get("usage")
    return Terminal(
        turn=int(rec["turn"]),
        status=TerminalStatus(rec["status"]),
        usage=None if usage is None else Usage(int(usage["inputTokens"]), int(usage["outputTokens"])),
        detail=rec.get("detail"),
        recovered=bool(rec.get("recovered", False)),
        tool_calls=rec.get("toolCalls"),
        tool_errors=rec.get("toolErrors"),
    )
