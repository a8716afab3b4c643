"""The dashboard's store reads on every backend: true counts, keyset pages oldest first, an intent's
recorded observations; and EXPLAIN shows each read walks an index of its own, not every intent."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from tickloop.operator.domain import DecisionKind, IntentStatus, NewIntent, Verdict
from tickloop.operator.store import Store, open_store
from tickloop.operator.store._sql import load_queries, to_pyformat
from tickloop.operator.store.sqlite import SQLiteStore

NOW = datetime(2026, 7, 7, 17, 0, tzinfo=UTC)
WAITING = IntentStatus.REQUIRES_APPROVAL


def waiting(store: Store, profile: str, n: int) -> list[int]:
    ids = []
    for i in range(n):
        made = store.stage_intent(profile, NewIntent("email", f"mail {i}", "a@example.org"), now=NOW)
        store.record_verdict(profile, made.id, Verdict.REQUIRES_APPROVAL, ["gate"], now=NOW)
        ids.append(made.id)
    return ids


def test_counts_are_counts_and_pages_reach_every_waiting_intent_oldest_first(store: Store) -> None:
    """Counts per status and in all; pages after an id, ascending; another profile never leaks in."""
    ids = waiting(store, "p", 7)
    waiting(store, "q", 3)
    store.decide("p", ids[2], DecisionKind.APPROVE, by="cli:x", now=NOW)
    left = [i for i in ids if i != ids[2]]
    assert store.count_intents("p", status=WAITING) == 6
    assert store.count_intents("p") == 7
    assert store.count_intents("p", status=IntentStatus.APPROVED) == 1
    assert store.intent_mark("p", WAITING) == (6, ids[-1])
    assert store.intent_mark("p", IntentStatus.SENT) == (0, 0)
    first = store.intents_oldest("p", status=WAITING, limit=4)
    rest = store.intents_oldest("p", status=WAITING, after=first[-1].id, limit=4)
    assert [i.id for i in first + rest] == left


def test_observations_by_id_returns_the_named_ones_of_that_profile_only(store: Store) -> None:
    """Unknown ids and another profile's observations are skipped; oldest first."""
    a = store.add_observation("p", source="mail", content_hash="a", payload={"s": 1}, now=NOW)
    b = store.add_observation("p", source="mail", content_hash="b", payload={"s": 2}, now=NOW)
    other = store.add_observation("q", source="mail", content_hash="c", payload={"s": 3}, now=NOW)
    assert a is not None
    assert b is not None
    assert other is not None
    found = store.observations_by_id("p", [b.id, a.id, other.id, 10**12])
    assert [o.id for o in found] == [a.id, b.id]
    assert store.observations_by_id("p", []) == []


#: either index serves a read of the waiting intents (SQLite picks by its statistics)
WAITING_INDEXES = ("intents_status", "intents_waiting")
PLANNED = {
    # query name -> (parameters, the indexes its plan may use)
    "count_intents_by_status": ({"profile": "p", "status": "requires_approval"}, WAITING_INDEXES),
    "intents_oldest_by_status": (
        {"profile": "p", "status": "requires_approval", "after": 0, "limit": 20},
        WAITING_INDEXES,
    ),
}


@pytest.mark.parametrize("name", sorted(PLANNED))
def test_sqlite_plans_the_dashboard_reads_along_their_index(tmp_path: Path, name: str) -> None:
    """EXPLAIN QUERY PLAN on a store of 1200 intents (50 waiting): the read searches an index."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        assert isinstance(store, SQLiteStore)
        fill(store)
    params, index = PLANNED[name]
    with sqlite3.connect(tmp_path / "store.db") as conn:
        conn.execute("ANALYZE")
        plan = " ".join(
            r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + load_queries("sqlite")[name], params)
        )
    assert plan.startswith("SEARCH intents USING "), plan
    assert any(f"INDEX {name} (profile=?" in plan for name in index), plan
    assert "SCAN" not in plan, plan


@pytest.mark.postgres
@pytest.mark.parametrize("name", sorted(PLANNED))
def test_postgres_plans_the_dashboard_reads_along_their_index(pg_url: str, name: str) -> None:
    """EXPLAIN on PostgreSQL after ANALYZE: an index (or index-only) scan, never a Seq Scan on intents."""
    with open_store(pg_url) as store:
        fill(store)
    params, _ = PLANNED[name]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("ANALYZE intents")
        rows = conn.execute("EXPLAIN (FORMAT JSON) " + to_pyformat(load_queries("postgres")[name]), params)
        plan = json.dumps(rows.fetchone()[0])  # type: ignore[index]
    assert "Seq Scan" not in plan, plan
    assert "Index" in plan, plan


def fill(store: Store) -> None:
    """1200 intents of which the newest 50 wait: the shape where a scan of every intent would show."""
    store.create_profile("p", now=NOW)
    for i in range(1200):
        made = store.stage_intent("p", NewIntent("email", f"m{i}", "a@example.org"), now=NOW)
        verdict = Verdict.REQUIRES_APPROVAL if i >= 1150 else Verdict.BLOCKED
        store.record_verdict("p", made.id, verdict, ["gate"], now=NOW)
