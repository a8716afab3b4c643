"""What a provider's failure says to the person: the server's own words, never a generic hint.

An HTTP status becomes its meaning and what to do (a key to set, a format to choose); a context
overflow becomes "context exceeded: the packet is N tokens, the model's context is M", read from
llama.cpp's, OpenAI's/vLLM's or llama-cpp-python's wording; a connection failure names its cause.
Pure functions over the exception: the provider (``openai_compat``) decides when to call them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from tickloop.models.base import ChatMessage


def server_message(body: object) -> str:
    if isinstance(body, Mapping):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, Mapping) else error
        if message:
            return str(message)[:300]
    return json.dumps(body)[:300] if body is not None else ""


_FORMAT_HINT = (
    "the server rejected the request; if it mentions response_format, set responseFormat for this "
    'endpoint to what it supports: "json_object_schema" (llama-cpp-python), "json_object" or "none".'
)


def status_text(status: int, message: str, key_env: str | None) -> str:
    said = f": {message}" if message else ""
    key = f"${key_env}" if key_env else "the endpoint's API key (apiKeyEnv)"
    hints = {
        400: _FORMAT_HINT,
        401: f"the server refused the credentials: check {key}.",
        403: f"the server refused the credentials: check {key}.",
        404: "check the base URL (it usually ends in /v1) and the model id.",
        429: "rate limited or out of quota; tickloop does not retry on a timer: try again later.",
    }
    hint = hints.get(status) or (
        "the server failed on its side; its log says why (tickloop does not retry on a timer)."
        if status >= 500
        else "the request was refused."
    )
    if "response_format" in message:  # llama-cpp-python answers an unsupported format with HTTP 500
        hint = _FORMAT_HINT
    return f"HTTP {status}{said.rstrip('.')}. {hint[0].upper()}{hint[1:]}"


#: How servers say a request does not fit the model's context, and where they put the numbers:
#: llama.cpp's llama-server (``exceed_context_size_error`` with ``n_prompt_tokens`` and ``n_ctx``,
#: or HTTP 500 "Context size has been exceeded" when generation runs into the end of the context),
#: OpenAI and vLLM ("maximum context length is M tokens. However, you requested N tokens (P in the
#: messages, C in the completion)"), llama-cpp-python ("Requested tokens (N) exceed context window of M").
_CONTEXT_SIGNS = re.compile(
    r"context[ _](?:size|length|window)|exceed_context_size|context_length_exceeded", re.IGNORECASE
)
_OPENAI_CONTEXT = re.compile(r"maximum context length is (\d+) tokens", re.IGNORECASE)
_OPENAI_PROMPT = [
    re.compile(pattern, re.IGNORECASE)
    for pattern in (r"(\d+) in the messages", r"messages resulted in (\d+) tokens", r"requested (\d+) tokens")
]
_LLAMA_CPP_PYTHON = re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)", re.IGNORECASE)


def context_text(exc: Exception, messages: Sequence[ChatMessage], max_tokens: int | None) -> str:
    """ "context exceeded: the packet is N tokens, the model's context is M" when the server said the
    request does not fit (with the numbers it gave; else the packet estimated), or "" if it did not."""
    import openai  # noqa: PLC0415  (already imported by the call that failed)

    if not isinstance(exc, openai.APIError):
        return ""
    body = exc.body if isinstance(exc, openai.APIStatusError) else getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, Mapping) else {}
    fields: Mapping[str, Any] = error if isinstance(error, Mapping) else {}
    said = server_message(body) if body is not None else exc.message
    kind = f"{fields.get('type', '')} {fields.get('code', '')}"
    if not _CONTEXT_SIGNS.search(f"{said} {kind}"):
        return ""
    prompt, window = _int(fields.get("n_prompt_tokens")), _int(fields.get("n_ctx"))
    if match := _LLAMA_CPP_PYTHON.search(said):
        prompt, window = prompt or int(match[1]), window or int(match[2])
    if window is None and (match := _OPENAI_CONTEXT.search(said)):
        window = int(match[1])
    for pattern in _OPENAI_PROMPT:  # the messages' own count first: the total includes the answer
        if prompt is None and (match := pattern.search(said)):
            prompt = int(match[1])
    if prompt is not None:
        packet = f"the packet is {prompt} tokens"
    else:
        estimate = sum(len(m.content.encode("utf-8")) for m in messages) // 4
        packet = f"the packet is about {estimate} tokens (estimated: the server did not count it)"
    size = (
        f"the model's context is {window}"
        if window is not None
        else "the server did not say its context size"
    )
    answer = f"; the answer may add up to maxTokens={max_tokens}" if max_tokens is not None else ""
    return (
        f"context exceeded: {packet}, {size}{answer}. Shorten what is sent, lower maxTokens, or serve the "
        f"model with a larger context (llama.cpp: --ctx-size). The server said: {said.rstrip('.')}."
    )


def cut_off_text(prompt_tokens: int, answer_tokens: int, max_tokens: int | None, *, counted: bool) -> str:
    """Why an answer ended at ``finish_reason=length``: the cap (raise ``maxTokens``), or the context
    (the prompt plus the answer filled it: a larger cap cannot help). The context is the cause when
    the answer stopped short of the cap: by the server's count, or, when the server counted nothing
    (``counted=False``, the numbers estimated as UTF-8 bytes / 4), when it is under half the cap."""
    short = max_tokens is not None and (
        answer_tokens < max_tokens if counted else answer_tokens < max_tokens / 2
    )
    about = "" if counted else "about "
    if not short:
        cap = "" if max_tokens is None else f"={max_tokens}"
        return (
            f"model answer truncated at maxTokens{cap} (nothing was guessed from the cut-off text); "
            "raise maxTokens for this endpoint if its answers need more"
        )
    total = prompt_tokens + answer_tokens
    estimated = "" if counted else " (estimated: the server did not count tokens)"
    return (
        f"context full: the prompt ({about}{prompt_tokens} tokens) plus the answer ({about}{answer_tokens}"
        f" tokens) reached the model's context (about {total} tokens) before maxTokens={max_tokens}"
        f"{estimated}; the answer was cut off and nothing was guessed from it. Raising maxTokens "
        "will not help: shorten what is sent, or serve the model with a larger context "
        "(llama.cpp: --ctx-size)"
    )


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def is_connect_failure(exc: BaseException) -> bool:
    """Refused, unresolvable or unroutable: nothing answered (vs a server that hung up on us)."""
    names = {"ConnectError", "ConnectTimeout", "ConnectionRefusedError", "gaierror"}
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return False
        if type(seen).__name__ in names:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def root_cause(exc: BaseException) -> str:
    seen = exc
    for _ in range(10):  # bounded: a chain is short, and a cycle must not hang an error path
        nxt = seen.__cause__ or seen.__context__
        if nxt is None:
            break
        seen = nxt
    return f"{type(seen).__name__}: {seen}" if str(seen) else type(seen).__name__
