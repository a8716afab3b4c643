"""Notification channels behind one interface: ``send(subject, body) -> DeliveryResult``.

Channels: console/file (the embedded default), Apprise URLs (the ``notify`` extra, imported lazily) and
email through the one validated SMTP path in ``tickloop.notify.smtp``. A failed delivery is a result
with a reason, never a retry loop: the caller retries on its next run.

The names below are imported when first used (PEP 562): a tick that imports ``tickloop.notify.base``
pays for this package's ``__init__`` and nothing else, not for smtplib, ssl and email.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
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

#: Public name -> the module that defines it.
_WHERE = {
    "AppriseChannel": "apprise_channel",
    "Channel": "base",
    "DeliveryResult": "base",
    "send_all": "base",
    "ConsoleChannel": "console",
    "FileChannel": "console",
    "EmailChannel": "email_channel",
    "AppriseChannelSettings": "settings",
    "ConsoleChannelSettings": "settings",
    "EmailChannelSettings": "settings",
    "FileChannelSettings": "settings",
    "NotifySettings": "settings",
    "build_channels": "settings",
    "parse_notify_settings": "settings",
    "SecretLookup": "smtp",
    "SmtpSettings": "smtp",
    "parse_smtp_settings": "smtp",
}


def __getattr__(name: str) -> _typing.Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'tickloop.notify' has no attribute {name!r}")
    value = getattr(_importlib.import_module(f"tickloop.notify.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


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
