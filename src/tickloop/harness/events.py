"""What an Agent tells its listeners. The UI renders these; nothing below ``cli/`` prints."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tickloop.harness.session import Terminal, Turn
from tickloop.harness.tools.base import CallResult
from tickloop.models.base import ToolCall


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """A turn began with this input message (a person's, or a plugin follow-up)."""

    turn: Turn


@dataclass(frozen=True, slots=True)
class TextStreamed:
    """A piece of the assistant's streamed reply."""

    turn: int
    text: str


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """The turn's terminal is durable."""

    terminal: Terminal


@dataclass(frozen=True, slots=True)
class Notice:
    """Output of a command, or a message from the harness or a plugin; never model input."""

    text: str
    error: bool = False


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """The harness is running a tool call the model asked for."""

    turn: int
    call: ToolCall


@dataclass(frozen=True, slots=True)
class ToolCallEnded:
    """A tool call ended (its result is durable in the transcript)."""

    turn: int
    result: CallResult


@dataclass(frozen=True, slots=True)
class ToolCallProgress:
    """A running tool call reported progress (an MCP server's ``notifications/progress``)."""

    turn: int
    call: ToolCall
    progress: float
    total: float | None
    message: str


AgentEvent = (
    TurnStarted | TextStreamed | TurnEnded | Notice | ToolCallStarted | ToolCallProgress | ToolCallEnded
)
Listener = Callable[[AgentEvent], None]
