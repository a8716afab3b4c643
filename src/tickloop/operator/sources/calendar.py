"""Calendars (``.ics`` files and ``http(s)://`` or ``webcal://`` URLs): events added, changed,
removed, and upcoming within ``upcomingHours`` of ``now``.

icalendar is imported lazily (one-shot ticks budget their start-up). A feed is untrusted: it is
fetched with a timeout and a size cap, a malformed event is skipped with a problem line, and
recurrence expansion is bounded so a hostile ``FREQ=SECONDLY`` rule cannot stall the tick.

An event's identity is its UID (plus RECURRENCE-ID for a moved instance); it counts as changed when
what a person sees changes (summary, location, times, status, rule). DTSTAMP and SEQUENCE are not
used, because many servers bump them on every fetch.

Cursor: ``{"events": {"<uid>[@<recurrence-id>]": "<16 hex digits of sha256>", ...}}``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tickloop.errors import SourceError
from tickloop.operator.sources.ids import URL_SCHEMES, calendar_id
from tickloop.operator.sources.observation import Observation, canonical_json
from tickloop.operator.sources.settings import CalendarSource
from tickloop.operator.sources.text import one_line
from tickloop.sha256 import sha256

#: occurrences a recurrence rule may step through per event, and per calendar per run
RRULE_STEPS_PER_EVENT = 20_000
RRULE_STEPS_PER_RUN = 200_000
_BAD_EVENT = (ValueError, TypeError, AttributeError, KeyError, OverflowError, IndexError)


def observe(
    settings: CalendarSource, cursor: dict[str, Any] | None, now: datetime
) -> tuple[list[Observation], dict[str, Any], list[str]]:
    """Added/changed/removed events since ``cursor`` and upcoming ones; the new cursor; problems."""
    zone = _zone(settings.timezone)
    events, problems = parse(read(settings), zone)
    src = calendar_id(settings)
    fingerprints = {key: _fingerprint(event) for key, event in events.items()}
    found: list[Observation] = []
    if cursor is None:
        found.append(Observation(src, "calendar.baseline", {"count": len(events)}))
    else:
        before = cursor.get("events")
        found += _changes(src, before if isinstance(before, dict) else {}, fingerprints, events)
    upcoming, skipped = _upcoming(src, events, now, timedelta(hours=settings.upcoming_hours), zone)
    found += upcoming
    if len(found) > settings.max_changes:
        more = Observation(src, "calendar.more", {"count": len(found) - settings.max_changes})
        found = [*found[: settings.max_changes], more]
    return found, {"events": fingerprints}, problems + skipped


def _changes(
    src: str, before: dict[str, str], after: dict[str, str], events: dict[str, dict[str, Any]]
) -> list[Observation]:
    found: list[Observation] = []
    for key in sorted(before.keys() | after.keys()):
        if key not in after:
            found.append(Observation(src, "calendar.event_removed", {"uid": key}))
        elif key not in before:
            found.append(Observation(src, "calendar.event_added", _public(events[key])))
        elif before[key] != after[key]:
            found.append(Observation(src, "calendar.event_changed", _public(events[key])))
    return found


def _upcoming(
    src: str, events: dict[str, dict[str, Any]], now: datetime, window: timedelta, zone: tzinfo
) -> tuple[list[Observation], list[str]]:
    """Occurrences not yet over that start before ``now + window`` (an ongoing one counts)."""
    found: list[Observation] = []
    problems: list[str] = []
    budget = [RRULE_STEPS_PER_RUN]
    for key in sorted(events):
        event = events[key]
        if event["status"] == "CANCELLED":
            continue
        try:
            occurrences = list(_occurrences(event, now, now + window, zone, budget))
        except _BAD_EVENT as exc:  # an RRULE dateutil refuses (UNTIL without Z on a zoned start, ...)
            problems.append(f"event {event['uid']}: recurrence skipped: {one_line(str(exc), 200)}")
            continue
        for start, end in occurrences:
            payload = {**_public(event), "start": _iso(start, zone), "end": _iso(end, zone)}
            found.append(Observation(src, "calendar.upcoming", payload))
    return found, problems


def _occurrences(
    event: dict[str, Any], now: datetime, horizon: datetime, zone: tzinfo, budget: list[int]
) -> Iterator[tuple[date, date]]:
    start, end = event["_start"], event["_end"]
    duration = _instant(end, zone) - _instant(start, zone)
    for begin in _starts(event, horizon, zone, budget):
        instant = _instant(begin, zone)
        if instant > horizon:
            return
        if instant + duration > now:
            yield begin, begin + duration if isinstance(begin, datetime) else begin + _days(duration)


def _starts(event: dict[str, Any], horizon: datetime, zone: tzinfo, budget: list[int]) -> Iterator[date]:
    if not event["_rrule"]:
        yield event["_start"]
        return
    steps = min(RRULE_STEPS_PER_EVENT, budget[0])
    for begin in itertools.islice(_expand(event), steps):
        budget[0] -= 1
        if begin not in event["_exdates"]:
            yield begin
        if _instant(begin, zone) > horizon:
            return


def _expand(event: dict[str, Any]) -> Iterator[date]:
    # icalendar's own dependency, imported lazily (start-up cost); it ships no type stubs
    from dateutil.rrule import rrulestr  # type: ignore[import-untyped]  # noqa: PLC0415

    start = event["_start"]
    all_day = not isinstance(start, datetime)
    # all-day and floating rules expand naive (dateutil refuses a date UNTIL with a zoned start)
    first = datetime.combine(start, time()) if all_day else start
    rule = rrulestr(event["_rrule"], dtstart=first, forceset=False, unfold=True)
    for moment in rule:
        yield moment.date() if all_day else moment


def read(settings: CalendarSource) -> bytes:
    """The feed's bytes: a file, or an HTTP(S) GET with a timeout; larger than ``maxBytes`` refused."""
    location = settings.location
    if location.lower().startswith(URL_SCHEMES):
        return _fetch(location, settings.timeout_seconds, settings.max_bytes)
    path = Path(location).expanduser()
    try:
        with path.open("rb") as handle:
            data = handle.read(settings.max_bytes + 1)
    except OSError as exc:
        raise SourceError(f"calendar: cannot read {path}: {exc.strerror}") from None
    return _capped(data, settings.max_bytes, str(path))


def _fetch(url: str, timeout: float, limit: int) -> bytes:
    import http.client  # noqa: PLC0415  (start-up cost: only a tick with a calendar URL pays)
    import urllib.request  # noqa: PLC0415

    if url.lower().startswith("webcal://"):
        url = "https://" + url[len("webcal://") :]
    # S310: the scheme was checked by the caller (http, https or webcal only), never file: or ftp:
    headers = {"Accept": "text/calendar", "User-Agent": "tickloop"}
    request = urllib.request.Request(url, headers=headers)  # noqa: S310
    where = calendar_id(CalendarSource(location=url))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            data: bytes = response.read(limit + 1)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        raise SourceError(f"{where}: cannot fetch: {one_line(str(exc), 300)}") from None
    return _capped(data, limit, where)


def _capped(data: bytes, limit: int, where: str) -> bytes:
    if len(data) > limit:
        raise SourceError(f"calendar {where} is larger than maxBytes ({limit}); raise it if that is expected")
    return data


def parse(data: bytes, zone: tzinfo) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Events by key from iCalendar bytes, and one problem line per event that was skipped."""
    from icalendar import Calendar  # noqa: PLC0415  (start-up cost: only a tick with a calendar pays)

    if b"END:VCALENDAR" not in data.upper():
        # icalendar accepts a cut-off feed; reading it as "every event was removed" would be wrong
        raise SourceError("calendar is truncated or not iCalendar (no END:VCALENDAR)")
    try:
        calendars = Calendar.from_ical(data, multiple=True)
    except _BAD_EVENT as exc:
        raise SourceError(f"calendar is not valid iCalendar: {one_line(str(exc), 200)}") from None
    events: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for component in (c for calendar in calendars for c in calendar.walk("VEVENT")):
        try:
            event = _event(component, zone)
        except _BAD_EVENT as exc:
            uid = one_line(str(component.get("UID", "?")), 100)
            problems.append(f"event {uid} skipped: {one_line(str(exc), 200)}")
            continue
        events[event["uid"] + event["_instance"]] = event
    for event in events.values():
        master = events.get(event["uid"]) if event["_instance"] else None
        if master is not None:
            master["_exdates"].add(event["_recurrence"])  # the moved instance replaces this occurrence
    return events, problems


def _event(component: Any, zone: tzinfo) -> dict[str, Any]:
    start = _when(component, "DTSTART")
    if start is None:
        raise ValueError("no DTSTART")
    end = _when(component, "DTEND") or _end_from_duration(component, start)
    recurrence = _when(component, "RECURRENCE-ID")
    rrule = component.get("RRULE")
    return {
        "uid": one_line(str(component.get("UID") or _synthetic_uid(component, start)), 300),
        "summary": one_line(str(component.get("SUMMARY", "")), 300),
        "location": one_line(str(component.get("LOCATION", "")), 300),
        "status": one_line(str(component.get("STATUS", "")), 30).upper(),
        "allDay": not isinstance(start, datetime),
        "recurring": rrule is not None,
        "start": _iso(start, zone),
        "end": _iso(end, zone),
        "_start": start,
        "_end": end,
        "_instance": "@" + _iso(recurrence, zone) if recurrence is not None else "",
        "_recurrence": recurrence,
        "_rrule": _rrule_text(rrule, start),
        "_exdates": _exdates(component),
    }


def _when(component: Any, name: str) -> date | None:
    prop = component.get(name)
    if prop is None:
        return None
    value = getattr(prop, "dt", None)
    if not isinstance(value, date):
        raise TypeError(f"{name} is not a date or date-time")
    return value


def _end_from_duration(component: Any, start: date) -> date:
    prop = component.get("DURATION")
    duration = getattr(prop, "dt", None)
    if isinstance(duration, timedelta):
        return start + duration
    # RFC 5545 3.6.1: no end means one day for a date, an instant for a date-time.
    return start if isinstance(start, datetime) else start + timedelta(days=1)


def _rrule_text(rrule: Any, start: date) -> str:
    if rrule is None:
        return ""
    if isinstance(rrule, list):
        rrule = rrule[0]  # several RRULEs are deprecated (RFC 5545); the first one is honoured
    parts = rrule.to_ical().decode("utf-8", "replace").split(";")
    if not isinstance(start, datetime):
        # an all-day rule is expanded from a naive midnight, so a date UNTIL means the end of that day
        parts = [p + "T235959" if p.startswith("UNTIL=") and "T" not in p else p for p in parts]
    return "RRULE:" + ";".join(parts)


def _exdates(component: Any) -> set[date]:
    props = component.get("EXDATE")
    if props is None:
        return set()
    found: set[date] = set()
    for prop in props if isinstance(props, list) else [props]:
        found.update(item.dt for item in getattr(prop, "dts", []) if isinstance(item.dt, date))
    return found


def _synthetic_uid(component: Any, start: date) -> str:
    """A stable id for an event without UID (RFC violation, but seen in the wild)."""
    digest = sha256(canonical_json([str(component.get("SUMMARY", "")), start.isoformat()]))
    return "no-uid-" + digest.hexdigest()[:16]


def _fingerprint(event: dict[str, Any]) -> str:
    visible = {k: v for k, v in event.items() if not k.startswith("_")} | {"rrule": event["_rrule"]}
    # 64 bits tell an event's versions apart and keep a big calendar's cursor small
    return sha256(canonical_json(visible)).hexdigest()[:16]


def _public(event: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if not k.startswith("_")}


def _zone(name: str) -> tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise SourceError(
            f"calendar: unknown timezone {name!r}; use an IANA name like Europe/Berlin"
        ) from None


def _aware(moment: datetime, zone: tzinfo) -> datetime:
    """A floating (zone-less) time is read in the calendar's configured zone."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=zone)


def _instant(value: date, zone: tzinfo) -> datetime:
    """The moment a date or date-time begins; an all-day date begins at midnight in ``zone``."""
    if isinstance(value, datetime):
        return _aware(value, zone)
    return datetime.combine(value, time(), zone)


def _iso(value: date, zone: tzinfo) -> str:
    if isinstance(value, datetime):
        return _aware(value, zone).isoformat(timespec="seconds")
    return value.isoformat()


def _days(duration: timedelta) -> timedelta:
    return timedelta(days=max(1, round(duration.total_seconds() / 86_400)))
