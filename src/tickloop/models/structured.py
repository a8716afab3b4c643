"""Structured model output: ask for a JSON schema, then validate the answer against a msgspec Struct.

Fail closed: an answer that is not exactly one JSON value of the expected shape raises
``ValidationError`` naming the path (``at $.field``); nothing is repaired or guessed. The one
tolerance: an answer that is *entirely* one fenced block (```` ```json ... ``` ````) is unwrapped,
because small models and servers without schema support (``responseFormat = "json_object"`` or
``"none"``) habitually fence JSON, and removing a fence around the whole answer changes no content.
Text before or after the fence, two fences, or a fence inside prose are not unwrapped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec

from tickloop.errors import ValidationError
from tickloop.models.base import ChatMessage, ChatModel, Completion

T = TypeVar("T")

_FENCE = re.compile(r"\A\s*```(?:json|JSON)?[ \t]*\r?\n(?P<body>.*?)\r?\n[ \t]*```\s*\Z", re.DOTALL)


def schema_for(type_: type[Any]) -> dict[str, Any]:
    """The JSON schema of ``type_`` with an object at the root (msgspec emits a ``$ref``; servers
    in strict mode want the object itself). Referenced definitions stay under ``$defs``."""
    schema = msgspec.json.schema(type_)
    ref = schema.get("$ref")
    defs = schema.get("$defs", {})
    if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
        return {**defs[ref[8:]], "$defs": defs}
    return schema


def decode_structured(text: str | bytes, type_: type[T], name: str = "") -> T:
    """Validate a model's answer as ``type_``; ``ValidationError`` (and nothing else) if it is not.
    ``name`` is what errors call the type (default: its ``__name__``; a union has none)."""
    name = name or getattr(type_, "__name__", str(type_))
    try:
        answer = text if isinstance(text, str) else bytes(text).decode("utf-8")
        match = _FENCE.match(answer) if "```" in answer else None
        raw = (match.group("body") if match else answer).encode("utf-8")
    except UnicodeError:  # invalid UTF-8 bytes, or lone surrogates in a str
        raise ValidationError(f"model output for {name} is not valid UTF-8 text") from None
    try:
        return msgspec.json.decode(raw, type=type_)
    except msgspec.ValidationError as exc:
        raise ValidationError(f"model output does not match {name}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ValidationError(f"model output for {name} is not one JSON value: {exc}") from None
    except RecursionError:
        raise ValidationError(f"model output for {name} is nested too deeply") from None


async def complete_structured(
    model: ChatModel, messages: Sequence[ChatMessage], type_: type[T]
) -> tuple[T, Completion]:
    """Ask ``model`` for ``type_`` (schema sent as ``response_format`` where supported) and validate.

    Raises ``ModelError`` if the call fails and ``ValidationError`` if the answer is not a ``type_``.
    A caller that must record usage even for an invalid answer calls ``model.complete`` and
    ``decode_structured`` itself.
    """
    completion = await model.complete(messages, json_schema=schema_for(type_))
    return decode_structured(completion.text, type_), completion
