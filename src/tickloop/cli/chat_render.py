"""Rendering agent events as text. Time steps are marked so no one mistakes them for the person's."""

from __future__ import annotations

from typing import TextIO

from tickloop.harness.events import AgentEvent, Notice, TextStreamed, TurnEnded, TurnStarted
from tickloop.protocol.envelope import is_time_step
from tickloop.protocol.predicates import TerminalStatus

TIME_STEP_MARK = "⏱"


def time_step_label(text: str, step: object, of: object) -> str:
    """``⏱ tick (tickloop 2/3)``: visibly the plugin's, not the person's."""
    return f"{TIME_STEP_MARK} {text} (tickloop {step}/{of})"


class Renderer:
    """Writes events to ``out`` as they stream: ``offline> ...`` replies, ``· `` notices."""

    def __init__(self, out: TextIO, *, label: str) -> None:
        self.out = out
        self.label = label

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, TurnStarted):
            message = event.turn.input
            if is_time_step(message):
                meta = message.meta
                self._write(time_step_label(message.text, meta.get("step", "?"), meta.get("of", "?")) + "\n")
            self._write(f"{self.label}> ")
        elif isinstance(event, TextStreamed):
            self._write(event.text)
        elif isinstance(event, TurnEnded):
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

    def echo_input(self, line: str) -> None:
        """Scripted mode shows each line it reads, so the output reads as a transcript."""
        self._write(f"you> {line.rstrip()}\n")

    def notice(self, text: str, *, error: bool = False) -> None:
        mark = "!" if error else "·"
        self._write("".join(f"{mark} {row}\n" for row in text.splitlines() or [""]))

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()
