"""The attention layer's reads of the notification log find their own kind however long the log of
other kinds is: a candidate behind 150 log lines of mail is still offered, and the digest still carries
a batched approval logged before them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec

from tickloop.config import Settings
from tickloop.operator import candidates
from tickloop.operator.attention import Candidate, Check, Kind
from tickloop.operator.notices import Notifier, pending_digest
from tickloop.operator.store import Store, open_store

NOON = datetime(2026, 7, 7, 12, 0, tzinfo=UTC)
P = "p"


def _other_lines(store: Store, count: int) -> None:
    for i in range(count):
        store.log_notification(P, channel="email", kind="sent", subject=f"mail {i}", now=NOON)


def test_a_candidate_behind_a_long_log_of_other_kinds_is_still_pending() -> None:
    with open_store("memory://") as store:
        store.create_profile(P, now=NOON)
        candidates.offer(store, P, candidates.Candidate("slow.behind", "2 tasks behind"), now=NOON)
        _other_lines(store, 150)
        assert [c.topic for c in candidates.pending(store, P)] == ["slow.behind"]
        assert len(candidates.pending(store, P, limit=1)) == 1, "the limit counts candidates only"


def test_the_digest_carries_a_batched_approval_behind_other_kinds(tmp_path: Path) -> None:
    channel = {"kind": "file", "name": "log", "path": str(tmp_path / "notices.jsonl")}
    settings = msgspec.convert(
        {"attention": {"approvalCap": 0, "budgetPerDay": 0}, "notify": {"channels": [channel]}}, Settings
    )
    with open_store("memory://") as store:
        store.create_profile(P, now=NOON)
        notifier = Notifier(store, P, settings, {})
        decision = notifier.consider(
            Candidate(Kind.APPROVAL, "approve #7", score=0.1), now=NOON, source="gate"
        )
        assert decision.check is Check.APPROVAL_CAP
        _other_lines(store, 150)
        assert [r.title for r in pending_digest(store, P, now=NOON + timedelta(minutes=1))] == ["approve #7"]
