"""A record's ``recordedAt`` is an aware UTC time: a time that cannot say its offset is refused when the
record is built, never written as a local time. (A mutation run found the offset half of the check
pinned by no test: only naive datetimes were tried.)"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone, tzinfo

import pytest

from tickloop.errors import LedgerError
from tickloop.protocol.ledger import RecordType, record


class NoOffset(tzinfo):
    """A timezone object that does not know its offset (``utcoffset`` is None): naive in all but name."""

    def utcoffset(self, dt: datetime | None) -> timedelta | None:  # noqa: ARG002  (tzinfo's signature)
        return None

    def dst(self, dt: datetime | None) -> timedelta | None:  # noqa: ARG002  (tzinfo's signature)
        return None

    def tzname(self, dt: datetime | None) -> str | None:  # noqa: ARG002  (tzinfo's signature)
        return None


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 7, 7, 9, 0),  # noqa: DTZ001  (the naive time refused)
        datetime(2026, 7, 7, 9, 0, tzinfo=NoOffset()),
    ],
)
def test_a_time_without_an_offset_is_refused(moment: datetime) -> None:
    with pytest.raises(LedgerError, match=r"^recordedAt must be a timezone-aware time$"):
        record(RecordType.LOOP_ARMED, recorded_at=moment, session_id="s")


@pytest.mark.usefixtures("machine_in_new_york")
def test_an_aware_time_is_written_in_utc_to_the_millisecond() -> None:
    berlin = datetime(2026, 7, 7, 11, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert record(RecordType.LOOP_ARMED, recorded_at=berlin, session_id="s")["recordedAt"] == (
        "2026-07-07T09:00:00.123Z"
    )
    assert record(RecordType.LOOP_ARMED, recorded_at=berlin.astimezone(UTC), session_id="s")[
        "recordedAt"
    ] == ("2026-07-07T09:00:00.123Z")
