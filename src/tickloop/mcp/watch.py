"""Resource subscriptions and ``listChanged``: an agent learns that an intent was decided without polling.

A client sends ``resources/subscribe`` for a URI (``tickloop://intents``, ``tickloop://intents/7``, ...).
The person decides in another process (the dashboard, the CLI, a channel reply), so nothing in
this one is told; instead the :class:`Watcher` reads each subscribed URI every ``interval``
seconds and, when its text changed, sends ``notifications/resources/updated`` to each session
subscribed to it. The client then reads the resource again.

The resource list holds one ``tickloop://intents/ID`` per intent waiting for the person, so it
changes when an intent is staged or decided: each session that has listed the resources gets
``notifications/resources/list_changed`` when the listing differs from the one last seen.

A session is a client's connection: it is forgotten when it closes, or when a send to it fails.
Reads run in a worker thread: the store is synchronous.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

from tickloop.errors import TickloopError
from tickloop.sha256 import sha256

DEFAULT_INTERVAL_S = 1.0
#: subscriptions one server keeps (sessions x URIs), so a client cannot make it read without end
MAX_SUBSCRIPTIONS = 1_000


class Watcher:
    """Subscribed URIs, their sessions and the digest of each URI's text when last read."""

    def __init__(
        self, read: Callable[[str], str], listing: Callable[[], str], *, interval: float = DEFAULT_INTERVAL_S
    ) -> None:
        self.read = read
        self.listing = listing
        self.interval = interval
        self.sessions: dict[str, list[Any]] = {}
        self.digests: dict[str, str] = {}
        #: the sessions that have listed the resources, and the digest of the listing last seen
        self.listeners: list[Any] = []
        self.list_digest: str | None = None

    async def subscribe(self, uri: str, session: Any) -> None:
        """Watch ``uri`` for ``session``; its text now is the baseline (a bad URI is refused here)."""
        if sum(len(s) for s in self.sessions.values()) >= MAX_SUBSCRIPTIONS:
            raise TickloopError(f"this server keeps at most {MAX_SUBSCRIPTIONS} subscriptions")
        digest = await self._digest(uri, strict=True)
        held = self.sessions.setdefault(uri, [])
        if session not in held:
            held.append(session)
        self.digests.setdefault(uri, digest)

    def unsubscribe(self, uri: str, session: Any) -> None:
        """Stop watching ``uri`` for ``session``."""
        held = [s for s in self.sessions.get(uri, []) if s is not session]
        if held:
            self.sessions[uri] = held
        else:
            self.sessions.pop(uri, None)
            self.digests.pop(uri, None)

    async def listed(self, session: Any) -> None:
        """``session`` listed the resources: tell it when the listing changes (the first listing is
        the baseline; a later one does not replace it, so no earlier listener misses a change)."""
        if session not in self.listeners:
            self.listeners = [*self.listeners, session][-MAX_SUBSCRIPTIONS:]
        if self.list_digest is None:
            self.list_digest = await self._listing()

    def forget(self, session: Any) -> None:
        """``session``'s connection closed: drop its subscriptions and its place among the listeners."""
        for uri in list(self.sessions):
            self.unsubscribe(uri, session)
        self.listeners = [s for s in self.listeners if s is not session]

    async def run(self) -> None:
        """Check every ``interval`` seconds until cancelled."""
        while True:
            await anyio.sleep(self.interval)
            await self.check()

    async def check(self) -> None:
        """Read each watched URI once; notify its sessions when its text changed."""
        for uri in list(self.sessions):
            digest = await self._digest(uri, strict=False)
            if self.digests.get(uri) == digest:
                continue
            self.digests[uri] = digest
            for session in list(self.sessions.get(uri, [])):
                try:
                    await session.send_resource_updated(uri)
                except Exception:  # noqa: BLE001  (a gone client: forget it, keep serving the others)
                    self.unsubscribe(uri, session)
        await self._check_listing()

    async def _check_listing(self) -> None:
        if not self.listeners:
            return
        digest = await self._listing()
        if digest == self.list_digest:
            return
        self.list_digest = digest
        for session in list(self.listeners):
            try:
                await session.send_resource_list_changed()
            except Exception:  # noqa: BLE001  (as above)
                self.listeners = [s for s in self.listeners if s is not session]

    async def _listing(self) -> str:
        text = await anyio.to_thread.run_sync(self.listing)
        return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    async def _digest(self, uri: str, *, strict: bool) -> str:
        try:
            text = await anyio.to_thread.run_sync(self.read, uri)
        except TickloopError as exc:
            if strict:
                raise
            text = f"error: {exc}"  # a resource that became unreadable (a deleted id) is a change too
        return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
