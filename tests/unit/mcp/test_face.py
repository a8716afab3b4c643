"""The MCP face's reads and writes called directly (no server), on the in-memory store."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tickloop.errors import TickloopError, ValidationError
from tickloop.mcp.face import MAX_PAYLOAD_DEPTH, RESOURCES, Face
from tickloop.operator.service import InitSpec, init_profile
from tickloop.operator.store import open_store

NOW = datetime(2026, 7, 7, 12, tzinfo=UTC)


@cache
def face() -> Face:
    store = open_store("memory://")
    init_profile(store, "me", InitSpec("Ship v1"), now=NOW)
    return Face(store, "me", now=lambda: NOW)


def _texts() -> st.SearchStrategy[str]:
    return st.text(st.characters(codec=None, exclude_categories=()), max_size=12)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _texts(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_texts(), inner, max_size=3),
    max_leaves=12,
)


def _storable(value: Any, depth: int = 0) -> bool:
    if depth > MAX_PAYLOAD_DEPTH:
        return False
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        return "\x00" not in value and not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, list):
        return all(_storable(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(_storable(k, 0) and _storable(v, depth + 1) for k, v in value.items())
    return True


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON)
def test_a_payload_is_stored_whole_or_refused_by_name(value: Any) -> None:
    """Any JSON payload is either staged exactly as sent or refused with a ValidationError; never half."""
    f = face()
    before = len(f.store.list_intents("me", limit=10_000))
    payload = {"v": value}
    try:
        made = f.stage_intent("note", "t", "", payload)
    except ValidationError as exc:
        assert str(exc).startswith("payload")
        assert not _storable(payload)
        assert len(f.store.list_intents("me", limit=10_000)) == before
        return
    assert _storable(payload)
    assert f.store.get_intent("me", made["intent"]["id"]).payload == payload


@pytest.mark.parametrize("name", sorted(RESOURCES))
def test_every_resource_reads_as_json_and_short_text(name: str) -> None:
    """Each resource gives JSON-ready data and a short text, on a store with and without rows."""
    view = face().read(name)
    assert isinstance(view.data, dict)
    assert 0 < len(view.text) < 2000


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda f: f.add_task(None), "expected text, got null"),
        (lambda f: f.add_task("t", 1.5), "expected an integer, got a number"),
        (lambda f: f.set_task_status(0, "done"), "outside 1.."),
        (lambda f: f.set_task_status(f.add_task("t")["task"]["id"], "unblock"), "only a blocked task"),
        (lambda f: f.stage_intent("note", "t", "", {"a": math.inf}), "not a JSON number"),
        (lambda f: f.stage_intent("note", "t", "", {"a": b"x"}), "not a JSON value"),
        (lambda f: f.stage_intent("note", "t", "", {"a": list(range(6000))}), "over the limit"),
        (lambda f: f.explain_intent(10**6), "no intent"),
        (lambda f: f.draft_goal("t", None), "body: expected text"),
    ],
)
def test_bad_arguments_are_named(call: Any, words: str) -> None:
    """Each refusal names the argument and what was wrong with it."""
    with pytest.raises(TickloopError, match=words):
        call(face())
