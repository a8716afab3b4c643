"""A session transcript read for ``tickloop audit replay``: its turns, and the structure of each.

Every record type ``tickloop.harness.session`` writes is known here (``TRANSCRIPT_TYPES``): the
session header, messages, terminals, and a turn's tool rounds. A round's ``tool_calls`` record is
written and fsynced before any of its calls runs, so each ``tool_result`` must follow it, answer a
call that round made, and answer it once; every call has its result before the turn's terminal.
Only a few fields of each turn are kept.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from tickloop.audit.ledger import DEFAULT_MAX_RECORD_BYTES, LineReader
from tickloop.errors import LedgerError
from tickloop.protocol.envelope import PLUGIN_NAME
from tickloop.protocol.ledger import MAX_DEPTH, TIME_FORMAT, TIME_SLACK_MS, Oversized, loads_bounded
from tickloop.protocol.transitions import ms

#: Every record type ``tickloop.harness.session`` writes to a transcript.
TRANSCRIPT_TYPES = frozenset({"session", "message", "terminal", "tool_calls", "tool_result"})
DEFAULT_MAX_TRANSCRIPT_LINE = 16 << 20  #: a model reply can be long; a transcript line is capped at 16 MiB


@dataclass(slots=True)
class Turn:
    """What replay keeps of one turn (the open turn's tool bookkeeping lives in the reader)."""

    number: int
    line: int
    plugin: bool
    key: tuple[Any, Any] | None = None  #: (runId, step) from a plugin message's meta
    of: Any = None  #: the run's requested count, from the same meta
    policy: Any = None  #: the run's policy id, from the same meta (absent in older transcripts)
    at: str = ""  #: when the turn's input message was written
    sha256: str = ""
    nbytes: int = 0
    terminal: str | None = None
    terminal_line: int = 0
    recovered: bool = False
    reply_sha256: str | None = None  #: of the assistant's text, when the turn has a reply
    tool_sha256s: tuple[str, ...] = ()  #: of each tool result, in order
    usage: Any = None  #: the terminal's usage, or ``False`` for ``usageReported: false``
    #: the turn before: (number, line, key, plugin, terminal); a copy, so no turn holds a chain of them
    before: tuple[int, int, tuple[Any, Any] | None, bool, str | None] | None = None
    followed_by_human: bool = False  #: the next turn is a person's (a state change after this one)


@dataclass(slots=True)
class _Open:
    """The tool rounds and reply of the turn still open."""

    round: int = 0  #: the newest tool round
    pending: set[str] = field(default_factory=set)  #: its calls without a result yet
    answered: set[str] = field(default_factory=set)  #: its calls with one
    results: list[str] = field(default_factory=list)  #: sha256 of each result so far
    reply: list[str] = field(default_factory=list)  #: the assistant's text


class TranscriptReader:
    """Reads one transcript line by line; ``says(line, message)`` is told of each structural problem."""

    def __init__(
        self,
        path: Path,
        session_id: str,
        says: Callable[[int, str], None],
        *,
        cap: int = DEFAULT_MAX_RECORD_BYTES,
    ) -> None:
        self.path = path
        self.session_id = session_id
        self.says = says
        self.cap = cap
        self.count = 0  #: turns started so far
        self.last_at = ""  #: the latest time a turn started at
        self.open = _Open()

    def turns(self) -> Iterator[Turn]:
        """Each turn once it is whole (its next turn has started, or the file ended), in order, each
        problem of structure reported on the way. Only the turn being read is held."""
        path, lineno, last = self.path, 0, None
        reader = LineReader(
            path, max_record_bytes=max(self.cap, DEFAULT_MAX_TRANSCRIPT_LINE), what="transcript"
        )
        open_turn: Turn | None = None
        for lineno, raw in reader:
            rec = self._decoded(lineno, raw)
            if rec is None:
                continue
            if lineno == 1:
                self._header(rec)
                continue
            started = self.count
            open_turn = self._record(lineno, rec, open_turn)
            if self.count != started and open_turn is not None:  # a turn started: the one before is whole
                if last is not None:
                    last.followed_by_human = not open_turn.plugin
                    yield last
                open_turn.before = (
                    None if last is None else (last.number, last.line, last.key, last.plugin, last.terminal)
                )
                last = open_turn
        if reader.torn_size:
            self.says(lineno + 1, "the transcript ends in a torn line")
        if last is not None:
            yield last

    def _decoded(self, lineno: int, raw: bytes | Oversized) -> dict[str, Any] | None:
        if isinstance(raw, Oversized):
            self.says(lineno, f"a transcript line of {raw.size} bytes exceeds the {raw.cap}-byte cap")
            return None
        try:
            rec = loads_fast(raw)
        except LedgerError as exc:
            if lineno == 1:
                raise LedgerError(f"{self.path}: line 1 is not a session header ({exc})") from None
            self.says(lineno, f"unreadable: {exc}")
            return None
        if not isinstance(rec, dict):
            self.says(lineno, "a transcript record must be a JSON object")
            return None
        return rec

    def _header(self, rec: dict[str, Any]) -> None:
        path = self.path
        if rec.get("type") != "session":
            raise LedgerError(f"{path}: line 1 is not a session header")
        if rec.get("id") != self.session_id:
            raise LedgerError(
                f"{path} is the transcript of session {str(rec.get('id'))[:80]!r}, "
                f"but the ledger belongs to session {self.session_id!r}"
            )

    def _record(self, lineno: int, rec: dict[str, Any], open_turn: Turn | None) -> Turn | None:
        """Check one record against the open turn; returns the turn open after it."""
        kind, number = rec.get("type"), rec.get("turn")
        if kind == "message" and rec.get("role") == "user":
            return self._user_message(lineno, rec, open_turn)
        if kind not in TRANSCRIPT_TYPES or kind == "session":
            self.says(lineno, f"unknown transcript record type {str(kind)[:40]!r}")
            return open_turn
        if open_turn is None or number != open_turn.number:
            what = f"a {rec.get('role')!r} message" if kind == "message" else f"a {kind} record"
            self.says(lineno, f"{what} for turn {number!r}, which is not open")
            return open_turn
        if kind == "terminal":
            self._terminal(lineno, rec, open_turn)
            return None
        if kind == "message":
            self.open.reply.append(_text(rec))
        elif kind == "tool_calls":
            self._tool_calls(lineno, rec, open_turn)
        elif kind == "tool_result":
            self._tool_result(lineno, rec, open_turn)
        return open_turn

    def _user_message(self, lineno: int, rec: dict[str, Any], open_turn: Turn | None) -> Turn:
        number = rec.get("turn")
        if open_turn is not None:
            self.says(lineno, f"turn {number!r} starts while turn {open_turn.number} has no terminal")
        if number != self.count + 1:
            self.says(lineno, f"turn {number!r} follows turn {self.count}")
        plugin, at = _is_plugin(rec), str(rec.get("at", ""))
        self._in_time(lineno, at)
        self.count += 1
        turn = Turn(number=self.count, line=lineno, plugin=plugin, at=at)
        if turn.plugin:
            meta = rec.get("meta")
            meta = meta if isinstance(meta, dict) else {}
            turn.key, turn.of = (shared(meta.get("runId")), meta.get("step")), meta.get("of")
            turn.policy = shared(meta.get("policy"))
            encoded = _text(rec).encode("utf-8", "surrogatepass")
            turn.sha256, turn.nbytes = shared(hashlib.sha256(encoded).hexdigest()), len(encoded)
        self.open = _Open()
        return turn

    def _in_time(self, lineno: int, at: str) -> None:
        """Turns start in time order (a wall-clock step back within the ledger's slack aside)."""
        if at >= self.last_at:
            self.last_at = at
        elif TIME_FORMAT.fullmatch(at) is None or ms(at) < ms(self.last_at) - TIME_SLACK_MS:
            self.says(lineno, f"this turn starts at {at[:40]!r}, before an earlier turn's {self.last_at}")

    def _terminal(self, lineno: int, rec: dict[str, Any], turn: Turn) -> None:
        self._unanswered(lineno, turn)
        turn.terminal, turn.terminal_line = shared(str(rec.get("status"))), lineno
        turn.recovered = rec.get("recovered") is True
        opened = self.open
        calls = rec.get("toolCalls")
        if calls is not None and calls != len(opened.results):
            self.says(lineno, f"turn {turn.number} counts {calls!r} tool calls; it has {len(opened.results)}")
        if opened.reply:
            reply = "".join(opened.reply).encode("utf-8", "replace")
            turn.reply_sha256 = shared(hashlib.sha256(reply).hexdigest())
        turn.tool_sha256s = tuple(opened.results) if opened.results else ()
        turn.usage = False if rec.get("usageReported") is False else rec.get("usage")

    def _tool_calls(self, lineno: int, rec: dict[str, Any], turn: Turn) -> None:
        """A round's calls, written (and fsynced) before any of them ran."""
        self._unanswered(lineno, turn)
        opened = self.open
        number, calls = rec.get("round"), rec.get("calls")
        if number != opened.round + 1:
            self.says(lineno, f"tool round {number!r} follows round {opened.round} of turn {turn.number}")
        opened.round += 1
        ids = [c.get("id") for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
        if not ids or len(set(ids)) != len(ids) or not all(isinstance(i, str) for i in ids):
            self.says(lineno, "a tool_calls record must list calls with distinct string ids")
        opened.pending = {i for i in ids if isinstance(i, str)}
        opened.answered = set()

    def _tool_result(self, lineno: int, rec: dict[str, Any], turn: Turn) -> None:
        """One call's result: after its call was recorded, for a call of the newest round, once."""
        call_id, opened = rec.get("id"), self.open
        if opened.round == 0:
            self.says(lineno, f"a tool_result before any tool_calls in turn {turn.number}")
        elif rec.get("round") != opened.round:
            self.says(lineno, f"a tool_result for round {rec.get('round')!r}; round {opened.round} is open")
        elif call_id in opened.answered:
            self.says(lineno, f"a tool_result for call {str(call_id)[:40]!r}, already answered")
        elif call_id not in opened.pending:
            self.says(lineno, f"a tool_result for call {str(call_id)[:40]!r}, which its round did not make")
        else:
            opened.pending.discard(call_id)
            opened.answered.add(call_id)
        opened.results.append(self._result_digest(lineno, rec))

    def _result_digest(self, lineno: int, rec: dict[str, Any]) -> str:
        """The result's recorded sha256; when the text is whole (not capped), it must be that text's."""
        claimed = str(rec.get("resultSha256", "")).removeprefix("sha256:")
        text, chars = rec.get("result"), rec.get("resultChars")
        if isinstance(text, str) and chars == len(text):
            actual = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
            if actual != claimed:
                self.says(lineno, f"the tool result's text (sha256 {actual[:12]}) is not its resultSha256")
        return claimed

    def _unanswered(self, lineno: int, turn: Turn) -> None:
        opened = self.open
        for call_id in sorted(opened.pending):
            self.says(
                lineno,
                f"call {call_id[:40]!r} of round {opened.round} of turn {turn.number} has no tool_result",
            )
        opened.pending = set()


def _is_plugin(rec: dict[str, Any]) -> bool:
    source = rec.get("source")
    return isinstance(source, dict) and source.get("kind") == "plugin" and source.get("plugin") == PLUGIN_NAME


def _text(rec: dict[str, Any]) -> str:
    """The text of a message record's content parts."""
    content = rec.get("content")
    parts = content if isinstance(content, list) else []
    return "".join(str(part.get("text", "")) for part in parts if isinstance(part, dict))


def shared(value: Any) -> Any:
    """One object for every equal string (run ids, digests, statuses repeat across many turns)."""
    return sys.intern(value) if type(value) is str else value


_FAST = msgspec.json.Decoder()


def loads_fast(line: bytes) -> Any:
    """A transcript line decoded by msgspec (same values as ``json``), under the depth bound; a line it
    refuses goes to ``loads_bounded``, which decides and says why (escaped lone surrogates, NaN, ...)."""
    if line.count(b"[") + line.count(b"{") <= MAX_DEPTH:
        try:
            return _FAST.decode(line)
        except msgspec.DecodeError:
            pass
    return loads_bounded(line)
