"""Any Apprise URL (ntfy, Telegram, Slack, JSON webhooks, ...). Apprise is the optional ``notify`` extra,
imported only when a notification is actually sent."""

from __future__ import annotations

import importlib.util
import re
import warnings
from typing import Any
from urllib.parse import urlsplit

from tickloop.errors import ConfigError, extra_hint
from tickloop.notify.base import DeliveryResult, one_line

#: ``scheme://rest`` with a plain scheme and no whitespace or control characters anywhere.
_URL = re.compile(r"[a-z][a-z0-9+.-]{0,31}://[^\x00-\x20\x7f]+")
_MISSING = f"the apprise channel needs the optional extra: {extra_hint('notify')}"


def check_apprise_url(url: str, *, where: str) -> str:
    """Return ``url`` if it looks like an Apprise notification URL; raise ConfigError naming ``where``."""
    if not _URL.fullmatch(url):
        raise ConfigError(
            f"{where}: expected an Apprise URL like 'ntfy://host/topic' or 'json://host:port/path' "
            "(lower-case scheme, no spaces or control characters)"
        )
    return url


def redact(url: str) -> str:
    """``scheme://host[:port]``: Apprise URLs carry tokens in user, path and query, so show none of them."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if _port(parts) else "")


def _port(parts: Any) -> int | None:
    try:
        return parts.port  # type: ignore[no-any-return]
    except ValueError:  # a non-numeric "port" is a token in some schemes
        return None


class AppriseChannel:
    """Delivers through one Apprise URL."""

    def __init__(self, name: str = "apprise", *, url: str, timeout_s: float = 15.0) -> None:
        if not _apprise_installed():
            raise ConfigError(f"notify channel {name!r}: {_MISSING}")
        self._name = name
        self._url = check_apprise_url(url, where=f"notify channel {name!r}")
        self._timeout_s = timeout_s

    @property
    def name(self) -> str:
        return self._name

    def describe(self) -> str:
        return f"apprise:{redact(self._url)}"

    def send(self, subject: str, body: str) -> DeliveryResult:
        with warnings.catch_warnings():
            # Apprise's PGP helper imports the stdlib's deprecated imghdr; not ours to fix, not the
            # person's to see (and an error under the test suite's warnings-as-errors).
            warnings.filterwarnings("ignore", message="'imghdr' is deprecated", category=DeprecationWarning)
            return self._send(subject, body)

    def _send(self, subject: str, body: str) -> DeliveryResult:
        apprise = _import_apprise()
        # No plugin directories (no code from the home dir) and no on-disk state.
        asset = apprise.AppriseAsset(plugin_paths=[], storage_mode="memory", service_timeout=self._timeout_s)
        client = apprise.Apprise(asset=asset)
        if not client.add(self._url):
            return DeliveryResult(
                self._name, ok=False, reason=f"Apprise does not recognise the URL {redact(self._url)}"
            )
        with apprise.LogCapture(level=apprise.logging.WARNING, fmt="%(message)s") as log:
            delivered = client.notify(title=subject, body=body or " ")
            captured = log.getvalue()
        if not delivered:
            reason = one_line(captured) or "Apprise reported a failed delivery"
            return DeliveryResult(self._name, ok=False, reason=f"{redact(self._url)}: {reason}")
        return DeliveryResult(self._name, ok=True, detail=redact(self._url))


def _apprise_installed() -> bool:
    # find_spec locates the package without importing it (and its ~100 plugins) at start-up.
    return importlib.util.find_spec("apprise") is not None


def _import_apprise() -> Any:
    try:
        import apprise  # noqa: PLC0415  (optional extra and ~100 plugins: load only when sending)
    except ImportError:
        raise ConfigError(_MISSING) from None
    return apprise
