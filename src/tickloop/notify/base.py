"""The channel interface: ``send(subject, body) -> DeliveryResult``. A failure is a value, not a raise."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import msgspec


class DeliveryResult(msgspec.Struct, frozen=True):  # a Struct: dataclasses would import inspect
    """What one channel did with one notification."""

    #: the channel's configured name
    channel: str
    #: delivered (as far as the channel can tell)
    ok: bool
    #: why it failed, on one line; empty when ``ok``
    reason: str = ""
    #: where it went: a file path, a Message-ID, a redacted URL
    detail: str = ""


class Channel(Protocol):
    """One way to reach the person. ``send`` never raises for a delivery failure; the caller retries
    on its next run, never in a loop."""

    @property
    def name(self) -> str:
        """The configured name, used in results and logs."""
        ...

    def describe(self) -> str:
        """Where this channel delivers, on one line and without secrets (for dry-run lines and logs)."""
        ...

    def send(self, subject: str, body: str) -> DeliveryResult:
        """Deliver one notification."""
        ...


def send_all(channels: Sequence[Channel], subject: str, body: str) -> list[DeliveryResult]:
    """Send through every channel; one failing channel does not stop the others."""
    return [channel.send(subject, body) for channel in channels]


def one_line(text: str, limit: int = 300) -> str:
    """Collapse ``text`` to a single line of at most ``limit`` characters (reasons, log fields)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
