"""``without_mac``: the bytes a record's ``mac`` was computed over (the keyed audit check).

A mutation run found it pinned by no in-process test: where the mac member sits (first, middle, last),
a second mac, and a long record were each free to change.
"""

from __future__ import annotations

import pytest

from tickloop.protocol.ledger import without_mac

MAC = '"mac":"hmac-sha256:' + "ab" * 32 + '"'


@pytest.mark.parametrize(
    ("line", "body"),
    [
        ("{" + MAC + ',"seq":1,"type":"tick_scheduled"}', '{"seq":1,"type":"tick_scheduled"}'),
        ('{"seq":1,' + MAC + ',"type":"tick_scheduled"}', '{"seq":1,"type":"tick_scheduled"}'),
        ('{"seq":1,"type":"tick_scheduled",' + MAC + "}", '{"seq":1,"type":"tick_scheduled"}'),
        # a long record (the mac past byte 255), as real records with a policy and a session are
        ('{"policy":"' + "x" * 300 + '",' + MAC + "}", '{"policy":"' + "x" * 300 + '"}'),
    ],
)
def test_the_mac_member_is_cut_out_wherever_it_sits(line: str, body: str) -> None:
    """The body is the record with exactly its mac member and one adjoining comma removed."""
    assert without_mac(line.encode()) == body.encode()


@pytest.mark.parametrize(
    "line",
    [
        '{"seq":1,"type":"tick_scheduled"}',  # no mac at all
        '{"seq":1,' + MAC + "," + MAC + "}",  # two: which one was signed is unknowable
        "{" + MAC + "}",  # a mac and nothing it could sign
    ],
)
def test_a_record_without_exactly_one_signable_mac_has_no_body(line: str) -> None:
    """No mac, two macs, or a mac alone: nothing to check the mac against, so the check fails."""
    assert without_mac(line.encode()) is None
