"""Why a ledger line is not canonical, in the words ``tickloop audit verify`` prints after its rule.

The strict verifier's tests match a word of each reason; a mutation run found the rest of the sentence
(and the 40-character cut of a duplicate key's name) free to change.
"""

from __future__ import annotations

import json

import pytest

from tickloop.protocol.ledger import SCHEMA, noncanonical_reason

LONG = "k" * 50


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            b'{"usage":{"' + LONG.encode() + b'":1,"' + LONG.encode() + b'":2}}',
            f"duplicate key {'k' * 40!r} (readers disagree on which value counts)",
        ),
        (  # the duplicate named is the repeated key, not the object's first
            b'{"usage":{"a":1,"' + LONG.encode() + b'":1,"' + LONG.encode() + b'":2}}',
            f"duplicate key {'k' * 40!r} (readers disagree on which value counts)",
        ),
        ('{"type":"x"}'.encode("utf-16-le"), "not UTF-8 (UTF-16 or UTF-32)"),
        (b'{"token":"\\ud800"}', "holds a lone surrogate (not well-formed Unicode)"),
        (
            b'{"type": "tick_scheduled"}',
            "not byte-equal to its canonical JSON (spacing, key order, number form or escapes)",
        ),
        (b'\xef\xbb\xbf{"type":"x"}', "starts with a byte order mark"),
        (b'{"type":"x"}\r', "ends in a carriage return (a CRLF line ending)"),
        (b'{"type":"\xff"}', "not strict UTF-8 (UTF-16, UTF-32, or invalid bytes)"),
        (b'{"' + LONG.encode() + b'":1}', f"unknown field {'k' * 40!r} (not part of {SCHEMA})"),
    ],
)
def test_each_reason_reads_in_full(line: bytes, reason: str) -> None:
    """The reason is the whole sentence, and a name from the file is cut to 40 characters."""
    record = json.loads(line.decode("utf-8", "replace").lstrip("\ufeff").replace("\x00", ""))
    assert noncanonical_reason(line, record) == reason
