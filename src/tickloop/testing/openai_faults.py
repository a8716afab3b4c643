"""What the scripted server does with one request: a ``Reply``, a normal answer or an injected fault.

A fault is one field of the reply: an HTTP error status, a malformed chunk, a disconnect, a stall, a
stream cut short without a finish reason, a verbatim wrong-shape chunk, or a model that goes on
generating after its client has left. ``tickloop.testing.openai_server`` applies them on the wire.
"""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

__all__ = ["Reply"]


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted behaviour for one chat-completions request.

    Use the constructors: ``Reply.text``, ``Reply.echo_user``, ``Reply.error``, ``Reply.malformed``,
    ``Reply.disconnect``, ``Reply.stall``, ``Reply.tool_calls``, ``Reply.context_exceeded``,
    ``Reply.generating``.
    """

    #: the assistant text (split into ``chunks`` nearly equal pieces when streamed)
    content: str = "hello from the test server"
    #: reply with ``echo: <last user message>`` instead of ``content``
    echo: bool = False
    chunks: int = 3
    #: seconds before each streamed chunk
    chunk_delay: float = 0.0
    #: HTTP status; anything but 200 sends an OpenAI-style ``{"error": {...}}`` body
    status: int = 200
    error_message: str = ""
    #: more members of the error object (``{"type": ..., "n_ctx": ...}``), as (name, value) pairs
    error_fields: tuple[tuple[str, Any], ...] = ()
    #: after this many content chunks: send ``data: {not json`` and end the stream
    malformed_after: int | None = None
    #: after this many content chunks: close the socket (no terminator, no [DONE])
    disconnect_after: int | None = None
    #: after this many content chunks: send nothing for ``stall_seconds`` (non-streamed: any value
    #: delays the whole answer by ``stall_seconds``)
    stall_after: int | None = None
    stall_seconds: float = 30.0
    #: after this many content chunks: end the stream cleanly (``[DONE]``) without a finish_reason
    truncate_after: int | None = None
    #: sent verbatim as one ``data:`` event before the content (a wrong-shape chunk, an error
    #: event); for a non-streamed request, sent verbatim as the whole response body
    raw_chunk: str | None = None
    finish_reason: str = "stop"
    #: (prompt_tokens, completion_tokens); None: derived from the request and the reply
    usage: tuple[int, int] | None = None
    #: model a generating server: non-streamed answers take ``chunks * chunk_delay`` to generate, and
    #: tokens generated after the client left are counted (see ``Reply.generating``)
    generate: bool = False
    #: False: count nothing: no usage chunk in a stream whatever ``stream_options`` asks (as
    #: llama-cpp-python streams) and no ``usage`` in a whole answer
    report_usage: bool = True
    #: (id, name, arguments text) of each tool call the answer makes; streamed, each call's first
    #: delta carries its id and name, then its arguments arrive in ``chunks`` pieces
    calls: tuple[tuple[str, str, str], ...] = ()

    @classmethod
    def tool_calls(cls, *calls: tuple[str, str, str], chunks: int = 3, content: str = "") -> Reply:
        """An answer that calls tools: ``Reply.tool_calls(("c1", "list_dir", '{"path": "."}'))``."""
        return cls(content=content, chunks=chunks, calls=calls, finish_reason="tool_calls")

    @classmethod
    def text(cls, content: str, *, chunks: int = 3, chunk_delay: float = 0.0) -> Reply:
        """A normal answer."""
        return cls(content=content, chunks=chunks, chunk_delay=chunk_delay)

    @classmethod
    def echo_user(cls, *, chunks: int = 3, chunk_delay: float = 0.0) -> Reply:
        """Answer ``echo: <last user message>``."""
        return cls(echo=True, chunks=chunks, chunk_delay=chunk_delay)

    @classmethod
    def error(cls, status: int, message: str = "") -> Reply:
        """An HTTP error status with an OpenAI-style error body."""
        return cls(status=status, error_message=message or HTTPStatus(status).phrase)

    @classmethod
    def context_exceeded(cls, prompt_tokens: int, n_ctx: int) -> Reply:
        """llama.cpp's llama-server refusing a prompt that does not fit its context (HTTP 400)."""
        return cls(
            status=400,
            error_message="the request exceeds the available context size, try increasing it",
            error_fields=(
                ("type", "exceed_context_size_error"),
                ("n_prompt_tokens", prompt_tokens),
                ("n_ctx", n_ctx),
            ),
        )

    @classmethod
    def generating(cls, tokens: int, *, seconds_per_token: float, content: str = "x") -> Reply:
        """A model that generates ``tokens`` tokens (``content`` each), one every ``seconds_per_token``,
        as a real server does: streamed, it stops when the client has gone (llama.cpp checks between
        tokens); non-streamed, it generates to the end and answers only then, for nobody if the
        client left. Either way the server counts the tokens generated after the client left
        (``OpenAIServer.tokens_after_client_left``)."""
        return cls(content=content * tokens, chunks=tokens, chunk_delay=seconds_per_token, generate=True)

    @classmethod
    def malformed(cls, *, after: int = 1) -> Reply:
        """A stream whose chunk number ``after + 1`` is not JSON."""
        return cls(malformed_after=after)

    @classmethod
    def disconnect(cls, *, after: int = 1) -> Reply:
        """A stream that loses its connection after ``after`` chunks."""
        return cls(disconnect_after=after)

    @classmethod
    def stall(cls, *, after: int = 0, seconds: float = 30.0) -> Reply:
        """A stream that goes silent after ``after`` chunks (until the client gives up)."""
        return cls(stall_after=after, stall_seconds=seconds)

    def answer(self, body: dict[str, Any]) -> str:
        if not self.echo:
            return self.content
        users = [m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"]
        return f"echo: {users[-1] if users else ''}"

    def pieces(self, text: str) -> list[str]:
        n = max(1, min(self.chunks, len(text) or 1))
        size, extra = divmod(len(text), n)
        out, start = [], 0
        for i in range(n):
            end = start + size + (1 if i < extra else 0)
            out.append(text[start:end])
            start = end
        return out
