"""A tick that finds its lock held writes exactly one no-op row with its reason, on every backend.

Seed 002: "each leaves exactly one row behind so the next one can read what happened" -- a tick that
could not run still leaves its row, and never runs its body while another tick of its kind holds the lock.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tickloop.config import Settings
from tickloop.operator.domain import NewIntent, Outcome, Verdict
from tickloop.operator.runner import TICKS, run_tick
from tickloop.operator.store import Store
from tickloop.testing import FakeClock

NOW = datetime(2026, 7, 7, 17, 0, tzinfo=UTC)


@pytest.mark.parametrize("kind", sorted(TICKS))
def test_a_tick_whose_lock_is_held_writes_one_noop_row_and_does_nothing(store: Store, kind: str) -> None:
    """With another tick of its kind holding the lock, the tick exits 0, runs nothing, and records one
    ``noop`` row that says why."""
    ready = store.stage_intent("p", NewIntent("note", "would be executed"), now=NOW)
    store.record_verdict("p", ready.id, Verdict.ALLOWED, ["rule.x"], now=NOW)
    store.mark_ready("p", ready.id, now=NOW)
    lines: list[str] = []
    with store.tick_lock("p", kind, owner="the-other-tick", now=NOW) as held:
        assert held
        code = run_tick(kind, store=store, profile="p", settings=Settings(), env={}, clock=FakeClock(NOW),
                        log=lines.append)  # fmt: skip
    assert code == 0, lines
    rows = store.recent_progress("p", limit=10)
    assert [(r.tick_kind, r.outcome, r.detail) for r in rows] == [
        (kind, Outcome.NOOP, f"skipped: another {kind} tick is running")
    ]
    assert store.get_intent("p", ready.id).status.value == "ready"  # the executor's body never ran
    with store.tick_lock("p", kind, owner="next", now=NOW) as free:
        assert free, "the skipped tick must not leave the lock taken"
