"""The model interface every provider implements.

A provider streams ``TextDelta`` events and ends with exactly one ``Finished``. Given ``tools``, it may
also yield one ``ToolCalls`` (the calls the model asked for, their arguments assembled from however
many chunks they arrived in) before ``Finished``. Any provider
failure (HTTP error, malformed chunk, disconnect, timeout) raises ``ModelError``; the harness turns
that into an ``error`` terminal. Cancelling the consuming task (an interrupt) must close the
underlying stream promptly; the harness turns that into an ``interrupted`` terminal.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call: its name, what it does, and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def to_wire(self) -> dict[str, Any]:
        function = {"name": self.name, "description": self.description, "parameters": dict(self.parameters)}
        return {"type": "function", "function": function}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for. ``arguments`` is the raw text the model sent (JSON, unchecked)."""

    id: str
    name: str
    arguments: str

    def to_wire(self) -> dict[str, Any]:
        function = {"name": self.name, "arguments": self.arguments}
        return {"id": self.id, "type": "function", "function": function}


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image a tool returned: its bytes (base64) stay in memory for the model; the transcript
    keeps only ``placeholder``, its type, size and sha256."""

    mime: str
    data: str  #: base64, as the tool sent it
    size: int  #: bytes once decoded
    sha256: str  #: ``sha256:...`` of the decoded bytes

    @property
    def placeholder(self) -> str:
        """What a model that takes no images reads, and what the transcript records."""
        return f"[image content not shown: {self.mime}, {self.size} bytes, {self.sha256}]"

    @property
    def attached(self) -> str:
        """What a vision model reads in place of ``placeholder``: the image follows as an image part."""
        return f"[image content: {self.mime}, {self.size} bytes, {self.sha256}; attached below as an image]"

    def to_wire(self) -> dict[str, Any]:
        return {"type": "image_url", "image_url": {"url": f"data:{self.mime};base64,{self.data}"}}


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message on the wire: what the model sees (no sources, no commands).

    An assistant message may carry the ``tool_calls`` it made; a ``tool`` message answers the call
    ``tool_call_id``, and may carry the ``images`` its tool returned (only a provider whose endpoint
    takes images sends them; ``to_wire`` leaves them out, their placeholders in ``content``).
    """

    role: str  #: system, user, assistant or tool
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    images: tuple[ImagePart, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            wire["tool_calls"] = [call.to_wire() for call in self.tool_calls]
        if self.tool_call_id is not None:
            wire["tool_call_id"] = self.tool_call_id
        return wire


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage as the provider reported it."""

    input_tokens: int
    output_tokens: int

    def to_dict(self) -> dict[str, int]:
        return {"inputTokens": self.input_tokens, "outputTokens": self.output_tokens}


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of streamed assistant text."""

    text: str


@dataclass(frozen=True, slots=True)
class Finished:
    """The end of a stream: usage when the provider reported it, its finish reason, and the model
    id it said answered (which may differ from the id requested)."""

    usage: Usage | None = None
    finish_reason: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCalls:
    """The tool calls of one answer, in the order the model made them (parallel calls: several)."""

    calls: tuple[ToolCall, ...]


StreamEvent = TextDelta | ToolCalls | Finished


@dataclass(frozen=True, slots=True)
class Completion:
    """A whole answer (gathered from a stream or not): ``finish_reason`` ``length`` means it was cut
    off at ``max_tokens``, the cap the request carried (None: the server's own)."""

    text: str
    usage: Usage | None
    model: str
    finish_reason: str | None = None
    max_tokens: int | None = None

    @property
    def truncated(self) -> bool:
        """The server stopped the answer at its token cap, not where the model ended it."""
        return self.finish_reason == "length"


class ChatModel(Protocol):
    """What the harness and the operator need from a model."""

    #: the name in the model registry (``offline``, ``local``, ...)
    name: str
    #: what the UI shows next to the model's output (``offline`` for the built-in model)
    label: str

    def stream(
        self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[StreamEvent]:
        """Stream one assistant answer, offering ``tools``. Raises ``ModelError`` on any provider failure."""
        ...

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        """One whole answer; with ``json_schema`` the provider asks for (not trusts) that shape.
        ``max_tokens`` caps the answer unless the endpoint's own ``maxTokens`` setting does."""
        ...

    def keep_connections(self) -> None:
        """Reuse connections between calls until ``aclose()``: what a chat session asks, so that its
        turns and time steps do not each connect anew. One-shot callers need not call it."""
        ...

    async def aclose(self) -> None:
        """Close the connections kept so far; the model stays usable (a later call connects anew)."""
        ...


async def complete_once(
    model: ChatModel,
    messages: Sequence[ChatMessage],
    *,
    json_schema: Mapping[str, Any] | None = None,
    max_tokens: int | None = None,
) -> Completion:
    """``model.complete`` for a caller that runs each call in its own event loop (``asyncio.run``, as
    a tick does): the model's connections are closed before that loop ends, so none outlives it."""
    try:
        return await model.complete(messages, json_schema=json_schema, max_tokens=max_tokens)
    finally:
        await model.aclose()
