"""Reading an OpenAI-compatible stream's chunks: each chunk's shape is checked here, since the SDK
(asked for plain JSON) does not validate it; a wrong shape is ``_ShapeError``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tickloop.models.base import ToolCall, Usage


class _ShapeError(Exception):
    """The server's JSON parsed but is not a chat completion (the SDK does not validate it)."""


def _object(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _ShapeError(f"{what} is {type(value).__name__}, not a JSON object")
    return value


def _chunk_usage(chunk: object) -> Usage | None:
    usage = _object(chunk, "a stream chunk").get("usage")
    if usage is None:
        return None
    counts = _object(usage, "usage")
    prompt, completion = counts.get("prompt_tokens"), counts.get("completion_tokens")
    if not isinstance(prompt, int) or not isinstance(completion, int):
        raise _ShapeError("usage.prompt_tokens or usage.completion_tokens is not an integer")
    return Usage(input_tokens=prompt, output_tokens=completion)


def _chunk_model(chunk: object) -> str | None:
    """The model id a chunk says answered; bounded, since it is the server's text."""
    model = _object(chunk, "a stream chunk").get("model")
    return model[:200] if isinstance(model, str) and model else None


def _chunk_choices(chunk: object) -> list[tuple[str | None, str | None]]:
    """(text, finish_reason) per choice of one stream chunk, its shape checked."""
    choices = _object(chunk, "a stream chunk").get("choices") or []
    if not isinstance(choices, list):
        raise _ShapeError(f"choices is {type(choices).__name__}, not a list")
    out: list[tuple[str | None, str | None]] = []
    for choice in choices:
        fields = _object(choice, "a choice")
        text = _object(fields.get("delta") or {}, "a choice's delta").get("content")
        reason = fields.get("finish_reason")
        if not isinstance(text, str | None) or not isinstance(reason, str | None):
            raise _ShapeError("a choice's delta.content or finish_reason is not a string")
        out.append((text, reason))
    return out


class _ToolCallParts:
    """Streamed ``tool_calls`` deltas of the first choice, assembled per ``index``: the first delta
    of a call carries its id and name, later ones carry pieces of its arguments text."""

    def __init__(self) -> None:
        self.parts: dict[int, tuple[str, str, list[str]]] = {}

    def feed(self, chunk: object) -> None:
        choices = _object(chunk, "a stream chunk").get("choices") or []
        for choice in choices[:1]:
            delta = _object(_object(choice, "a choice").get("delta") or {}, "a choice's delta")
            deltas = delta.get("tool_calls") or []
            if not isinstance(deltas, list):
                raise _ShapeError("delta.tool_calls is not a list")
            for item in deltas:
                self._one(_object(item, "a tool_calls delta"))

    def _one(self, item: Mapping[str, Any]) -> None:
        index = item.get("index", len(self.parts))
        function = _object(item.get("function") or {}, "a tool call's function")
        call_id, name, args = item.get("id"), function.get("name"), function.get("arguments")
        if not isinstance(index, int) or not all(isinstance(v, str | None) for v in (call_id, name, args)):
            raise _ShapeError("a tool_calls delta has a non-integer index or non-string id/name/arguments")
        old_id, old_name, pieces = self.parts.get(index, ("", "", []))
        pieces.append(args or "")
        self.parts[index] = (old_id or call_id or "", old_name or name or "", pieces)

    def assembled(self) -> tuple[ToolCall, ...]:
        return tuple(
            ToolCall(id=call_id or f"call_{index}", name=name, arguments="".join(pieces))
            for index, (call_id, name, pieces) in sorted(self.parts.items())
        )
