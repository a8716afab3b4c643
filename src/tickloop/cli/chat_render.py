"""Rendering agent events as text. Time steps are marked so no one mistakes them for the person's.

What the person sees is what the transcript stores: every streamed chunk is written (made inert:
no escape sequence, control character or bidi override reaches the terminal raw), the model's label
comes with its first text (an answer without text shows only its terminal line, never an empty
label line), continuation lines are indented under the label (a reply line ``you> ...`` cannot pass
for the prompt), and a notice that arrives mid-reply starts on a line of its own.

Interactive chats write through prompt_toolkit, which redraws its prompt below the output and
erases any partial line written above it; there the renderer writes whole lines only
(``line_buffered``) and ``partial_line`` shows the line being streamed (in the bottom toolbar).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from tickloop.harness.events import (
    AgentEvent,
    Notice,
    TextStreamed,
    ToolCallEnded,
    ToolCallProgress,
    TurnEnded,
    TurnStarted,
)
from tickloop.harness.session import Terminal, Turn
from tickloop.harness.tools.base import CallResult
from tickloop.inert import inert
from tickloop.protocol.envelope import Message, is_time_step
from tickloop.protocol.predicates import TerminalStatus

TIME_STEP_MARK = "⏱"
TOOL_MARK = "⚙"
ARGS_SHOWN = 60
#: a reopened session shows its last turns, each text cut at this many characters
HISTORY_TURNS = 3
HISTORY_CHARS = 500


def tool_line(result: CallResult) -> str:
    """``⚙ files__read(path="a.md") → ok (12 ms)``: one line, escape sequences neutralised."""
    args = result.call.arguments.strip()
    shown = args if len(args) <= ARGS_SHOWN else args[:ARGS_SHOWN] + "…"
    head = inert(f"{result.call.name}({shown})", keep_newlines=False)
    tail = f"{result.status} ({result.duration_ms} ms)"
    if not result.ok:
        tail += ": " + inert(result.text.splitlines()[0][:120] if result.text else "", keep_newlines=False)
    return f"{TOOL_MARK} {head} → {tail}"


def progress_line(event: ToolCallProgress) -> str:
    """``⚙ everything__slow … 3/5 step 3``: what a running call reported, escape sequences neutralised."""
    done = f"{event.progress:g}" + ("" if event.total is None else f"/{event.total:g}")
    note = inert(event.message[:120], keep_newlines=False)
    return f"{TOOL_MARK} {inert(event.call.name, keep_newlines=False)} … {done} {note}".rstrip()


def time_step_label(text: str, step: object, of: object) -> str:
    """``⏱ tick (tickloop 2/3)``: visibly the plugin's, not the person's."""
    return f"{TIME_STEP_MARK} {inert(text, keep_newlines=False)} (tickloop {step}/{of})"


class Renderer:
    """Writes events to ``out`` as they stream: ``offline> ...`` replies, ``· `` notices."""

    def __init__(self, out: TextIO, *, label: str, line_buffered: bool = False) -> None:
        self.out = out
        self.label = label
        self.line_buffered = line_buffered
        self._indent = " " * (len(label) + 2)
        self._label_pending = False  #: a turn started and its label is not written yet
        self._at_line_start = True  #: the reply's next text starts a line (indent it)
        self._column0 = True  #: the terminal's cursor is at the start of a line
        self._partial = ""  #: line_buffered: the current line, not yet written
        self._tool_shown = False  #: the turn showed a tool line (its answer may hold no text)

    @property
    def partial_line(self) -> str:
        """The line being streamed and not yet written (line-buffered mode)."""
        return self._partial

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, TurnStarted):
            self._turn_started(event.turn.input)
        elif isinstance(event, TextStreamed):
            self._reply(inert(event.text))
        elif isinstance(event, ToolCallProgress):
            self._end_line()
            self._emit(progress_line(event) + "\n")
            self._flush()
        elif isinstance(event, ToolCallEnded):
            # The tool line stands on its own line; text after it gets the label again.
            self._end_line()
            self._emit(tool_line(event.result) + "\n")
            self._label_pending, self._at_line_start, self._tool_shown = True, False, True
            self._flush()
        elif isinstance(event, TurnEnded):
            self._turn_ended(event.terminal)
        elif isinstance(event, Notice):
            self.notice(event.text, error=event.error)

    def _turn_started(self, message: Message) -> None:
        self._end_line()
        if is_time_step(message):
            meta = message.meta
            self._emit(time_step_label(message.text, meta.get("step", "?"), meta.get("of", "?")) + "\n")
        self._label_pending, self._at_line_start, self._tool_shown = True, False, False

    def _turn_ended(self, terminal: Terminal) -> None:
        """A completed turn that showed nothing says so; any other ends with its status and detail."""
        had_text = not self._label_pending
        self._label_pending = False
        self._end_line()
        if terminal.status is TerminalStatus.COMPLETED:
            if not had_text and not self._tool_shown:
                self._emit(f"[turn {terminal.turn} completed: the model sent no text]\n")
        else:
            tail = f"[turn {terminal.turn} {terminal.status}"
            if terminal.detail:
                tail += f": {inert(terminal.detail, keep_newlines=False)}"
            self._emit(tail + "]\n")
        self._flush()

    def _reply(self, text: str) -> None:
        if not text:
            return
        if self._label_pending:
            self._emit(f"{self.label}> ")
            self._label_pending = False
        for i, piece in enumerate(text.split("\n")):
            if i:
                self._emit("\n")
                self._at_line_start = True
            if piece:
                if self._at_line_start:
                    self._emit(self._indent)
                    self._at_line_start = False
                self._emit(piece)
        self._flush()

    def history(self, turns: Sequence[Turn]) -> None:
        """The last ``HISTORY_TURNS`` turns of a reopened session, drawn as they were when live (inert)."""
        shown = turns[-HISTORY_TURNS:]
        if not shown:
            return
        self.notice(f"the last {len(shown)} of {len(turns)} turn(s) of this session:")
        for turn in shown:
            if not is_time_step(turn.input):
                self.echo_input(_cut(turn.input.text))
            self(TurnStarted(turn))
            for rnd in turn.rounds:
                self(TextStreamed(turn.number, _cut(rnd.text)))
                for result in rnd.results:
                    self(ToolCallEnded(turn.number, result))
            if turn.reply is not None:
                self(TextStreamed(turn.number, _cut(turn.reply.text)))
            if turn.terminal is not None:
                self(TurnEnded(turn.terminal))
        self.notice("end of the earlier turns")

    def echo_input(self, line: str) -> None:
        """Scripted mode shows each line it reads, so the output reads as a transcript."""
        self._end_line()
        self._emit(f"you> {inert(line.rstrip(chr(13) + chr(10)), keep_newlines=False)}\n")
        self._flush()

    def notice(self, text: str, *, error: bool = False) -> None:
        """A notice on lines of its own, even in the middle of a streaming reply."""
        mark = "!" if error else "·"
        if not self._column0:
            self._emit("\n")
            self._at_line_start = True
        rows = text.splitlines() or [""]
        self._emit("".join(f"{mark} {inert(row, keep_newlines=False)}\n" for row in rows))
        self._flush()

    def _end_line(self) -> None:
        if not self._column0:
            self._emit("\n")
        self._at_line_start = True

    def _emit(self, text: str) -> None:
        if not text:
            return
        self._column0 = text.endswith("\n")
        if not self.line_buffered:
            self.out.write(text)
            return
        self._partial += text
        head, newline, self._partial = self._partial.rpartition("\n")
        if newline:
            self.out.write(head + newline)

    def _flush(self) -> None:
        self.out.flush()


def _cut(text: str) -> str:
    return text if len(text) <= HISTORY_CHARS else text[:HISTORY_CHARS] + " …"
