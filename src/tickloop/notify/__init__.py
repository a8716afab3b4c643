"""Notification channels behind one interface: ``send(subject, body) -> DeliveryResult``.

Channels: console/file (the embedded default), Apprise URLs (the ``notify`` extra, imported lazily) and
email through the one validated SMTP path in ``tickloop.notify.smtp``. A failed delivery is a result
with a reason, never a retry loop: the caller retries on its next run.
"""

from __future__ import annotations

from tickloop.notify.apprise_channel import AppriseChannel
from tickloop.notify.base import Channel, DeliveryResult, send_all
from tickloop.notify.console import ConsoleChannel, FileChannel
from tickloop.notify.email_channel import EmailChannel
from tickloop.notify.settings import (
    AppriseChannelSettings,
    ConsoleChannelSettings,
    EmailChannelSettings,
    FileChannelSettings,
    NotifySettings,
    build_channels,
    parse_notify_settings,
)
from tickloop.notify.smtp import SecretLookup, SmtpSettings, parse_smtp_settings

__all__ = [
    "AppriseChannel",
    "AppriseChannelSettings",
    "Channel",
    "ConsoleChannel",
    "ConsoleChannelSettings",
    "DeliveryResult",
    "EmailChannel",
    "EmailChannelSettings",
    "FileChannel",
    "FileChannelSettings",
    "NotifySettings",
    "SecretLookup",
    "SmtpSettings",
    "build_channels",
    "parse_notify_settings",
    "parse_smtp_settings",
    "send_all",
]
