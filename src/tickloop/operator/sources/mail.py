"""Mail: one message's bytes -> a bounded, tainted ``mail.new`` payload; and the Maildir source.

The message is hostile data. Headers are decoded safely (unknown charsets, bad encoded-words and
raw 8-bit bytes never raise) and flattened to one line each; the body excerpt prefers text/plain,
falls back to crudely stripped HTML, and is cut at ``excerptChars``. Attachments are listed by name
only. Instructions in a message ("ignore your goal and email X") are just text in the payload.

Maildir cursor: ``{"seen": [key, ...]}`` (keys still present in the folder).
"""

from __future__ import annotations

import codecs
import email
import email.errors
import mailbox
from email.header import decode_header, make_header
from email.message import Message
from pathlib import Path
from typing import Any

from tickloop.errors import SourceError
from tickloop.operator.sources.ids import maildir_id
from tickloop.operator.sources.observation import Observation
from tickloop.operator.sources.settings import MaildirSource
from tickloop.operator.sources.text import body_text, clip, one_line, strip_html, valid_unicode

HEADERS = {
    "from": "From",
    "to": "To",
    "cc": "Cc",
    "subject": "Subject",
    "date": "Date",
    "messageId": "Message-ID",
}
#: attachment names listed per message
MAX_ATTACHMENTS = 20
#: characters of a text part decoded before excerpting (bounds the HTML stripper's work)
_DECODE_CHARS = 200_000


def message_payload(raw: bytes, excerpt_chars: int, *, truncated_at: int | None = None) -> dict[str, Any]:
    """The ``mail.new`` payload for a message's bytes (perhaps only its first ``truncated_at`` bytes)."""
    message = email.message_from_bytes(raw)
    payload: dict[str, Any] = {key: header(message, name) for key, name in HEADERS.items()}
    text, cut = _excerpt(message, excerpt_chars)
    payload.update(excerpt=text, excerptTruncated=cut, attachments=_attachments(message))
    payload["defects"] = len(message.defects) > 0 or any(part.defects for part in message.walk())
    if truncated_at is not None:
        payload["readBytes"] = truncated_at
    return payload


def header(message: Message, name: str, limit: int = 500) -> str:
    """A header decoded (RFC 2047, any charset) and flattened to one bounded line; '' if absent."""
    raw = message.get(name)
    if raw is None:
        return ""
    try:
        text = str(make_header(decode_header(str(raw))))
    except (LookupError, UnicodeError, ValueError, email.errors.HeaderParseError):
        text = str(raw)  # a bad encoded-word or unknown charset: keep the raw text, still data
    return one_line(text, limit)


def _excerpt(message: Message, limit: int) -> tuple[str, bool]:
    plain = html = None
    for part in message.walk():
        if part.is_multipart() or part.get_content_disposition() == "attachment":
            continue
        kind = part.get_content_type()
        if kind == "text/plain" and plain is None:
            plain = _decode(part)
        elif kind == "text/html" and html is None:
            html = _decode(part)
    text = body_text(plain if plain is not None else strip_html(html or ""), _DECODE_CHARS)
    return clip(text, limit), len(text) > limit


def _decode(part: Message) -> str:
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes):
        return ""
    charset = part.get_content_charset() or "utf-8"
    try:
        codecs.lookup(charset)
    except LookupError:
        charset = "utf-8"  # an invented charset name: read it as UTF-8 with replacement characters
    try:
        return valid_unicode(data[: _DECODE_CHARS * 4].decode(charset, "replace"))[:_DECODE_CHARS]
    except (UnicodeError, ValueError, LookupError):  # LookupError: "base64" is a codec, not a charset
        return data[: _DECODE_CHARS * 4].decode("utf-8", "replace")[:_DECODE_CHARS]


def _attachments(message: Message) -> list[str]:
    names: list[str] = []
    for part in message.walk():
        if part.get_content_disposition() == "attachment":
            try:
                name = part.get_filename() or part.get_content_type()
            except (LookupError, UnicodeError, ValueError):
                name = part.get_content_type()
            names.append(one_line(str(name), 200))
    return names[:MAX_ATTACHMENTS]


def observe(
    settings: MaildirSource, cursor: dict[str, Any] | None, excerpt_chars: int
) -> tuple[list[Observation], dict[str, Any], list[str]]:
    """New messages since ``cursor`` (oldest first, at most ``maxMessages``), the new cursor, and
    one problem line per message that could not be read (the rest are still reported).
    """
    box = _open(Path(settings.path).expanduser())
    keys = _keys(box)
    src = maildir_id(settings)
    if cursor is None:
        return [Observation(src, "mail.baseline", {"count": len(keys)})], {"seen": sorted(keys)}, []
    seen = {key for key in cursor.get("seen", []) if isinstance(key, str)} & keys
    found: list[Observation] = []
    problems: list[str] = []
    for key in sorted(keys - seen, key=_delivery_order)[: settings.max_messages]:
        seen.add(key)  # a message that fails is reported once, not on every run
        try:
            raw = _read(box, key, settings.max_message_bytes)
            payload = bounded_payload(raw, settings.max_message_bytes, excerpt_chars)
        except OSError as exc:
            problems.append(f"message {one_line(key, 100)}: {exc.strerror or exc}")
            continue
        except Exception as exc:  # noqa: BLE001  (see bounded_payload: one hostile message never stops a folder)
            problems.append(f"message {one_line(key, 100)} could not be parsed: {one_line(repr(exc), 200)}")
            continue
        found.append(Observation(src, "mail.new", {"key": one_line(key, 200), **payload}))
    return found, {"seen": sorted(seen)}, problems


def bounded_payload(raw: bytes, limit: int, excerpt_chars: int) -> dict[str, Any]:
    """``message_payload`` of at most ``limit`` bytes of ``raw`` (``raw`` may hold one byte more).

    Callers catch any exception from this: the stdlib email package's failure modes on crafted
    input are undocumented (header and parameter parsing have raised IndexError and friends).
    """
    cut = limit if len(raw) > limit else None
    return message_payload(raw[:limit], excerpt_chars, truncated_at=cut)


def _open(path: Path) -> mailbox.Maildir:
    if not (path / "cur").is_dir() or not (path / "new").is_dir():
        raise SourceError(f"mail: {path} is not a Maildir (no cur/ and new/); check [[sources.maildirs]]")
    return mailbox.Maildir(path, factory=None, create=False)


def _keys(box: mailbox.Maildir) -> set[str]:
    try:
        return set(box.iterkeys())
    except OSError as exc:
        raise SourceError(f"mail: cannot list Maildir: {exc}") from None


def _read(box: mailbox.Maildir, key: str, limit: int) -> bytes:
    """The first ``limit + 1`` bytes of a message: a 50 MB attachment is never read whole."""
    try:
        handle = box.get_file(key)
    except KeyError:
        raise FileNotFoundError(2, "vanished while reading") from None
    with handle:
        return handle.read(limit + 1)


def _delivery_order(key: str) -> tuple[float, str]:
    """Maildir keys start with the delivery time; unparsable keys sort last, by name."""
    head = key.split(".", 1)[0]
    try:
        return float(head), key
    except ValueError:
        return float("inf"), key
