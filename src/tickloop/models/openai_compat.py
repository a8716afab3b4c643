"""Any OpenAI-compatible chat-completions server (OpenAI, DeepSeek, vLLM, Ollama, llama.cpp) via the
official ``openai`` SDK.

The SDK is imported inside the methods that talk to a server: importing it costs ~400 ms of CPU, and
one-shot operator ticks that never call a model must not pay for it.

Requests go through the SDK's client (its auth, base URL, headers, timeouts, status errors and SSE
parsing) as plain JSON both ways (``client.post(..., cast_to=object)``): the body is built here, and
the answer's shape is checked here. ``chat.completions.create`` would add a type-driven transform of
the request and a pydantic object per streamed chunk, ~1-2 ms of CPU before the first token reaches
the caller and ~0.3 ms per token after it, for objects that are read once and dropped.

Every failure leaves as ``ModelError`` with a message that names the model, the endpoint, what went
wrong and what to do, and never contains the API key. Cancelling the consuming task closes the HTTP
stream before the cancellation propagates, so an interrupt is immediate and the server sees it.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from tickloop.errors import ModelError
from tickloop.models.base import (
    ChatMessage,
    Completion,
    Finished,
    StreamEvent,
    TextDelta,
    ToolCalls,
    ToolSpec,
    Usage,
)
from tickloop.models.chunks import _chunk_choices, _chunk_model, _chunk_usage, _ShapeError, _ToolCallParts
from tickloop.models.failures import context_text, is_connect_failure, root_cause, server_message, status_text
from tickloop.models.grammar import grammar_schema
from tickloop.models.tls import redirected_to_tls, verify_for
from tickloop.models.wire import wire_messages
from tickloop.system import is_loopback_host

if TYPE_CHECKING:
    from openai import AsyncOpenAI

#: how ``complete(json_schema=...)`` asks for structure: ``json_schema`` (OpenAI, vLLM, llama.cpp's
#: C++ llama-server, Ollama), ``json_object_schema`` (llama-cpp-python's server, the ``local`` model:
#: ``{"type": "json_object", "schema": ...}``, compiled to a grammar; it refuses ``json_schema`` with
#: HTTP 422), ``json_object`` (DeepSeek: JSON but no schema), ``none`` (servers that reject all three).
#: The answer is validated by the caller either way (``tickloop.models.structured``).
ResponseFormat = Literal["json_schema", "json_object_schema", "json_object", "none"]
#: ``auto`` (an endpoint whose ``responseFormat`` is unset): ``json_object_schema`` for a llama.cpp
#: server on this machine, ``json_schema`` for every other endpoint. A loopback endpoint is asked
#: once, on its first structured call, for llama.cpp's ``GET /props`` (which only llama.cpp's
#: llama-server answers). Why ``json_object_schema`` there: driven through the fast tick, SmolLM2-135M
#: on llama-server wrote a valid intent in 20 of 20 ticks with it and in 13 of 20 with
#: ``json_schema`` (whose long string bounds it filled until ``maxTokens`` cut the answer off);
#: ``grammar_schema`` caps every string at 96 characters, so each closes in time. With the bounded
#: schemas, ``operator eval`` there: 52 of 54 answers valid with it, 49 of 54 with ``json_schema``.
FormatChoice = ResponseFormat | Literal["auto"]

#: sent as the bearer token when an endpoint needs no key (llama.cpp, Ollama). Passing ``None``
#: instead would make the SDK read ``OPENAI_API_KEY`` and send a real OpenAI key to that server.
NO_KEY = "no-key-required"

#: seconds an idle kept connection is reused for. Below the 5 s after which uvicorn (llama-cpp-python,
#: vLLM) and llama.cpp's server close an idle connection, so a request is never sent on a connection
#: the server is closing at that moment (no retry would save that turn: max_retries is 0).
KEEPALIVE_EXPIRY_S = 4.0

_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]")
_KEYLIKE = re.compile(r"\b(sk|key|token)-[A-Za-z0-9_\-]{8,}")


@dataclass(slots=True)
class _Gathered:
    """What a ``complete`` stream has given so far."""

    parts: list[str] = field(default_factory=list)
    usage: Usage | None = None
    finish: str | None = None
    started: bool = False


class OpenAICompatModel:
    """A ``ChatModel`` for one OpenAI-compatible endpoint.

    ``keep_alive`` (default: remote hosts only) keeps idle connections between calls; await
    ``aclose()`` when done with such a model to close them. ``keep_connections()`` turns it on
    later: a chat session does, for its lifetime, whatever the host.
    ``timeout_s`` bounds every wait on the server (connecting, the response headers and each read
    while streaming), so a stalled stream fails within it; a long answer that keeps streaming is
    never cut off by ``stream()``; ``complete()`` bounds the whole answer by it too.
    ``connect_timeout_s`` (default ``min(timeout_s, 10)``) bounds the TCP connect.
    """

    def __init__(
        self,
        name: str,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        connect_timeout_s: float | None = None,
        label: str | None = None,
        response_format: FormatChoice = "json_schema",
        temperature: float | None = None,
        max_tokens: int | None = None,
        api_key_env: str | None = None,
        keep_alive: bool | None = None,
        vision: bool = False,
    ) -> None:
        self.name = name
        self.label = label or f"{name} ({model})"
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s if connect_timeout_s is not None else min(timeout_s, 10.0)
        self.response_format: FormatChoice = response_format
        #: what llama.cpp's ``GET /props`` said (None: not asked yet, or not a llama.cpp server)
        self.server_props: Mapping[str, Any] | None = None
        self.temperature = temperature
        self.max_tokens = max_tokens
        #: the endpoint takes images: tool images go to it as image parts (``tickloop.models.wire``)
        self.vision = vision
        #: only for messages ("check $DEEPSEEK_API_KEY"); the key itself is never shown
        self.api_key_env = api_key_env
        #: reuse idle connections between calls. Default: only for remote hosts, where a new TLS
        #: handshake per call costs 50-150 ms; on loopback a new connection costs ~0.1 ms, and
        #: keeping none means a finished call leaves no socket behind when its event loop ends.
        self.keep_alive = keep_alive if keep_alive is not None else not _is_loopback(self.base_url)
        self._api_key = api_key or NO_KEY
        self._client: AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._client_keeps_alive = False

    def __repr__(self) -> str:  # the key stays out of reprs, logs and tracebacks
        return f"OpenAICompatModel(name={self.name!r}, base_url={self.base_url!r}, model={self.model!r})"

    # -- ChatModel ---------------------------------------------------------------------------------

    async def stream(
        self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[StreamEvent]:
        """Stream one answer; ``ModelError`` on any failure, including a stream that ends unfinished.

        With ``tools`` the request offers them; streamed ``tool_calls`` deltas (a call's arguments
        split over many chunks, several calls told apart by ``index``) are assembled and yielded as one
        ``ToolCalls`` before ``Finished``."""
        client = self._get_client()
        started = False
        usage: Usage | None = None
        finish: str | None = None
        answered: str | None = None
        calls = _ToolCallParts()
        extra: dict[str, Any] = {"tools": [t.to_wire() for t in tools]} if tools else {}
        try:
            response = await client.post(
                "/chat/completions",
                body=self._body(messages, stream=True, stream_options={"include_usage": True}, **extra),
                cast_to=object,  # each chunk stays the decoded JSON; _chunk_* check its shape
                stream=True,
                stream_cls=_json_stream(),
                options=_BEARER_AUTH,
            )
            # ``async with`` closes the HTTP response on every exit: end, error, or cancellation
            # (an interrupt), so the server sees the connection close at once.
            async with response:
                async for chunk in response:
                    started = True
                    for text, reason in _chunk_choices(chunk):
                        if text:
                            yield TextDelta(text)
                        finish = reason or finish
                    calls.feed(chunk)
                    usage = _chunk_usage(chunk) or usage
                    answered = _chunk_model(chunk) or answered
        except (asyncio.CancelledError, ModelError):
            raise
        except Exception as exc:  # noqa: BLE001  (the contract: ANY provider failure is a ModelError)
            raise self._error(exc, mid_stream=started, messages=messages) from None
        if finish is None:
            raise ModelError(self._where("the stream ended before the model finished (no finish_reason)"))
        if calls.parts:
            yield ToolCalls(calls.assembled())
        yield Finished(usage=usage, finish_reason=finish, model=answered)

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        """One whole answer. With ``json_schema`` the server is asked for that shape (see
        ``response_format``); the caller still validates the text (fail closed).

        Bounded: the answer is capped at the endpoint's ``max_tokens`` or else the caller's, and must
        be complete within ``timeout_s``. It is gathered from a stream, so a request given up on (the
        deadline, or the caller cancelled) closes its connection, and servers that check for a gone
        client between tokens (llama.cpp, llama-cpp-python, vLLM) stop generating; a server answering
        a non-streamed request would go on generating for nobody. ``finish_reason`` ``length`` on the
        result means the cap cut the answer off."""
        limit = self.max_tokens if self.max_tokens is not None else max_tokens
        if json_schema is not None and self.response_format == "auto":
            self.response_format = await self._detect_format()
        body = self._body(
            messages,
            stream=True,
            stream_options={"include_usage": True},
            **self._response_format_kwargs(json_schema),
        )
        if limit is not None:
            body["max_tokens"] = limit
        gathered = _Gathered()
        try:
            async with asyncio.timeout(self.timeout_s):
                await self._gather(body, gathered)
        except TimeoutError:
            raise ModelError(self._where(self._deadline_text())) from None
        except (asyncio.CancelledError, ModelError):
            raise
        except Exception as exc:  # noqa: BLE001  (the contract: ANY provider failure is a ModelError)
            raise self._error(exc, mid_stream=gathered.started, messages=messages, max_tokens=limit) from None
        if gathered.finish is None:
            raise ModelError(self._where("the stream ended before the model finished (no finish_reason)"))
        text = "".join(gathered.parts)
        return Completion(text, gathered.usage, self.model, finish_reason=gathered.finish, max_tokens=limit)

    async def _gather(self, body: dict[str, Any], into: _Gathered) -> None:
        """Stream one request's answer into ``into``; the response is closed on every exit, so the
        server sees the client leave."""
        response = await self._get_client().post(
            "/chat/completions",
            body=body,
            cast_to=object,
            stream=True,
            stream_cls=_json_stream(),
            options=_BEARER_AUTH,
        )
        async with response:
            async for chunk in response:
                into.started = True
                for text, reason in _chunk_choices(chunk):
                    into.parts.append(text or "")
                    into.finish = reason or into.finish
                into.usage = _chunk_usage(chunk) or into.usage

    def _deadline_text(self) -> str:
        return (
            f"no answer within {self.timeout_s:g} s (the whole answer is bounded by timeoutS); "
            "the request was cancelled (its connection closed, so the server stops "
            "generating). Lower maxTokens, or raise timeoutS for this endpoint if it is just slow."
        )

    # -- beyond the interface ----------------------------------------------------------------------

    async def list_model_ids(self, timeout_s: float = 3.0) -> list[str]:
        """``GET /models`` with a short timeout: is the endpoint reachable, and what does it serve?"""
        client = self._get_client()
        try:
            page = await client.models.list(timeout=timeout_s)
            return [m.id for m in page.data]
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001  (reachability check: every failure is an answer)
            raise self._error(exc, mid_stream=False) from None

    async def props(self, timeout_s: float = 2.0) -> Mapping[str, Any] | None:
        """llama.cpp's ``GET /props`` (beside ``/v1``): its chat template, context size and build;
        None from any server that does not answer it with a JSON object (llama-cpp-python, Ollama,
        vLLM, OpenAI). Asked once per model; a failure here is an answer, never an error."""
        if self.server_props is None:
            root = self.base_url.removesuffix("/v1")
            try:
                found: object = await self._get_client().get(
                    f"{root}/props", cast_to=object, options={"timeout": timeout_s}
                )
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001  (not llama.cpp, or not reachable: both say "no props")
                found = None
            self.server_props = found if isinstance(found, Mapping) else {}
        return self.server_props or None

    async def _detect_format(self) -> ResponseFormat:
        """``auto``: ``json_object_schema`` for a llama.cpp server on loopback, else ``json_schema``."""
        if not _is_loopback(self.base_url):
            return "json_schema"
        props = await self.props()
        is_llama_cpp = props is not None and (
            "default_generation_settings" in props or "chat_template" in props
        )
        return "json_object_schema" if is_llama_cpp else "json_schema"

    def keep_connections(self) -> None:
        """Reuse connections between calls, on loopback too, until ``aclose()`` (a chat session's
        lifetime). On loopback a fresh connection costs ~1.3 ms before each first token (anyio
        resolves even an IP address in a worker thread); remote hosts add a TLS handshake."""
        self.keep_alive = True

    async def aclose(self) -> None:
        """Close the connection pool (optional: a process that exits needs not); the model stays usable."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    # -- internals ---------------------------------------------------------------------------------

    def _get_client(self) -> AsyncOpenAI:
        """One client (and connection pool) per event loop: pooled connections belong to a loop."""
        loop = asyncio.get_running_loop()
        # A client built without keep-alive holds no idle connection, so replacing it (after
        # ``keep_connections()``) leaves nothing open behind.
        stale = self._client_loop is not loop or self._client_keeps_alive != self.keep_alive
        if self._client is None or stale:
            self._client = self._new_client()
            self._client_loop = loop
            self._client_keeps_alive = self.keep_alive
        return self._client

    def _new_client(self) -> AsyncOpenAI:
        import httpx2  # noqa: PLC0415  (the SDK's HTTP client; model path only)
        from openai import AsyncOpenAI, DefaultAsyncHttpx2Client  # noqa: PLC0415  (~400 ms CPU)

        timeout = httpx2.Timeout(self.timeout_s, connect=self.connect_timeout_s)
        # The client is kept per loop: building one costs ~20 ms, and for an https endpoint ~50 ms
        # more for the trust store (``tickloop.models.tls``). Idle keep-alive
        # connections are kept only when ``keep_alive`` (see __init__), since an idle socket outlives
        # the caller's event loop unless ``aclose()`` is awaited.
        idle = 20 if self.keep_alive else 0
        limits = httpx2.Limits(
            max_connections=100, max_keepalive_connections=idle, keepalive_expiry=KEEPALIVE_EXPIRY_S
        )
        client = AsyncOpenAI(
            api_key=self._api_key,
            base_url=self.base_url,
            timeout=timeout,
            http_client=DefaultAsyncHttpx2Client(
                timeout=timeout, limits=limits, verify=verify_for(self.base_url, os.environ)
            ),
            # The Tick Protocol forbids timer-based retry: a failed call ends the turn with an
            # ``error`` terminal and a person (or the next scheduled tick) decides what happens next.
            max_retries=0,
        )
        # The endpoint's identity comes from our config only: never send the ambient
        # OPENAI_ORG_ID / OPENAI_PROJECT_ID that the SDK reads from the environment to another server.
        client.organization = None
        client.project = None
        return client

    def _body(self, messages: Sequence[ChatMessage], **fields: Any) -> dict[str, Any]:
        """The chat-completions request: the model, the messages (tool images as image parts for a
        ``vision`` endpoint), ``fields``, sampling."""
        wire = wire_messages(messages, vision=self.vision)
        body: dict[str, Any] = {"model": self.model, "messages": wire, **fields}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return body

    def _response_format_kwargs(self, json_schema: Mapping[str, Any] | None) -> dict[str, Any]:
        if json_schema is None or self.response_format == "none":
            return {}
        if self.response_format == "json_object":
            return {"response_format": {"type": "json_object"}}
        if self.response_format == "json_object_schema":
            return {"response_format": {"type": "json_object", "schema": grammar_schema(json_schema)}}
        spec = {"name": schema_name(json_schema), "schema": dict(json_schema), "strict": True}
        return {"response_format": {"type": "json_schema", "json_schema": spec}}

    def _where(self, what: str) -> str:
        return f"model {self.name!r} ({self.model} at {self.base_url}): {what}"

    def _error(
        self,
        exc: Exception,
        *,
        mid_stream: bool,
        messages: Sequence[ChatMessage] = (),
        max_tokens: int | None = None,
    ) -> ModelError:
        context = context_text(exc, messages, max_tokens if max_tokens is not None else self.max_tokens)
        text = context or self._describe(exc, mid_stream=mid_stream)
        return ModelError(self._redact(self._where(text)))

    def _describe(self, exc: Exception, *, mid_stream: bool) -> str:
        import openai  # noqa: PLC0415  (already imported by the call that failed)

        if isinstance(exc, openai.APIStatusError):
            return status_text(exc.status_code, server_message(exc.body), self.api_key_env)
        if isinstance(exc, openai.APITimeoutError):
            return (
                f"no answer within {self.timeout_s:g} s (timed out"
                f"{' mid-stream' if mid_stream else ''}); the server is stalled or overloaded. "
                "Raise timeoutS for this endpoint if it is just slow."
            )
        if isinstance(exc, openai.APIConnectionError):
            return self._connection_text(exc, mid_stream=mid_stream)
        return _content_text(exc, mid_stream=mid_stream)

    def _connection_text(self, exc: Exception, *, mid_stream: bool) -> str:
        cause = root_cause(exc)
        if mid_stream:
            return f"the connection was lost mid-stream ({cause}); the answer is incomplete."
        if redirected_to_tls(self.base_url, cause):
            return (
                f"the server sent the request on to an https address ({cause}), which tickloop "
                "does not follow from a plain-http base URL: set baseUrl to the https address."
            )
        if is_connect_failure(exc):
            return f"cannot connect ({cause}); is the server running and the base URL right?"
        return f"the server closed the connection without an answer ({cause})."

    def _redact(self, text: str) -> str:
        """Servers sometimes echo the key they rejected; it must never reach a message or a log."""
        if self._api_key != NO_KEY:
            text = text.replace(self._api_key, "[redacted]")
        return _KEYLIKE.sub("[redacted]", text)


def _content_text(exc: Exception, *, mid_stream: bool) -> str:
    import openai  # noqa: PLC0415  (already imported by the call that failed)

    if isinstance(exc, openai.APIError):  # an ``error`` event inside the stream
        return f"the server reported an error: {exc.message}"
    if isinstance(exc, ValueError | _ShapeError):  # json.JSONDecodeError, a wrong shape
        return f"the server sent a malformed {'stream chunk' if mid_stream else 'response'}: {exc}"
    return f"unexpected answer ({type(exc).__name__}: {exc}); is this an OpenAI-compatible server?"


def _is_loopback(base_url: str) -> bool:
    return is_loopback_host(urlsplit(base_url).hostname or "")


def schema_name(schema: Mapping[str, Any]) -> str:
    """``json_schema.name`` must match ``[A-Za-z0-9_-]{1,64}``: the schema's title, or ``response``."""
    title = schema.get("title")
    name = _SCHEMA_NAME.sub("_", title)[:64] if isinstance(title, str) else ""
    return name or "response"


#: what ``chat.completions.create`` asks of the client: the bearer key (none of the SDK's admin keys)
_BEARER_AUTH: Any = {"security": {"bearer_auth": True}}


def _json_stream() -> Any:
    """The SDK's SSE stream, yielding each event's decoded JSON (error events still raise)."""
    from openai import AsyncStream  # noqa: PLC0415  (already imported by the client)

    return AsyncStream[object]
