"""Calendars from .ics files and a local HTTP server: added/changed/upcoming, zones, all-day, rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sources_support import HttpServer

from tickloop.operator.sources import CalendarSource, CollectResult, SourcesSettings, collect

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def ics(*events: str) -> bytes:
    body = "".join(events)
    text = f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n{body}END:VCALENDAR\r\n"
    return text.encode("utf-8")


def event(uid: str, start: str, end: str = "", summary: str = "Meeting", **extra: str) -> str:
    lines = [f"UID:{uid}", f"DTSTAMP:{NOW:%Y%m%dT%H%M%SZ}", f"DTSTART{start}", f"SUMMARY:{summary}"]
    if end:
        lines.append(f"DTEND{end}")
    # a value starting with ";" carries parameters: EXDATE;VALUE=DATE:20261130
    lines += [
        f"{key.replace('_', '-').upper()}{'' if value[0] in ';:' else ':'}{value}"
        for key, value in extra.items()
    ]
    return "BEGIN:VEVENT\r\n" + "".join(line + "\r\n" for line in lines) + "END:VEVENT\r\n"


def run(
    location: str, cursors: dict[str, Any] | None = None, now: datetime = NOW, **options: Any
) -> CollectResult:
    settings = SourcesSettings(calendars=[CalendarSource(location=location, **options)])
    return collect(settings, cursors or {}, now)


def by_kind(result: CollectResult, kind: str) -> list[dict[str, Any]]:
    return [o.payload for o in result.observations if o.kind == kind]


@pytest.fixture
def cal(tmp_path: Path) -> Path:
    return tmp_path / "personal.ics"


def test_upcoming_events_within_the_window_are_reported_with_details(cal: Path) -> None:
    """An event starting within upcomingHours is reported with start, end, summary and location."""
    cal.write_bytes(
        ics(
            event("soon", ":20261130T140000Z", ":20261130T150000Z", "Dentist", location="Main St 1"),
            event("later", ":20261210T140000Z", ":20261210T150000Z", "Far away"),
            event("past", ":20261129T140000Z", ":20261129T150000Z", "Yesterday"),
        )
    )
    result = run(str(cal), upcoming_hours=24)
    assert by_kind(result, "calendar.baseline") == [{"count": 3}]
    upcoming = by_kind(result, "calendar.upcoming")
    assert len(upcoming) == 1
    assert upcoming[0]["summary"] == "Dentist"
    assert upcoming[0]["location"] == "Main St 1"
    assert upcoming[0]["start"] == "2026-11-30T14:00:00+00:00"
    assert upcoming[0]["end"] == "2026-11-30T15:00:00+00:00"
    assert all(o.tainted for o in result.observations)


def test_added_and_changed_events_are_reported_once(cal: Path) -> None:
    """A new event and an edited event are each reported once; an unchanged feed reports nothing new."""
    cal.write_bytes(ics(event("a", ":20270105T100000Z", ":20270105T110000Z", "Review")))
    first = run(str(cal))
    assert run(str(cal), first.cursors).observations == ()
    cal.write_bytes(
        ics(
            event("a", ":20270105T120000Z", ":20270105T130000Z", "Review", sequence="1"),
            event("b", ":20270106T100000Z", ":20270106T110000Z", "Planning"),
        )
    )
    second = run(str(cal), first.cursors)
    assert [o.kind for o in second.observations] == ["calendar.event_changed", "calendar.event_added"]
    assert second.observations[0].payload["start"] == "2027-01-05T12:00:00+00:00"
    assert run(str(cal), second.cursors).observations == ()


def test_a_server_bumping_dtstamp_is_not_a_change(cal: Path) -> None:
    """Only what a person sees counts as a change, not a refreshed DTSTAMP."""
    cal.write_bytes(ics(event("a", ":20270105T100000Z", ":20270105T110000Z")))
    first = run(str(cal))
    cal.write_bytes(
        ics(event("a", ":20270105T100000Z", ":20270105T110000Z")).replace(b"DTSTAMP:2026", b"DTSTAMP:2027")
    )
    assert run(str(cal), first.cursors).observations == ()


def test_a_removed_event_is_reported(cal: Path) -> None:
    """An event that disappears from the feed is reported as removed."""
    cal.write_bytes(ics(event("a", ":20270105T100000Z"), event("b", ":20270106T100000Z")))
    first = run(str(cal))
    cal.write_bytes(ics(event("a", ":20270105T100000Z")))
    assert [(o.kind, o.payload) for o in run(str(cal), first.cursors).observations] == [
        ("calendar.event_removed", {"uid": "b"})
    ]


def test_the_same_upcoming_event_has_the_same_hash_on_every_run(cal: Path) -> None:
    """An upcoming event re-reported on the next run deduplicates in the store by content hash."""
    cal.write_bytes(ics(event("a", ":20261130T140000Z", ":20261130T150000Z")))
    first = run(str(cal))
    second = run(str(cal), first.cursors, now=NOW + timedelta(hours=1))
    assert [o.content_hash for o in second.observations if o.kind == "calendar.upcoming"] == [
        o.content_hash for o in first.observations if o.kind == "calendar.upcoming"
    ]


def test_timezones_are_kept_and_compared_correctly(cal: Path) -> None:
    """A TZID event is shown in its own zone and counts as upcoming by its real instant."""
    tz = (
        "BEGIN:VTIMEZONE\r\nTZID:Europe/Berlin\r\nBEGIN:STANDARD\r\nDTSTART:19701025T030000\r\n"
        "TZOFFSETFROM:+0200\r\nTZOFFSETTO:+0100\r\nRRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU\r\n"
        "END:STANDARD\r\nEND:VTIMEZONE\r\n"
    )
    # 09:30 Berlin is 08:30 UTC: already started at 09:00 UTC, but still running until 11:00 Berlin.
    cal.write_bytes(
        ics(tz, event("berlin", ";TZID=Europe/Berlin:20261130T093000", ";TZID=Europe/Berlin:20261130T110000"))
    )
    upcoming = by_kind(run(str(cal), upcoming_hours=1), "calendar.upcoming")
    assert [u["start"] for u in upcoming] == ["2026-11-30T09:30:00+01:00"]


def test_floating_times_are_read_in_the_configured_zone(cal: Path) -> None:
    """A time without a zone is read in the calendar's configured timezone."""
    cal.write_bytes(ics(event("f", ":20261130T120000", ":20261130T130000")))
    upcoming = by_kind(run(str(cal), upcoming_hours=2, timezone="America/New_York"), "calendar.upcoming")
    assert upcoming == []  # 12:00 in New York is 17:00 UTC, beyond a two-hour window from 09:00 UTC
    upcoming = by_kind(run(str(cal), upcoming_hours=9, timezone="America/New_York"), "calendar.upcoming")
    assert [u["start"] for u in upcoming] == ["2026-11-30T12:00:00-05:00"]


def test_all_day_events_are_dates_and_count_while_the_day_lasts(cal: Path) -> None:
    """An all-day event today is upcoming all day long and is reported with plain dates."""
    cal.write_bytes(
        ics(
            event("holiday", ";VALUE=DATE:20261130", ";VALUE=DATE:20261201", "Day off"),
            event("nodtend", ";VALUE=DATE:20261201"),
        )
    )
    upcoming = by_kind(run(str(cal), upcoming_hours=24), "calendar.upcoming")
    assert [(u["summary"], u["start"], u["end"], u["allDay"]) for u in upcoming] == [
        ("Day off", "2026-11-30", "2026-12-01", True),
        ("Meeting", "2026-12-01", "2026-12-02", True),
    ]


def test_recurring_events_give_their_next_occurrences(cal: Path) -> None:
    """A weekly meeting that started long ago is upcoming on its next occurrence; EXDATEs are skipped."""
    cal.write_bytes(
        ics(
            event(
                "weekly", ":20200106T100000Z", ":20200106T103000Z", "Standup", rrule="FREQ=WEEKLY;BYDAY=MO,TU"
            ),
            event(
                "daily-allday", ";VALUE=DATE:20261101", ";VALUE=DATE:20261102", "Vitamins",
                rrule="FREQ=DAILY;UNTIL=20261201", exdate=";VALUE=DATE:20261130",
            ),
        )
    )  # fmt: skip
    upcoming = by_kind(run(str(cal), upcoming_hours=48), "calendar.upcoming")
    assert [(u["summary"], u["start"]) for u in upcoming] == [
        ("Vitamins", "2026-12-01"),
        ("Standup", "2026-11-30T10:00:00+00:00"),
        ("Standup", "2026-12-01T10:00:00+00:00"),
    ]
    assert all(u["recurring"] for u in upcoming)


def test_a_hostile_secondly_rule_is_bounded(cal: Path) -> None:
    """A recurrence rule designed to stall the tick is cut off by a step budget."""
    cal.write_bytes(ics(event("flood", ":19000101T000000Z", "", "Flood", rrule="FREQ=SECONDLY")))
    result = run(str(cal))
    assert by_kind(result, "calendar.upcoming") == []
    assert result.errors == ()


def test_a_malformed_event_is_skipped_and_the_rest_reported(cal: Path) -> None:
    """One broken event is an error line; the calendar's other events are still observed."""
    cal.write_bytes(ics(event("bad", ":not-a-date"), event("good", ":20261130T100000Z", ":20261130T110000Z")))
    result = run(str(cal))
    assert [u["uid"] for u in by_kind(result, "calendar.upcoming")] == ["good"]
    assert len(result.errors) == 1
    assert "bad" in result.errors[0].message


@pytest.mark.parametrize(
    "content", [b"this is not a calendar", b"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\n", b"\xff\xfe\x00"]
)
def test_a_malformed_file_is_an_error_not_an_exception(cal: Path, content: bytes) -> None:
    """A file that is not iCalendar is reported as a failed source."""
    cal.write_bytes(content)
    result = run(str(cal))
    assert result.observations == ()
    assert len(result.errors) == 1


def test_a_missing_file_is_an_error(cal: Path) -> None:
    """A calendar path that does not exist is reported as a failed source."""
    assert "cannot read" in run(str(cal)).errors[0].message


def test_a_calendar_url_is_fetched_and_its_token_kept_out_of_the_source_id(http_server: HttpServer) -> None:
    """A calendar served over HTTP is observed, and the secret path never appears in observations."""
    http_server.routes["/private/s3cr3t-token/basic.ics"] = (200, ics(event("u", ":20261130T100000Z")))
    result = run(http_server.url("/private/s3cr3t-token/basic.ics"))
    assert result.errors == ()
    assert [o.kind for o in result.observations] == ["calendar.baseline", "calendar.upcoming"]
    assert all("s3cr3t" not in o.source for o in result.observations)
    assert all("s3cr3t" not in key for key in result.cursors)


def test_http_errors_timeouts_and_oversized_feeds_are_errors(http_server: HttpServer) -> None:
    """A 404, a server slower than the timeout, and a feed over maxBytes are each a clear error."""
    http_server.routes["/big.ics"] = (200, b"x" * 5_000)
    http_server.routes["/slow"] = (200, ics())
    assert "404" in run(http_server.url("/missing.ics")).errors[0].message
    assert "maxBytes" in run(http_server.url("/big.ics"), max_bytes=2_048).errors[0].message
    assert "timed out" in run(http_server.url("/slow"), timeout_seconds=0.3).errors[0].message


def test_an_unreachable_server_is_an_error() -> None:
    """A calendar URL nobody answers is reported as a failed source."""
    result = run("http://127.0.0.1:9/x.ics", timeout_seconds=2)
    assert "cannot fetch" in result.errors[0].message


def test_a_moved_instance_of_a_recurring_event_replaces_its_original_slot(cal: Path) -> None:
    """When one occurrence of a series is moved, only the moved time is upcoming, not both."""
    cal.write_bytes(
        ics(
            event("series", ":20261123T100000Z", ":20261123T110000Z", "Sync", rrule="FREQ=WEEKLY"),
            event(
                "series",
                ":20261130T150000Z",
                ":20261130T160000Z",
                "Sync (moved)",
                recurrence_id=":20261130T100000Z",
            ),
        )
    )
    upcoming = by_kind(run(str(cal), upcoming_hours=24), "calendar.upcoming")
    assert [(u["summary"], u["start"]) for u in upcoming] == [("Sync (moved)", "2026-11-30T15:00:00+00:00")]
