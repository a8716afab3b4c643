"""Channel settings, per profile, validated when loaded. The console channel is the embedded default.

TOML (``[notify]``)::

    [[notify.channels]]
    kind = "file"                      # console | file | apprise | email
    name = "log"
    path = "~/.local/state/tickloop/notifications.jsonl"

    [[notify.channels]]
    kind = "apprise"
    name = "phone"
    urlEnv = "TICKLOOP_NTFY_URL"       # or url = "ntfy://ntfy.sh/my-topic" (URLs often hold tokens)

    [[notify.channels]]
    kind = "email"
    name = "mail"
    to = "me@example.com"
    sender = "operator@example.com"    # must be in [smtp] senders; empty: the first one
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, TextIO

import msgspec

from tickloop.clock import Clock
from tickloop.errors import ConfigError, RecipientError
from tickloop.notify.address import validate_recipient
from tickloop.notify.apprise_channel import AppriseChannel, check_apprise_url
from tickloop.notify.base import Channel
from tickloop.notify.console import ConsoleChannel, FileChannel
from tickloop.notify.email_channel import EmailChannel
from tickloop.notify.smtp import SecretLookup, SmtpSettings

_OPTS = {
    "frozen": True,
    "forbid_unknown_fields": True,
    "rename": "camel",
    "kw_only": True,
    "tag_field": "kind",
}
#: a channel name: short, printable, safe in a log line.
_Name = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_.-]{1,40}$")]


class ConsoleChannelSettings(msgspec.Struct, tag="console", **_OPTS):
    """Standard output."""

    name: _Name = "console"


class FileChannelSettings(msgspec.Struct, tag="file", **_OPTS):
    """An append-only JSON-lines file, mode 0600."""

    #: the file; ``~`` is expanded
    path: Annotated[str, msgspec.Meta(min_length=1)]
    name: _Name = "file"


class AppriseChannelSettings(msgspec.Struct, tag="apprise", **_OPTS):
    """One Apprise URL, given inline or (better, as it usually holds a token) by variable name."""

    name: _Name = "apprise"
    #: the URL itself
    url: str = ""
    #: the environment / env-file variable that holds the URL
    url_env: str = ""

    def __post_init__(self) -> None:
        where = f"notify channel {self.name!r}"
        if bool(self.url) == bool(self.url_env):
            raise ConfigError(f"{where}: set exactly one of url and urlEnv")
        if self.url:
            check_apprise_url(self.url, where=f"{where}: url")
        elif not self.url_env.isidentifier():
            raise ConfigError(f"{where}: urlEnv {self.url_env!r} is not an environment variable name")


class EmailChannelSettings(msgspec.Struct, tag="email", **_OPTS):
    """Mail to the person through ``[smtp]``."""

    #: exactly one address
    to: str
    name: _Name = "email"
    #: one of ``[smtp] senders``; empty: the first
    sender: str = ""

    def __post_init__(self) -> None:
        try:
            validate_recipient(self.to, where=f"notify channel {self.name!r}: to")
            if self.sender:
                validate_recipient(self.sender, where=f"notify channel {self.name!r}: sender")
        except RecipientError as exc:
            raise ConfigError(exc.message) from None


ChannelSettings = ConsoleChannelSettings | FileChannelSettings | AppriseChannelSettings | EmailChannelSettings


class NotifySettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """Where notifications go."""

    #: the channels, in order; empty is refused (the person must be reachable)
    channels: list[ChannelSettings] = msgspec.field(default_factory=lambda: [ConsoleChannelSettings()])

    def __post_init__(self) -> None:
        if not self.channels:
            raise ConfigError(
                "notify.channels is empty: configure at least one channel (console is the default)"
            )
        names = [channel.name for channel in self.channels]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ConfigError(
                f"notify.channels: duplicate channel names {duplicates}; give each a unique name"
            )


def parse_notify_settings(data: object) -> NotifySettings:
    """Validate a ``[notify]`` table; errors name the field (``$.channels[1].to``)."""
    try:
        return msgspec.convert(data, NotifySettings, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid [notify] settings: {exc}") from None


def build_channels(
    settings: NotifySettings,
    *,
    smtp: SmtpSettings,
    secret: SecretLookup,
    clock: Clock | None = None,
    stream: TextIO | None = None,
) -> list[Channel]:
    """Turn settings into channels. Secrets (``urlEnv``) are read here; a missing one is a ConfigError."""
    return [_build(item, smtp=smtp, secret=secret, clock=clock, stream=stream) for item in settings.channels]


def _build(
    item: ChannelSettings,
    *,
    smtp: SmtpSettings,
    secret: SecretLookup,
    clock: Clock | None,
    stream: TextIO | None,
) -> Channel:
    if isinstance(item, ConsoleChannelSettings):
        return ConsoleChannel(item.name, stream=stream, clock=clock)
    if isinstance(item, FileChannelSettings):
        return FileChannel(item.name, path=Path(item.path), clock=clock)
    if isinstance(item, AppriseChannelSettings):
        url = item.url or secret(item.url_env)
        if not url:
            raise ConfigError(
                f"notify channel {item.name!r}: {item.url_env} is not in the environment or env file"
            )
        return AppriseChannel(item.name, url=url)
    return EmailChannel(item.name, smtp=smtp, to=item.to, sender=item.sender or None, secret=secret)
