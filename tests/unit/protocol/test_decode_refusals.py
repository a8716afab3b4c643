"""``decode``'s refusals, word for word: what ``tickloop audit verify`` says of a line that is not a record.
A mutation run found the got-type and the schema a file gave free to vanish from these messages."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tickloop.errors import LedgerError
from tickloop.protocol.ledger import SCHEMA, decode

GOOD: dict[str, Any] = {
    "schema": SCHEMA,
    "type": "loop_armed",
    "seq": 1,
    "recordedAt": "2026-07-07T09:00:00.000Z",
    "sessionId": "s",
}


def line(**changes: Any) -> bytes:
    fields = {**GOOD, **changes}
    return json.dumps({k: v for k, v in fields.items() if v is not None}).encode()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"[1, 2]", "a record must be a JSON object, got list"),
        (b'"text"', "a record must be a JSON object, got str"),
        (line(schema="tickloop.ledger/0"), f"schema is 'tickloop.ledger/0', expected {SCHEMA!r}"),
        (line(schema=None), f"schema is None, expected {SCHEMA!r}"),
        (line(type="nope"), "unknown record type 'nope'"),
        (line(seq=0), "seq must be a positive integer, got 0"),
        (line(seq=True), "seq must be a positive integer, got True"),
        (line(seq="1"), "seq must be a positive integer, got '1'"),
        (line(recordedAt=None), "recordedAt must be a string"),
        (line(sessionId=5), "sessionId must be a string"),
    ],
)
def test_each_refusal_says_what_the_line_gave(raw: bytes, message: str) -> None:
    with pytest.raises(LedgerError) as refused:
        decode(raw)
    assert str(refused.value) == message


def test_a_good_line_decodes_to_its_fields() -> None:
    assert decode(line()) == GOOD
