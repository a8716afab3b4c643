"""An attention record reads its body as before the typed decoder: each field as the body says it, a
missing one as its default, and a body that is not a JSON object as an empty one."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tickloop.operator.domain import Notification
from tickloop.operator.notices import read_record

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
values = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=10), st.lists(st.integers(), max_size=2)
)
bodies = st.one_of(
    st.dictionaries(
        st.sampled_from(["check", "kind", "source", "sent", "holdUntil", "digest", "other"]), values
    ).map(json.dumps),
    st.text(max_size=20),
    st.just("[1, 2]"),
)


def as_before(text: str) -> tuple[Any, ...]:
    """What read_record made of a body with json.loads and dict.get."""
    try:
        body = json.loads(text)
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    return (
        str(body.get("check", "")),
        str(body.get("kind", "")),
        str(body.get("source", "")),
        bool(body.get("sent")),
        body.get("holdUntil"),
        bool(body.get("digest")),
    )


@given(bodies)
def test_a_record_reads_its_body_as_before(text: str) -> None:
    record = read_record(Notification(7, "p", "attention", "attention", "a title", text, None, NOW))
    assert (record.id, record.at, record.title) == (7, NOW, "a title")
    assert (
        record.check,
        record.kind,
        record.source,
        record.sent,
        record.hold_until,
        record.digest,
    ) == as_before(text)
