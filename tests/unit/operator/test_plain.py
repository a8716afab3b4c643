"""``service.plain``: the JSON the MCP face and the CLI's --json listings send, pinned byte for byte."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from enum import Enum
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickloop.operator import service, staging
from tickloop.operator.domain import NewProgress, Outcome, Verdict
from tickloop.operator.explain import explain
from tickloop.operator.gate import GateSettings
from tickloop.operator.store import Store, open_store
from tickloop.operator.store._rows import iso

P = "me"
NOW = datetime(2026, 7, 7, 9, 0, 39, tzinfo=UTC)


def reference(value: Any) -> Any:
    """The first, recursive ``plain``: the wire format the msgspec version must keep."""
    if isinstance(value, msgspec.Struct):
        return {name: reference(getattr(value, name)) for name in value.__struct_fields__}
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [reference(v) for v in value]
    if isinstance(value, dict):
        return {str(k): reference(v) for k, v in value.items()}
    return value


def wire(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, indent=1)


@pytest.fixture
def store() -> Iterator[Store]:
    with open_store("memory://") as opened:
        service.init_profile(opened, P, service.InitSpec(goal_title="Ship v1"), now=NOW)
        yield opened


def _records(store: Store) -> list[Any]:
    task = service.add_task(store, P, "write tests", now=NOW, notes="ünïcode")
    draft = staging.Draft(
        action_type="email",
        title="Hi",
        recipient="ada@example.org",
        payload={"body": "hello", "n": [1, 2.5, None]},
        origin="mcp:x",
    )
    staged, _ = staging.stage(store, P, draft, GateSettings(), now=NOW)
    store.record_progress(P, NewProgress("fast", Outcome.DONE, NOW, NOW + timedelta(seconds=2), "sha256:a"))
    note = store.add_note(P, "the printer", now=NOW, source="mcp", tainted=True)
    return [
        task,
        staged,
        note,
        store.active_goal_model(P),
        store.recent_progress(P, limit=20),
        store.list_intents(P, limit=20),
        explain(store, P, staged.id),
        store.list_conditions([P]),
        None,
        Verdict.ALLOWED,
    ]


def test_every_record_kind_the_faces_send_is_byte_identical_to_the_first_format(store: Store) -> None:
    """Tasks, intents, notes, goals, progress rows, explanations and conditions encode exactly as before."""
    for record in _records(store):
        assert wire(service.plain(record)) == wire(reference(record))


def test_times_keep_the_stores_millisecond_utc_form(store: Store) -> None:
    """A time is sent as ``...39.000Z`` (where msgspec alone would write ``...39Z``), in UTC."""
    local = NOW.astimezone(timezone(timedelta(hours=2)))
    assert service.plain({"at": local, "in": [NOW.replace(microsecond=123456)]}) == {
        "at": "2026-07-07T09:00:39.000Z",
        "in": ["2026-07-07T09:00:39.123Z"],
    }
    row = store.record_progress(P, NewProgress("fast", Outcome.DONE, NOW, NOW, "sha256:a"))
    assert service.plain(row)["ended_at"] == "2026-07-07T09:00:39.000Z"


_leaf = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text()
    | st.datetimes(timezones=st.just(UTC))
    | st.sampled_from(list(Outcome))
)
_tree = st.recursive(
    _leaf,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=5) | st.integers(0, 9), inner, max_size=4)
    ),
    max_leaves=25,
)


@given(_tree)
def test_any_tree_of_json_values_times_and_enums_converts_as_before(value: Any) -> None:
    """Nested lists, tuples, dicts (integer keys too), times and enums: the same JSON as the first format."""
    assert wire(service.plain(value)) == wire(reference(value))


class _Inner(msgspec.Struct):
    at: datetime
    tags: tuple[str, ...] = ()


class _Record(msgspec.Struct):
    at: datetime
    maybe: datetime | None
    inner: _Inner
    many: tuple[_Inner, ...]
    anything: dict[str, Any]
    kind: Outcome
    count: int


_times = st.datetimes(
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=-7)), timezone(timedelta(hours=5))])
)
_inner = st.builds(_Inner, _times, st.tuples(st.text(max_size=3)))
_record = st.builds(
    _Record,
    _times,
    st.none() | _times,
    _inner,
    st.lists(_inner, max_size=3).map(tuple),
    st.dictionaries(st.text(max_size=4), _tree, max_size=3),
    st.sampled_from(list(Outcome)),
    st.integers(),
)


@given(st.lists(_record, max_size=4))
def test_records_and_lists_of_records_convert_as_before(records: list[_Record]) -> None:
    """A record, a list or tuple of records of one kind (where the type says which fields hold times),
    and a mixed list: the same JSON as the first format, times in any offset included."""
    for value in (records, tuple(records), *records, [*records, {"x": 1}]):
        assert wire(service.plain(value)) == wire(reference(value))
