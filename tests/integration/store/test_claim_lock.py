"""A claim is compare-and-set on PostgreSQL without an outer status test: the inner SELECT's
``FOR UPDATE`` locks each row it picks and re-checks its WHERE against the row's newest version, so an
intent another connection changes while a claim is running is never claimed."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from urllib.parse import quote

import psycopg
import pytest

from tickloop.operator.domain import Intent, IntentStatus
from tickloop.operator.gate import GateSettings
from tickloop.operator.staging import Draft, stage
from tickloop.operator.store import open_store

pytestmark = pytest.mark.postgres
NOW = datetime(2026, 7, 7, 12, tzinfo=UTC)
GATE = 7_314_001  # an advisory lock key only this test uses
N = 4
#: Planner settings under which the claim locks and updates one row at a time (a nested-loop semi join
#: that rescans the subquery): the plan in which a row can change after the claim began.
ROW_BY_ROW = [f"enable_{name}=off" for name in ("hashagg", "sort", "hashjoin", "mergejoin", "material")]

#: Test instrumentation, not the schema: the claim's UPDATE of a row waits for the test's advisory
#: lock, which holds the claim in the middle of its one statement.
PAUSE = f"""
CREATE FUNCTION pause_claim() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status = 'claimed' THEN PERFORM pg_advisory_lock({GATE}); PERFORM pg_advisory_unlock({GATE}); END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER pause_claim BEFORE UPDATE ON intents FOR EACH ROW EXECUTE FUNCTION pause_claim();
"""


def _claim_is_paused(conn: psycopg.Connection) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s AND NOT granted", (GATE,)
    ).fetchone()
    return row is not None and row[0] > 0


@pytest.mark.parametrize(
    ("plan", "options"),
    [("locks every row first", []), ("locks row by row", ROW_BY_ROW)],
)
def test_an_intent_changed_while_a_claim_runs_is_never_claimed(
    pg_url: str, plan: str, options: list[str]
) -> None:
    """With the claim paused at its first UPDATE, another connection blocks every intent it can lock
    and commits; the claim then takes only intents still ready, and none it took was changed."""
    with open_store(pg_url) as store:
        store.create_profile("p", now=NOW)
        for n in range(N):
            stage(store, "p", Draft(action_type="note", title=f"n{n}", origin="cli"), GateSettings(), now=NOW)
        assert {i.status for i in store.list_intents("p")} == {IntentStatus.READY}

    claimed: list[Intent] = []
    with psycopg.connect(pg_url, autocommit=True) as gate, psycopg.connect(pg_url, autocommit=True) as other:
        gate.execute(PAUSE)
        gate.execute("SELECT pg_advisory_lock(%s)", (GATE,))
        # The claimer's session only gets the planner settings (the URL's libpq ``options``).
        claimer_url = pg_url + "".join(f"%20-c{quote(option)}" for option in options)

        def claim() -> None:
            with open_store(claimer_url) as claimer:
                claimed.extend(claimer.claim_intents("p", owner="ex-1", now=NOW, limit=N))

        thread = threading.Thread(target=claim)
        thread.start()
        try:
            deadline = time.monotonic() + 30
            while not _claim_is_paused(gate):
                assert time.monotonic() < deadline, "the claim never reached its UPDATE"
                time.sleep(0.01)
            # After the claim's snapshot and before it locked them: change every row it has not locked.
            free = [r[0] for r in other.execute("SELECT id FROM intents FOR UPDATE SKIP LOCKED").fetchall()]
            for intent_id in free:
                other.execute("UPDATE intents SET status = 'blocked' WHERE id = %s", (intent_id,))
        finally:
            gate.execute("SELECT pg_advisory_unlock(%s)", (GATE,))
            thread.join(timeout=30)
        gate.execute("DROP TRIGGER pause_claim ON intents")

    if plan == "locks row by row":
        assert free, "the plan under test did not pause with rows left to lock"
    taken = {i.id for i in claimed}
    assert {i.claim_prior for i in claimed} == {IntentStatus.READY}
    assert not taken & set(free)
    assert len(taken) + len(free) == N
    with open_store(pg_url) as store:
        statuses = {i.id: i.status for i in store.list_intents("p")}
    assert {i: statuses[i] for i in free} == dict.fromkeys(free, IntentStatus.BLOCKED)
    assert {i: statuses[i] for i in taken} == dict.fromkeys(taken, IntentStatus.CLAIMED)
