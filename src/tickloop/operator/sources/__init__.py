"""Observation sources for the operator's observe tick: git, watched files, calendars, mail.

``collect(settings, cursors, now)`` runs every configured source once and returns plain values:
tainted ``Observation`` deltas since each source's cursor, the new cursors, and the failures. It
never touches the store; the observe tick persists what it returns.
"""

from __future__ import annotations

from tickloop.operator.sources.collect import CollectResult, collect
from tickloop.operator.sources.observation import Observation, SourceFailure, canonical_json, content_hash
from tickloop.operator.sources.settings import (
    CalendarSource,
    FilesSource,
    GitSource,
    ImapSource,
    MaildirSource,
    SourcesSettings,
)

__all__ = [
    "CalendarSource",
    "CollectResult",
    "FilesSource",
    "GitSource",
    "ImapSource",
    "MaildirSource",
    "Observation",
    "SourceFailure",
    "SourcesSettings",
    "canonical_json",
    "collect",
    "content_hash",
]
