"""The deterministic offline model: the embedded default. No key, no network, instant by default.

Offered tools, it behaves deterministically too: when the person's message contains "list files" and
``list_dir`` is offered, it calls ``list_dir`` once, then answers with the first lines of the result.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from tickloop.errors import ModelError
from tickloop.models.base import (
    ChatMessage,
    Completion,
    Finished,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCalls,
    ToolSpec,
    Usage,
)

DEFAULT_REPLY = "(offline model) noted."


class OfflineModel:
    """Replies with a fixed text, or echoes the last user message; records every call it receives.

    ``token_delay`` sleeps between streamed words, so a test can interrupt a turn mid-stream.
    ``fail_on_call`` raises ``ModelError`` on those 1-based call numbers (a scripted provider error).
    ``json_reply`` answers ``complete(json_schema=...)`` calls (the operator's structured outputs).
    """

    label = "offline"

    def __init__(
        self,
        *,
        reply: str = DEFAULT_REPLY,
        echo: bool = False,
        token_delay: float = 0.0,
        fail_on_call: frozenset[int] = frozenset(),
        json_reply: Callable[[Sequence[ChatMessage], Mapping[str, Any]], str] | None = None,
        name: str = "offline",
    ) -> None:
        self.name = name
        self.reply = reply
        self.echo = echo
        self.token_delay = token_delay
        self.fail_on_call = fail_on_call
        self.json_reply = json_reply
        self.calls: list[tuple[ChatMessage, ...]] = []

    def _answer(self, messages: Sequence[ChatMessage]) -> str:
        self.calls.append(tuple(messages))
        if len(self.calls) in self.fail_on_call:
            raise ModelError(f"offline model: scripted error on call {len(self.calls)}")
        if self.echo:
            users = [m.content for m in messages if m.role == "user"]
            return f"echo: {users[-1] if users else ''}"
        return self.reply

    async def stream(
        self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[StreamEvent]:
        call = _tool_step(messages, tools)
        if call is not None:
            self.calls.append(tuple(messages))
            yield ToolCalls((call,))
            yield Finished(usage=_usage(messages, call.arguments), finish_reason="tool_calls")
            return
        text = _after_tool(messages) or self._answer(messages)
        words = text.split(" ")
        for i, word in enumerate(words):
            if self.token_delay:
                import asyncio  # noqa: PLC0415  (only a delayed model needs the event loop's sleep)

                await asyncio.sleep(self.token_delay)
            yield TextDelta(word if i == len(words) - 1 else word + " ")
        yield Finished(usage=_usage(messages, text), finish_reason="stop")

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,  # noqa: ARG002  (a built-in answer is never cut off)
    ) -> Completion:
        if json_schema is not None and self.json_reply is not None:
            self.calls.append(tuple(messages))
            text = self.json_reply(messages, json_schema)
        else:
            text = self._answer(messages)
        return Completion(text=text, usage=_usage(messages, text), model=self.name, finish_reason="stop")

    def keep_connections(self) -> None:
        """Nothing to keep: the offline model has no connection."""

    async def aclose(self) -> None:
        """Nothing to close."""


def _tool_step(messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> ToolCall | None:
    """``list_dir`` for a person's "list files", once: only when the last message is theirs."""
    if not messages or messages[-1].role != "user" or "list_dir" not in {t.name for t in tools}:
        return None
    if "list files" not in messages[-1].content.lower():
        return None
    return ToolCall(id=f"offline-{len(messages)}", name="list_dir", arguments='{"path": "."}')


def _after_tool(messages: Sequence[ChatMessage]) -> str | None:
    """After a tool result: say what the tool answered (its first lines)."""
    if not messages or messages[-1].role != "tool":
        return None
    lines = [line for line in messages[-1].content.splitlines()[1:] if not line.startswith("[end of tool")]
    shown = ", ".join(lines[:5]) or "nothing"
    more = f" and {len(lines) - 5} more" if len(lines) > 5 else ""
    return f"(offline model) the workspace has: {shown}{more}."


def _usage(messages: Sequence[ChatMessage], text: str) -> Usage:
    """Deterministic stand-in counts: UTF-8 bytes / 4, as the context-packet estimate uses."""
    prompt = sum(len(m.content.encode("utf-8")) for m in messages)
    return Usage(input_tokens=max(1, prompt // 4), output_tokens=max(1, len(text.encode("utf-8")) // 4))
