"""Run every configured source once: deltas since each source's cursor, with failures isolated.

A source that fails (``SourceError``: a missing path, an unreachable server, a malformed feed, git
failing) is recorded in ``errors`` and keeps its old cursor, so nothing it would have reported is
lost; the other sources still run. Nothing else is caught: anything else is a programming error.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from typing import Any

import msgspec

from tickloop.errors import SourceError
from tickloop.operator.sources.ids import source_id
from tickloop.operator.sources.observation import Observation, SourceFailure
from tickloop.operator.sources.settings import (
    CalendarSource,
    FilesSource,
    GitSource,
    ImapSource,
    MaildirSource,
    SourcesSettings,
)
from tickloop.operator.sources.text import one_line

Cursor = dict[str, Any]
Outcome = tuple[list[Observation], Cursor, list[str]]
#: reads a secret (an IMAP password) by variable name: the environment, else the env file
Secret = Callable[[str], "str | None"]


class CollectResult(msgspec.Struct, frozen=True):
    """What one observe run found."""

    #: new observations, in source order
    observations: tuple[Observation, ...]
    #: source id -> cursor, for every configured source (JSON-serialisable); pass it to the next run
    cursors: dict[str, Cursor]
    #: sources (or single items of a source) that could not be read this run
    errors: tuple[SourceFailure, ...]


def collect(
    settings: SourcesSettings,
    cursors: dict[str, Any],
    now: datetime,
    *,
    secret: Secret = os.environ.get,
) -> CollectResult:
    """Observe every source in ``settings`` once, from ``cursors`` (the previous run's, as stored).

    ``secret(name)`` reads a password variable: the environment, else the configured env file.
    """
    if now.tzinfo is None:
        raise ValueError("collect needs a timezone-aware now")
    found: list[Observation] = []
    new_cursors: dict[str, Cursor] = {}
    errors: list[SourceFailure] = []
    for spec in _specs(settings):
        source = source_id(spec)
        if source in new_cursors or any(e.source == source for e in errors):
            errors.append(SourceFailure(source, "configured twice; give one of them a distinct name"))
            continue
        previous = cursors.get(source)
        if previous is not None and not isinstance(previous, dict):
            errors.append(SourceFailure(source, "its stored cursor was unreadable; starting a new baseline"))
            previous = None
        try:
            observations, cursor, problems = _run(spec, previous, now, settings.excerpt_chars, secret)
        except SourceError as exc:
            errors.append(SourceFailure(source, one_line(exc.message, 1_000)))
            if previous is not None:
                new_cursors[source] = previous
            continue
        found += observations
        new_cursors[source] = cursor
        errors += [SourceFailure(source, one_line(problem, 1_000)) for problem in problems]
    return CollectResult(tuple(found), new_cursors, tuple(errors))


Spec = GitSource | FilesSource | CalendarSource | MaildirSource | ImapSource


def _specs(settings: SourcesSettings) -> list[Spec]:
    return [*settings.git, *settings.files, *settings.calendars, *settings.maildirs, *settings.imap]


def _run(spec: Spec, cursor: Cursor | None, now: datetime, chars: int, secret: Secret) -> Outcome:
    """One source's run: (observations, new cursor, problems that did not stop the source)."""
    # Each kind's module is imported only when such a source is configured (start-up budget).
    match spec:
        case GitSource():
            from tickloop.operator.sources import git  # noqa: PLC0415

            return git.observe(spec, cursor)
        case FilesSource():
            from tickloop.operator.sources import files  # noqa: PLC0415

            return files.observe(spec, cursor)
        case CalendarSource():
            from tickloop.operator.sources import calendar  # noqa: PLC0415

            return calendar.observe(spec, cursor, now)
        case MaildirSource():
            from tickloop.operator.sources import mail  # noqa: PLC0415

            return mail.observe(spec, cursor, chars)
        case ImapSource():
            from tickloop.operator.sources import imap  # noqa: PLC0415

            return imap.observe(spec, cursor, chars, secret)
