"""What the observe tick watches: ``[[sources.git]]``, ``[[sources.files]]``, ``[[sources.calendars]]``,
``[[sources.maildirs]]`` and ``[[sources.imap]]`` tables, camelCase keys as in config.py.

Secrets are never settings: an IMAP source names the environment (or env-file) variable that holds
its password in ``passwordEnv``.
"""

# No `from __future__ import annotations`: see config.py (msgspec would eval() every annotation).

from typing import Annotated, Literal

import msgspec

_STRUCT = {"frozen": True, "forbid_unknown_fields": True, "rename": "camel", "kw_only": True}

Seconds = Annotated[float, msgspec.Meta(gt=0, le=300)]


class GitSource(msgspec.Struct, **_STRUCT):
    """A git working tree: status, new commits, branch changes."""

    #: the repository's working tree (``~`` is expanded)
    path: str
    #: a label used in the source id instead of the path
    name: str = ""
    #: newest commits reported per run; older new ones are counted, not listed
    max_commits: Annotated[int, msgspec.Meta(ge=1, le=500)] = 50
    #: each git command is killed after this long
    timeout_seconds: Seconds = 10.0


class FilesSource(msgspec.Struct, **_STRUCT):
    """A directory tree: files created, changed or deleted (by size and modification time)."""

    #: the directory (``~`` is expanded); symlinks are never followed
    path: str
    #: a label used in the source id instead of the path
    name: str = ""
    #: a tree with more files than this is refused (with an error) rather than half-watched
    max_files: Annotated[int, msgspec.Meta(ge=1, le=200_000)] = 10_000
    #: also watch names starting with ``.`` (``.git`` and friends are skipped by default)
    include_hidden: bool = False
    #: per-run cap on reported changes; the rest are counted in one ``file.more`` observation
    max_changes: Annotated[int, msgspec.Meta(ge=1, le=5_000)] = 200


class CalendarSource(msgspec.Struct, **_STRUCT):
    """An iCalendar feed: a ``.ics`` file, or an ``http(s)://`` / ``webcal://`` URL."""

    #: a path or URL; a URL's path and query never appear in the source id (they often hold a token)
    location: str
    #: a label used in the source id instead of the location
    name: str = ""
    #: events starting within this many hours of now are reported as upcoming
    upcoming_hours: Annotated[float, msgspec.Meta(ge=0, le=24 * 60)] = 36.0
    #: the zone for all-day and floating (zone-less) times, e.g. ``Europe/Berlin``
    timezone: str = "UTC"
    timeout_seconds: Seconds = 10.0
    #: a feed larger than this is refused
    max_bytes: Annotated[int, msgspec.Meta(ge=1_024, le=50_000_000)] = 5_000_000
    #: per-run cap on reported additions/changes
    max_changes: Annotated[int, msgspec.Meta(ge=1, le=5_000)] = 100


class MaildirSource(msgspec.Struct, **_STRUCT):
    """A local Maildir folder (``cur``/``new``/``tmp``)."""

    path: str
    #: a label used in the source id instead of the path
    name: str = ""
    #: new messages reported per run, oldest first; the rest wait for the next run
    max_messages: Annotated[int, msgspec.Meta(ge=1, le=1_000)] = 50
    #: bytes of each message read (a huge attachment is never read whole)
    max_message_bytes: Annotated[int, msgspec.Meta(ge=1_024, le=50_000_000)] = 1_000_000


class ImapSource(msgspec.Struct, **_STRUCT):
    """An IMAP folder over TLS, opened read-only; messages are never marked as read."""

    host: str
    username: str
    #: name of the environment / env-file variable holding the password (never the password)
    password_env: str
    #: a label used in the source id instead of host/folder
    name: str = ""
    #: 993 for ``tls``, 143 for ``starttls`` when 0
    port: Annotated[int, msgspec.Meta(ge=0, le=65_535)] = 0
    security: Literal["tls", "starttls"] = "tls"
    folder: str = "INBOX"
    #: a CA bundle to trust instead of the system's (a private or self-signed server)
    ca_file: str = ""
    timeout_seconds: Seconds = 20.0
    max_messages: Annotated[int, msgspec.Meta(ge=1, le=1_000)] = 50
    max_message_bytes: Annotated[int, msgspec.Meta(ge=1_024, le=50_000_000)] = 1_000_000


class SourcesSettings(msgspec.Struct, **_STRUCT):
    """Every observation source; all lists are empty by default."""

    git: list[GitSource] = msgspec.field(default_factory=list)
    files: list[FilesSource] = msgspec.field(default_factory=list)
    calendars: list[CalendarSource] = msgspec.field(default_factory=list)
    maildirs: list[MaildirSource] = msgspec.field(default_factory=list)
    imap: list[ImapSource] = msgspec.field(default_factory=list)
    #: characters of a mail body kept in an observation
    excerpt_chars: Annotated[int, msgspec.Meta(ge=100, le=8_000)] = 2_000
