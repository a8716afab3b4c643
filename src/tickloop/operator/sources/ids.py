"""Source ids: the ``source`` of every observation and the key of every cursor.

Kept apart from the sources so ``collect`` can name every source while importing only the
modules of the kinds that are configured (a one-shot tick pays for each import).
"""

from __future__ import annotations

from tickloop.operator.sources.settings import (
    CalendarSource,
    FilesSource,
    GitSource,
    ImapSource,
    MaildirSource,
)
from tickloop.sha256 import sha256

#: calendar locations fetched over the network (the rest are file paths)
URL_SCHEMES = ("http://", "https://", "webcal://")


def git_id(settings: GitSource) -> str:
    """``git:<name or path>``."""
    return "git:" + (settings.name or settings.path)


def files_id(settings: FilesSource) -> str:
    """``files:<name or path>``."""
    return "files:" + (settings.name or settings.path)


def calendar_id(settings: CalendarSource) -> str:
    """``calendar:<name>``, the path, or ``<scheme>://<host>/#<hash>``: a URL's path and query often
    hold a private token, which must not end up in every observation row.
    """
    if settings.name:
        return "calendar:" + settings.name
    location = settings.location
    if not location.lower().startswith(URL_SCHEMES):
        return "calendar:" + location
    scheme, _, rest = location.partition("://")
    host = rest.split("/", 1)[0].split("?", 1)[0].rsplit("@", 1)[-1]
    digest = sha256(location.encode("utf-8")).hexdigest()[:12]
    return f"calendar:{scheme.lower()}://{host}/#{digest}"


def maildir_id(settings: MaildirSource) -> str:
    """``mail:maildir:<name or path>``."""
    return "mail:maildir:" + (settings.name or settings.path)


def imap_id(settings: ImapSource) -> str:
    """``mail:imap:<name or host/folder>``."""
    return "mail:imap:" + (settings.name or f"{settings.host}/{settings.folder}")


def source_id(spec: GitSource | FilesSource | CalendarSource | MaildirSource | ImapSource) -> str:
    """The id of any configured source."""
    match spec:
        case GitSource():
            return git_id(spec)
        case FilesSource():
            return files_id(spec)
        case CalendarSource():
            return calendar_id(spec)
        case MaildirSource():
            return maildir_id(spec)
        case ImapSource():
            return imap_id(spec)
