"""The watcher behind subscriptions and listChanged, with sessions that record what they were sent."""

from __future__ import annotations

from tickloop.errors import ValidationError
from tickloop.mcp.watch import Watcher


class Session:
    """A client session: the notifications it got, or an error when it has gone away."""

    def __init__(self, *, gone: bool = False) -> None:
        self.sent: list[str] = []
        self.gone = gone

    async def send_resource_updated(self, uri: str) -> None:
        self._send(f"updated {uri}")

    async def send_resource_list_changed(self) -> None:
        self._send("list_changed")

    def _send(self, what: str) -> None:
        if self.gone:
            raise BrokenPipeError(what)
        self.sent.append(what)


class Store:
    """What the watcher reads: a text per URI, and the listing of the resources that come and go."""

    def __init__(self) -> None:
        self.texts = {"tickloop://intents/1": "requires_approval"}
        self.listing = "tickloop://intents/1"

    def read(self, uri: str) -> str:
        if uri not in self.texts:
            raise ValidationError(f"{uri} is not a resource")
        return self.texts[uri]


async def test_a_subscriber_is_told_once_per_change_of_its_uri() -> None:
    """A change of the subscribed URI's text is sent once; an unchanged one is not sent again."""
    store, session = Store(), Session()
    watcher = Watcher(store.read, lambda: store.listing)
    await watcher.subscribe("tickloop://intents/1", session)
    await watcher.check()
    store.texts["tickloop://intents/1"] = "approved"
    await watcher.check()
    await watcher.check()
    assert session.sent == ["updated tickloop://intents/1"]


async def test_a_session_that_listed_is_told_when_the_listing_changes() -> None:
    """Each session that listed the resources gets list_changed once when the listing changes
    (an intent staged or decided); a session that never listed gets nothing; a gone one is dropped."""
    store, listed, other, gone = Store(), Session(), Session(), Session(gone=True)
    watcher = Watcher(store.read, lambda: store.listing)
    await watcher.listed(listed)
    await watcher.listed(gone)
    await watcher.listed(listed)
    await watcher.subscribe("tickloop://intents/1", other)
    await watcher.check()
    assert listed.sent == []
    store.listing = "tickloop://intents/1\ntickloop://intents/2"
    await watcher.check()
    await watcher.check()
    assert listed.sent == ["list_changed"]
    assert other.sent == []
    assert watcher.listeners == [listed]


async def test_a_listing_that_changed_before_a_late_session_listed_still_reaches_the_early_one() -> None:
    """The first listing is the baseline: a change seen first by a later session's listing is not lost
    for the session that listed before it."""
    store, early, late = Store(), Session(), Session()
    watcher = Watcher(store.read, lambda: store.listing)
    await watcher.listed(early)
    store.listing = "tickloop://intents/2"
    await watcher.listed(late)
    await watcher.check()
    assert early.sent == ["list_changed"]


async def test_a_closed_connection_is_forgotten() -> None:
    """When a client's connection closes, its subscriptions and its place among the listeners go, so
    gone clients cannot fill the server's subscription limit."""
    store, session = Store(), Session()
    watcher = Watcher(store.read, lambda: store.listing)
    await watcher.subscribe("tickloop://intents/1", session)
    await watcher.listed(session)
    watcher.forget(session)
    assert (watcher.sessions, watcher.digests, watcher.listeners) == ({}, {}, [])
