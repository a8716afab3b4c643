"""Rendering agent events as text. Time steps are marked so no one mistakes them for the person's."""

from __future__ import annotations

from typing import TextIO

from tickloop.harness.events import AgentEvent, Notice, TextStreamed, ToolCallEnded, TurnEnded, TurnStarted
from tickloop.harness.tools.base import CallResult
from tickloop.inert import inert
from tickloop.protocol.envelope import is_time_step
from tickloop.protocol.predicates import TerminalStatus

TIME_STEP_MARK = "⏱"
TOOL_MARK = "⚙"
ARGS_SHOWN = 60


def tool_line(result: CallResult) -> str:
    """``⚙ files__read(path="a.md") → ok (12 ms)``: one line, escape sequences neutralised."""
    args = result.call.arguments.strip()
    shown = args if len(args) <= ARGS_SHOWN else args[:ARGS_SHOWN] + "…"
    head = inert(f"{result.call.name}({shown})", keep_newlines=False)
    tail = f"{result.status} ({result.duration_ms} ms)"
    if not result.ok:
        tail += ": " + inert(result.text.splitlines()[0][:120] if result.text else "", keep_newlines=False)
    return f"{TOOL_MARK} {head} → {tail}"


def time_step_label(text: str, step: object, of: object) -> str:
    """``⏱ tick (tickloop 2/3)``: visibly the plugin's, not the person's."""
    return f"{TIME_STEP_MARK} {text} (tickloop {step}/{of})"


class Renderer:
    """Writes events to ``out`` as they stream: ``offline> ...`` replies, ``· `` notices."""

    def __init__(self, out: TextIO, *, label: str) -> None:
        self.out = out
        self.label = label
        #: the turn's ``label> `` is written with its first text, so a tool line never follows a bare one
        self._label_due = False
        self._line_open = False
        self._tool_shown = False

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, TurnStarted):
            message = event.turn.input
            if is_time_step(message):
                meta = message.meta
                self._write(time_step_label(message.text, meta.get("step", "?"), meta.get("of", "?")) + "\n")
            self._label_due = True
            self._tool_shown = False
        elif isinstance(event, TextStreamed):
            self._label()
            self._write(event.text)
            self._line_open = True
        elif isinstance(event, ToolCallEnded):
            self._write(("\n" if self._line_open else "") + tool_line(event.result) + "\n")
            self._line_open = False
            self._label_due = True
            self._tool_shown = True
        elif isinstance(event, TurnEnded):
            if not self._tool_shown:
                self._label()
            self._label_due = False
            self._line_open = False
            terminal = event.terminal
            tail = (
                ""
                if terminal.status is TerminalStatus.COMPLETED
                else f"[turn {terminal.turn} {terminal.status}"
            )
            if tail and terminal.detail:
                tail += f": {terminal.detail}"
            self._write("\n" + (tail + "]\n" if tail else ""))
        elif isinstance(event, Notice):
            self.notice(event.text, error=event.error)

    def _label(self) -> None:
        if self._label_due:
            self._write(f"{self.label}> ")
            self._label_due = False

    def echo_input(self, line: str) -> None:
        """Scripted mode shows each line it reads, so the output reads as a transcript."""
        self._write(f"you> {line.rstrip()}\n")

    def notice(self, text: str, *, error: bool = False) -> None:
        mark = "!" if error else "·"
        self._write("".join(f"{mark} {row}\n" for row in text.splitlines() or [""]))

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()
