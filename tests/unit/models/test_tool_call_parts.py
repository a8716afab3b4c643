"""Assembling streamed ``tool_calls`` deltas: any split of the arguments gives back the same calls."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickloop.models.base import ToolCall
from tickloop.models.openai_compat import _ShapeError, _ToolCallParts


def chunk(*deltas: dict[str, Any]) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"tool_calls": list(deltas)}, "finish_reason": None}]}


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(c, len(text)) for c in cuts})
    pieces, start = [], 0
    for point in points:
        pieces.append(text[start:point])
        start = point
    pieces.append(text[start:])
    return pieces


@given(
    calls=st.lists(st.tuples(st.text(min_size=1, max_size=8), st.text(max_size=60)), min_size=1, max_size=4),
    cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=8),
    interleave=st.booleans(),
)
def test_any_split_and_interleaving_reassembles_the_calls(
    calls: list[tuple[str, str]], cuts: list[int], interleave: bool
) -> None:
    """Arguments cut anywhere, calls streamed one after another or interleaved: the same calls result."""
    parts = _ToolCallParts()
    for index, (name, _) in enumerate(calls):
        parts.feed(chunk({"index": index, "id": f"id{index}", "function": {"name": name, "arguments": ""}}))
    pieces = [[(i, p) for p in split(args, cuts)] for i, (_, args) in enumerate(calls)]
    if interleave:
        order = [item for group in zip(*pieces, strict=False) for item in group]
        order += [item for group in pieces for item in group[min(len(p) for p in pieces) :]]
    else:
        order = [item for group in pieces for item in group]
    for index, piece in order:
        parts.feed(chunk({"index": index, "function": {"arguments": piece}}))
    expected = tuple(ToolCall(f"id{i}", name, args) for i, (name, args) in enumerate(calls))
    assert parts.assembled() == expected


@pytest.mark.parametrize(
    "bad",
    [
        {"choices": [{"delta": {"tool_calls": "nope"}}]},
        chunk({"index": "0", "function": {"arguments": "{}"}}),
        chunk({"index": 0, "function": {"arguments": 5}}),
        chunk({"index": 0, "function": "f"}),
        chunk("not an object"),  # type: ignore[arg-type]
    ],
)
def test_a_malformed_tool_calls_delta_is_refused_by_name(bad: dict[str, Any]) -> None:
    """A wrong-shaped delta is a shape error (the provider turns it into a ModelError), never guessed."""
    with pytest.raises(_ShapeError):
        _ToolCallParts().feed(bad)


def test_a_call_without_an_id_gets_a_stable_one() -> None:
    """Servers that send no id (some local ones) still get distinct ids to answer the calls by."""
    parts = _ToolCallParts()
    parts.feed(
        chunk(
            {"index": 0, "function": {"name": "a", "arguments": "{}"}},
            {"index": 1, "function": {"name": "b"}},
        )
    )
    assert [c.id for c in parts.assembled()] == ["call_0", "call_1"]
