"""``ms``: a ledger time in milliseconds since the epoch, read as UTC whatever the machine's timezone.

verify's time-order and dueAt checks subtract two of these. A mutation run found that reading the
time as a local one, or dropping the tens digit of its hour or minute, passed the suite: every
test ledger starts at 09:00 on a machine in UTC. Each row is a time and its value.
"""

from __future__ import annotations

import pytest

from tickloop.protocol.transitions import ms


@pytest.mark.usefixtures("machine_in_new_york")
@pytest.mark.parametrize(
    ("at", "value"),
    [
        ("1970-01-01T00:00:00.000Z", 0),
        ("2026-11-30T19:47:58.123Z", 1_796_068_078_123),
        ("2026-03-29T01:30:00.000Z", 1_774_747_800_000),  # Europe's clocks go forward at 01:00 UTC
        ("2026-10-25T00:59:59.999Z", 1_792_889_999_999),
    ],
)
def test_a_time_is_read_as_utc_to_the_millisecond(at: str, value: int) -> None:
    assert ms(at) == value
