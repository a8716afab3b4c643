"""One structured model call of a tick: the versioned prompt, the context packet, a validated answer.

Fail closed: a provider error, or an answer that is not exactly the schema, gives no value and an
error naming why; nothing is repaired or guessed. Whatever happens, ``extra`` carries what the
progress row records: the prompt's sha256, the model's name and the tokens in and out (as the
provider reported them, or estimated as UTF-8 bytes / 4 when it did not, and then the row says
``tokens_estimated=True``: a guess is never passed off as a count).

Bounded: each tick kind asks for at most ``MAX_TOKENS[kind]`` tokens, sized to what its schema can
hold (an endpoint's ``maxTokens`` overrides it), and an answer the cap cut off fails the tick with
"truncated at maxTokens=N": a cut-off JSON answer is never parsed for what it might have meant.
An answer that stopped short of the cap was cut off by the model's context instead (the prompt
plus the answer filled it): the error then says "context full" with the numbers, since a larger
``maxTokens`` cannot help there.
"""

from __future__ import annotations

import time
from collections.abc import Coroutine, Mapping
from typing import Any, Generic, TypeVar

import msgspec

from tickloop.errors import ModelError, ValidationError
from tickloop.models.base import ChatMessage, ChatModel, Completion, complete_once
from tickloop.models.failures import cut_off_text
from tickloop.models.structured import decode_structured, schema_for
from tickloop.operator.context import ContextPacket, estimated_tokens, user_message
from tickloop.operator.prompts import load_prompt
from tickloop.operator.runner import TickContext

T = TypeVar("T")

#: The default answer cap per prompt (tokens), sized to its schema: a grammar-bounded
#: ``ActionIntentOut`` (seven fields, strings capped at 96 characters, ~30 tokens each) fits in 384;
#: a ``CritiqueOut`` is 600 characters and a type; a ``ReviewOut`` holds up to 20 plan steps, 10 drift
#: and 10 behind titles, and priorities; a ``ConsolidationOut`` a 4,000-character state of play and a
#: goal refresh. Without a cap, SmolLM2 once wrote ~3,700 tokens into one slow tick and ran out the
#: clock. ``[model.endpoints.NAME] maxTokens`` replaces these for that endpoint.
MAX_TOKENS: dict[str, int] = {"fast": 512, "critique": 192, "slow": 1536, "consolidate": 1536}
#: How ``Asked.error`` begins when the provider failed (no answer at all: a dead server, a timeout,
#: an HTTP error), as opposed to an answer that was cut off or invalid.
MODEL_FAILED = "model call failed"


class Asked(msgspec.Struct, Generic[T], frozen=True):
    """The validated answer (or None) and what the row records about the call."""

    value: T | None
    error: str = ""
    extra: dict[str, object] = msgspec.field(default_factory=dict)
    user_text: str = ""  #: the user message as sent (for size figures and tests)


def ask(
    ctx: TickContext,
    prompt_name: str,
    packet: ContextPacket,
    type_: type[T],
    preface: str = "",
    *,
    schema: Mapping[str, Any] | None = None,
    budget_s: float | None = None,
) -> Asked[T]:
    """Ask the tick's model for one ``type_``; ``preface`` is a line before the packet; ``schema``
    (default: ``type_``'s own) is what the model is sent, narrower than ``type_`` where it names the
    board's task ids. ``budget_s`` bounds the wait on top of the endpoint's own ``timeoutS``; the
    seconds spent waiting are added to ``ctx.model_seconds``."""
    prompt = load_prompt(prompt_name)
    text = (preface + "\n" if preface else "") + user_message(packet)
    messages = [ChatMessage("system", prompt.text), ChatMessage("user", text)]
    model = ctx.model()
    extra: dict[str, object] = {"prompt": prompt.sha256, "model": model.name}
    call = complete_once(
        model, messages, json_schema=schema or schema_for(type_), max_tokens=MAX_TOKENS.get(prompt_name)
    )
    started = time.monotonic()
    try:
        completion = _run(call, budget_s, loop_free=_is_loop_free(model))
    except ModelError as exc:
        return Asked(None, f"{MODEL_FAILED}: {exc.message}", extra, text)
    finally:
        ctx.model_seconds += time.monotonic() - started
    usage = completion.usage
    if usage is not None:
        tokens_in, tokens_out = usage.input_tokens, usage.output_tokens
    else:
        tokens_in = sum(estimated_tokens(m.content) for m in messages)
        tokens_out = estimated_tokens(completion.text)
    extra["tokens_in"], extra["tokens_out"] = tokens_in, tokens_out
    if usage is None:
        extra["tokens_estimated"] = True
    if completion.truncated:
        error = cut_off_text(tokens_in, tokens_out, completion.max_tokens, counted=usage is not None)
        return Asked(None, error, extra, text)
    try:
        value = decode_structured(completion.text, type_, str((schema or {}).get("title", "")))
    except ValidationError as exc:
        return Asked(None, f"invalid model output (nothing was guessed): {exc.message}", extra, text)
    return Asked(value, "", extra, text)


def _is_loop_free(model: ChatModel) -> bool:
    """True for the instant offline model: its ``complete`` never awaits anything, so it is driven to
    its end without an event loop (asyncio is a quarter of a one-shot fast tick's start-up)."""
    from tickloop.models.offline import OfflineModel  # noqa: PLC0415

    return type(model) is OfflineModel and not model.token_delay


def _run(call: Coroutine[Any, Any, Completion], budget_s: float | None, *, loop_free: bool) -> Completion:
    """``call``'s result: on an event loop of its own, bounded by ``budget_s``, or (``loop_free``)
    by stepping the coroutine once, which must finish it."""
    if loop_free:
        try:
            call.send(None)
        except StopIteration as done:
            result: Completion = done.value
            return result
        call.close()
        raise RuntimeError("a loop-free model call awaited something")  # a bug, not a model failure
    import asyncio  # noqa: PLC0415

    return asyncio.run(_bounded(call, budget_s))


async def _bounded(call: Coroutine[Any, Any, Completion], budget_s: float | None) -> Completion:
    """``call`` within ``budget_s`` seconds (None: no bound beyond the endpoint's own)."""
    if budget_s is None:
        return await call
    import asyncio  # noqa: PLC0415

    try:
        async with asyncio.timeout(max(0.0, budget_s)):
            return await call
    except TimeoutError:
        raise ModelError(f"no answer within the {budget_s:.1f} s left of the tick's budget") from None
