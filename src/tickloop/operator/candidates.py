"""Notice candidates: what a tick would like the person to hear, handed to the attention layer.

A tick never interrupts the person itself. It *offers* a candidate: one row in the notification log
with ``channel = "attention"`` and ``kind = "candidate"``, the topic as a stable id in ``subject``
(``fast.gate_stop``, ``slow.drift``, ``slow.behind``), and a short human text in ``body``. The
attention layer (``tickloop.operator.attention``) reads them with ``pending()``, screens each one
(quiet hours, budget, digest) and logs what it actually delivered under its own channel and kind.
Offering is durable, so a candidate survives the tick's process; nothing is ever sent from here.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from tickloop.operator.domain import Notification
from tickloop.operator.store.base import EPOCH, Store

CHANNEL = "attention"
KIND = "candidate"


class Candidate(msgspec.Struct, frozen=True):
    """One thing a tick would tell the person, if the attention layer lets it through."""

    topic: str  #: a stable id: ``fast.gate_stop``, ``slow.drift``, ``slow.behind``
    text: str  #: one or two lines for the person
    intent_id: int | None = None  #: the intent awaiting a decision, if any


def offer(store: Store, profile: str, candidate: Candidate, *, now: datetime) -> Notification:
    """Record ``candidate`` for the attention layer; returns the logged row."""
    return store.log_notification(
        profile,
        channel=CHANNEL,
        kind=KIND,
        subject=candidate.topic,
        body=candidate.text[:2000],
        intent_id=candidate.intent_id,
        now=now,
    )


def pending(store: Store, profile: str, *, since: datetime = EPOCH, limit: int = 100) -> list[Candidate]:
    """The newest ``limit`` candidates offered since ``since``, newest first (read along the log's
    index of one channel and kind: however many lines of other kinds came after them)."""
    return [
        Candidate(n.subject, n.body, n.intent_id)
        for n in store.list_notifications(profile, since=since, limit=limit, channel=CHANNEL, kind=KIND)
    ]
