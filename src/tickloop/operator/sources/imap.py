"""IMAP over TLS (implicit TLS, or STARTTLS), read-only: new messages since the cursor's last UID.

The folder is opened with EXAMINE and bodies are fetched with ``BODY.PEEK[]<0.N>``, so observing
never marks mail as read and never downloads more than ``maxMessageBytes`` of a message. The
password is read through ``secret(passwordEnv)`` (environment or env file), never from settings or
argv, and is never put in a message.

Cursor: ``{"uidValidity": int, "lastUid": int}``; a changed UIDVALIDITY starts a new baseline.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tickloop.errors import SourceError
from tickloop.operator.sources.ids import imap_id
from tickloop.operator.sources.mail import bounded_payload
from tickloop.operator.sources.observation import Observation
from tickloop.operator.sources.settings import ImapSource
from tickloop.operator.sources.text import one_line

if TYPE_CHECKING:
    import imaplib

Secret = Callable[[str], "str | None"]

_STATUS = re.compile(rb"(UIDVALIDITY|UIDNEXT|MESSAGES) (\d+)")
_SIZE = re.compile(rb"RFC822\.SIZE (\d+)")


def observe(
    settings: ImapSource, cursor: dict[str, Any] | None, excerpt_chars: int, secret: Secret
) -> tuple[list[Observation], dict[str, Any], list[str]]:
    """New messages since ``cursor`` (oldest first, at most ``maxMessages``), the new cursor, problems."""
    import imaplib  # noqa: PLC0415  (start-up cost: only a tick with an IMAP source pays for it)
    import ssl  # noqa: PLC0415

    password = secret(settings.password_env)
    if not password:
        raise SourceError(
            f"imap {settings.host}: the password variable {settings.password_env} is not set in the "
            "environment or the env file"
        )
    try:
        with _connect(settings) as client:
            _check(client.login(settings.username, password), "LOGIN")
            return _observe_folder(client, settings, cursor, excerpt_chars)
    except (imaplib.IMAP4.error, ssl.SSLError, OSError, EOFError) as exc:
        raise SourceError(f"imap {settings.host}:{_port(settings)}: {one_line(str(exc), 300)}") from None


def _connect(settings: ImapSource) -> imaplib.IMAP4:
    import imaplib  # noqa: PLC0415
    import ssl  # noqa: PLC0415

    context = ssl.create_default_context(cafile=settings.ca_file or None)
    port, timeout = _port(settings), settings.timeout_seconds
    if settings.security == "tls":
        return imaplib.IMAP4_SSL(settings.host, port, ssl_context=context, timeout=timeout)
    client = imaplib.IMAP4(settings.host, port, timeout=timeout)
    try:
        _check(client.starttls(ssl_context=context), "STARTTLS")
    except BaseException:
        client.shutdown()
        raise
    return client


def _port(settings: ImapSource) -> int:
    return settings.port or (993 if settings.security == "tls" else 143)


def _observe_folder(
    client: imaplib.IMAP4, settings: ImapSource, cursor: dict[str, Any] | None, excerpt_chars: int
) -> tuple[list[Observation], dict[str, Any], list[str]]:
    folder = _quote(settings.folder)
    status = _status(client, folder)
    src = imap_id(settings)
    if cursor is None or cursor.get("uidValidity") != status["UIDVALIDITY"]:
        kind = "mail.baseline" if cursor is None else "mail.uidvalidity_changed"
        fresh = {"uidValidity": status["UIDVALIDITY"], "lastUid": status["UIDNEXT"] - 1}
        return [Observation(src, kind, {"count": status["MESSAGES"]})], fresh, []
    _check(client.select(folder, readonly=True), "EXAMINE")
    last = cursor.get("lastUid", 0) if isinstance(cursor.get("lastUid"), int) else 0
    found: list[Observation] = []
    problems: list[str] = []
    for uid in _new_uids(client, last)[: settings.max_messages]:
        last = uid  # a message that fails is reported once, not on every run
        raw, size = _fetch(client, uid, settings.max_message_bytes)
        try:
            payload = bounded_payload(raw, settings.max_message_bytes, excerpt_chars)
        except Exception as exc:  # noqa: BLE001  (hostile mail never stops a folder; see bounded_payload)
            problems.append(f"message UID {uid} could not be parsed: {one_line(repr(exc), 200)}")
            continue
        found.append(Observation(src, "mail.new", {"uid": uid, "size": size, **payload}))
    return found, {"uidValidity": status["UIDVALIDITY"], "lastUid": last}, problems


def _status(client: imaplib.IMAP4, folder: str) -> dict[str, int]:
    data = _check(client.status(folder, "(UIDVALIDITY UIDNEXT MESSAGES)"), "STATUS")
    line = b" ".join(item for item in data if isinstance(item, bytes))
    values = {name.decode(): int(number) for name, number in _STATUS.findall(line)}
    if len(values) != 3:
        raise SourceError(f"imap: unexpected STATUS answer {one_line(repr(line), 200)}")
    return values


def _new_uids(client: imaplib.IMAP4, last: int) -> list[int]:
    data = _check(client.uid("SEARCH", "UID", f"{last + 1}:*"), "UID SEARCH")
    uids = {int(token) for item in data if isinstance(item, bytes) for token in item.split()}
    # "n:*" always includes the highest UID, even below n (RFC 3501 6.4.8): filter it out.
    return sorted(uid for uid in uids if uid > last)


def _fetch(client: imaplib.IMAP4, uid: int, limit: int) -> tuple[bytes, int | None]:
    """The first ``limit + 1`` bytes of a message and its full size."""
    data = _check(client.uid("FETCH", str(uid), f"(RFC822.SIZE BODY.PEEK[]<0.{limit + 1}>)"), "UID FETCH")
    body, meta = b"", b""
    for item in data:
        if isinstance(item, tuple):
            meta, body = meta + item[0], body or item[1]
        elif isinstance(item, bytes):
            meta += item
    size = _SIZE.search(meta)
    return body, int(size.group(1)) if size else None


def _check(answer: tuple[str, list[Any]], command: str) -> list[Any]:
    status, data = answer
    if status != "OK":
        detail = b" ".join(d for d in data if isinstance(d, bytes)).decode("utf-8", "replace")
        raise SourceError(f"imap {command} refused: {one_line(detail, 300)}")
    return data


def _quote(folder: str) -> str:
    """An IMAP quoted string (imaplib sends arguments verbatim)."""
    return '"' + folder.replace("\\", "\\\\").replace('"', '\\"') + '"'
