"""The monitor's own heartbeat: healthchecks-style pings to ``[monitor] pingUrl``.

Each monitor run pings ``URL/start`` when its pass begins, then ``URL`` when it succeeded or
``URL/fail`` when it failed (the body says why, at most 10,000 bytes). A service that expects these
pings (healthchecks.io, a self-hosted Healthchecks, Uptime Kuma's push monitor with its own path)
alerts when they stop: the one way to learn that the monitor itself stopped running.

A ping is best effort: a short timeout, and a failure is logged (without the URL's path, which is
the check's secret) and never makes the monitor fail.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from urllib.parse import urlsplit

#: the most of a body a ping carries (Healthchecks keeps the first 10 KB of a ping's body)
BODY_CAP = 10_000


class PingEvent(StrEnum):
    """Where in a run a ping is sent; each value is the suffix appended to the URL."""

    START = "/start"
    SUCCESS = ""
    FAIL = "/fail"


def check_ping_url(url: str, *, where: str) -> None:
    """An empty URL (no pings) or an http(s) URL with a host; ``ValueError`` naming ``where`` if not."""
    if not url:
        return
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ValueError(f"{where}: {shown(url)!r} is not an http:// or https:// URL with a host")
    if parts.username or parts.password:
        raise ValueError(
            f"{where}: credentials in the URL are not supported; put the check's key in its path"
        )
    if parts.query or parts.fragment:
        raise ValueError(f"{where}: {shown(url)!r} must not have a query or fragment (suffixes are appended)")


def shown(url: str) -> str:
    """The URL as it may appear in a log: scheme and host only (the path holds the check's key)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}/…"


def ping(url: str, event: PingEvent, *, timeout_s: float, body: str = "", log: Callable[[str], None]) -> bool:
    """POST ``body`` to ``url`` + the event's suffix. True if the server answered 2xx; never raises."""
    if not url:
        return False
    import urllib.error  # noqa: PLC0415  (only a run that pings pays for http.client)
    import urllib.request  # noqa: PLC0415

    target = url.rstrip("/") + event.value
    data = body.encode("utf-8", "replace")[:BODY_CAP]
    request = urllib.request.Request(  # noqa: S310  (scheme checked by check_ping_url: http or https)
        target, data=data, method="POST", headers={"Content-Type": "text/plain; charset=utf-8"}
    )
    name = event.name.lower()
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        log(f"monitor: ping {name} to {shown(url)} failed: HTTP {exc.code}")
        return False
    except Exception as exc:  # noqa: BLE001  (a ping never makes the monitor fail)
        reason = getattr(exc, "reason", None) or exc
        log(f"monitor: ping {name} to {shown(url)} failed: {type(exc).__name__}: {reason}")
        return False
    if not 200 <= status < 300:  # pragma: no cover  (urllib raises HTTPError for these)
        log(f"monitor: ping {name} to {shown(url)} failed: HTTP {status}")
        return False
    return True
