"""The dashboard's store reads on every backend: true counts, keyset pages oldest first, an intent's
recorded observations; and EXPLAIN shows each read walks an index of its own, not every intent."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
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


def test_search_covers_every_intent_and_the_filters_work_in_sql(store: Store) -> None:
    """A word in the oldest of many titles is found; type, status, several words (any order) and
    LIKE's own characters taken literally; pages below an id."""
    waiting(store, "p", 3)
    store.stage_intent("p", NewIntent("purchase", "Buy 100% cotton_shirt", ""), now=NOW)
    oldest = store.search_intents("p", words=["mail", "0"])
    assert [i.title for i in oldest] == ["mail 0"]
    assert [i.title for i in store.search_intents("p", words=["100%"])] == ["Buy 100% cotton_shirt"]
    assert store.search_intents("p", words=["1000%"]) == []
    assert store.search_intents("p", words=["o_t"]) == []  # _ is not a wildcard ("cotton" has "ott")
    assert [i.title for i in store.search_intents("p", words=["SHIRT", "buy"])] == ["Buy 100% cotton_shirt"]
    assert len(store.search_intents("p", action_type="email")) == 3
    assert len(store.search_intents("p", status=WAITING)) == 3
    assert len(store.search_intents("p", status=IntentStatus.PROPOSED)) == 1
    newest_first = store.search_intents("p", action_type="email")
    below = store.search_intents("p", action_type="email", before=newest_first[0].id, limit=1)
    assert [i.id for i in below] == [newest_first[1].id]


def test_progress_filters_every_row_by_kind_and_outcome(store: Store) -> None:
    """The oldest failed fast row is found behind many newer rows of other outcomes."""
    from datetime import timedelta  # noqa: PLC0415

    from tickloop.operator.domain import NewProgress, Outcome  # noqa: PLC0415

    store.record_progress("p", NewProgress("fast", Outcome.FAILED, NOW, NOW + timedelta(seconds=1)))
    for i in range(30):
        at = NOW + timedelta(minutes=i + 1)
        store.record_progress("p", NewProgress("observe", Outcome.FAILED, at, at))
        store.record_progress("p", NewProgress("fast", Outcome.DONE, at, at))
    [row] = store.progress_filtered("p", tick_kind="fast", outcome="failed", limit=200)
    assert row.started_at == NOW
    assert len(store.progress_filtered("p", outcome="failed", limit=200)) == 31
    assert len(store.progress_filtered("p", tick_kind="fast", limit=200)) == 31
    assert len(store.progress_filtered("p", limit=10)) == 10


def test_an_intents_log_lines_and_rows_and_one_kind_of_the_log_are_found_behind_newer_ones(
    store: Store,
) -> None:
    """The intent page's log lines and progress rows name that intent, however many newer ones do not;
    the attention page's records are one channel and kind of the log, newest first, since a time."""
    from datetime import timedelta  # noqa: PLC0415

    from tickloop.operator.domain import NewProgress, Outcome  # noqa: PLC0415

    first, other = waiting(store, "p", 2)
    store.log_notification("p", channel="executor", kind="sent", subject="mine", now=NOW, intent_id=first)
    store.record_progress("p", NewProgress("executor", Outcome.DONE, NOW, NOW, intent_id=first))
    for i in range(30):
        at = NOW + timedelta(minutes=i + 1)
        store.log_notification("p", channel="executor", kind="sent", subject=f"o{i}", now=at, intent_id=other)
        store.log_notification("p", channel="attention", kind="attention", subject=f"a{i}", now=at)
        store.log_notification("p", channel="attention", kind="digest", subject=f"d{i}", now=at)
        store.record_progress("p", NewProgress("fast", Outcome.DONE, at, at))
    assert [n.subject for n in store.notifications_for_intent("p", first)] == ["mine"]
    assert len(store.notifications_for_intent("p", other, limit=5)) == 5
    assert [r.intent_id for r in store.progress_for_intent("p", first)] == [first]
    assert store.progress_for_intent("p", other) == []
    assert store.notifications_for_intent("q", first) == []
    records = store.list_notifications("p", channel="attention", kind="attention", limit=1000)
    assert [n.subject for n in records] == [f"a{i}" for i in reversed(range(30))]
    recent = store.list_notifications(
        "p", channel="attention", kind="attention", since=NOW + timedelta(minutes=29)
    )
    assert [n.subject for n in recent] == ["a29", "a28"]
    with pytest.raises(ValueError, match="together"):
        store.list_notifications("p", channel="attention")


#: either index serves a read of the waiting intents (SQLite picks by its statistics)
WAITING_INDEXES = ("intents_status", "intents_waiting")
NEWEST = 2**63 - 1
WORDS = {"p1": "%x%", "p2": "%", "p3": "%"}
EPOCH_TEXT = "1970-01-01T00:00:00Z"
PLANNED = {
    # query name -> (table, parameters, the indexes its plan may use)
    "count_intents_by_status": ("intents", {"profile": "p", "status": "requires_approval"}, WAITING_INDEXES),
    "intents_oldest_by_status": (
        "intents",
        {"profile": "p", "status": "requires_approval", "after": 0, "limit": 20},
        WAITING_INDEXES,
    ),
    "search_intents": (
        "intents",
        {"profile": "p", "before": NEWEST, "action_type": "", "limit": 200, **WORDS},
        ("intents_recent",),
    ),
    "search_intents_by_status": (
        "intents",
        {
            "profile": "p",
            "status": "blocked",
            "before": NEWEST,
            "action_type": "email",
            "limit": 200,
            **WORDS,
        },
        ("intents_status",),
    ),
    "progress_by_outcome": (
        "progress",
        {"profile": "p", "outcome": "failed", "limit": 200},
        ("progress_outcome",),
    ),
    "progress_by_kind_outcome": (
        "progress",
        {"profile": "p", "tick_kind": "fast", "outcome": "failed", "limit": 200},
        ("progress_kind_outcome",),
    ),
    "progress_for_intent": ("progress", {"profile": "p", "intent_id": 7, "limit": 200}, ("progress_intent",)),
    "notifications_for_intent": (
        "notifications",
        {"profile": "p", "intent_id": 7, "limit": 200},
        ("notifications_intent",),
    ),
    "list_notifications_kind": (
        "notifications",
        {"profile": "p", "channel": "attention", "kind": "attention", "since": EPOCH_TEXT, "limit": 1000},
        ("notifications_kind",),
    ),
}


@pytest.mark.parametrize("name", sorted(PLANNED))
def test_sqlite_plans_the_dashboard_reads_along_their_index(tmp_path: Path, name: str) -> None:
    """EXPLAIN QUERY PLAN on 1200 intents (50 waiting) and 1200 progress rows: the read searches
    an index of its own, never scans the table."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        assert isinstance(store, SQLiteStore)
        fill(store)
    table, params, indexes = PLANNED[name]
    with sqlite3.connect(tmp_path / "store.db") as conn:
        conn.execute("ANALYZE")
        found = conn.execute("EXPLAIN QUERY PLAN " + load_queries("sqlite")[name], params)
        plan = " ".join(r[-1] for r in found)
    assert plan.startswith(f"SEARCH {table} USING "), plan
    assert any(f"INDEX {index} (profile=?" in plan for index in indexes), plan
    assert "SCAN" not in plan, plan
    assert "TEMP B-TREE" not in plan, plan  # the index gives the order: no sort of every match


@pytest.mark.postgres
@pytest.mark.parametrize("name", sorted(PLANNED))
def test_postgres_plans_the_dashboard_reads_along_their_index(pg_url: str, name: str) -> None:
    """EXPLAIN on PostgreSQL after ANALYZE: an index (or index-only) scan, never a Seq Scan."""
    with open_store(pg_url) as store:
        fill(store)
    table, params, _ = PLANNED[name]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"ANALYZE {table}")
        rows = conn.execute("EXPLAIN (FORMAT JSON) " + to_pyformat(load_queries("postgres")[name]), params)
        plan = json.dumps(rows.fetchone()[0])  # type: ignore[index]
    assert "Seq Scan" not in plan, plan
    assert "Index" in plan, plan


def fill(store: Store) -> None:
    """1200 intents of which the newest 50 wait, 1200 progress rows of several kinds and outcomes
    and 1200 log lines of several channels and kinds, one in ten of each naming an intent: the shape
    where a scan of every row would show."""
    from datetime import timedelta  # noqa: PLC0415

    from tickloop.operator.domain import NewProgress, Outcome  # noqa: PLC0415

    store.create_profile("p", now=NOW)
    for i in range(1200):
        made = store.stage_intent("p", NewIntent("email", f"m{i}", "a@example.org"), now=NOW)
        verdict = Verdict.REQUIRES_APPROVAL if i >= 1150 else Verdict.BLOCKED
        store.record_verdict("p", made.id, verdict, ["gate"], now=NOW)
        kind = ("observe", "fast", "executor")[i % 3]
        outcome = Outcome.FAILED if i % 97 == 0 else Outcome.DONE
        at = NOW + timedelta(seconds=i)
        named = made.id if i % 10 == 0 else None
        store.record_progress("p", NewProgress(kind, outcome, at, at, intent_id=named))
        channel, note = ("attention", "attention") if i % 20 == 0 else ("executor", ("sent", "failed")[i % 2])
        store.log_notification("p", channel=channel, kind=note, subject=f"n{i}", now=at, intent_id=named)


def test_the_overview_snapshot_reads_what_the_status_overview_reads(store: Store) -> None:
    """One snapshot (one statement on PostgreSQL) gives the dashboard exactly the overview that
    `tickloop operator status` reads query by query: goal, step, last ticks, waiting, conditions,
    attention today."""
    from datetime import timedelta  # noqa: PLC0415

    from tickloop.config import Settings  # noqa: PLC0415
    from tickloop.operator.domain import NewPlanStep, NewProgress, Outcome  # noqa: PLC0415
    from tickloop.operator.status import overview  # noqa: PLC0415
    from tickloop.web.pages import overview_page  # noqa: PLC0415

    goal = store.add_goal_model("p", title="Ship it", now=NOW)
    store.activate_goal_model("p", goal.version, now=NOW)
    store.replace_plan("p", goal.version, [NewPlanStep("first"), NewPlanStep("second")], now=NOW)
    for i, kind in enumerate(["observe", "fast", "fast", "executor"]):
        at = NOW - timedelta(minutes=10 - i)
        store.record_progress("p", NewProgress(kind, Outcome.DONE, at, at, detail=f"{kind} {i}"))
    ids = waiting(store, "p", 3)
    store.put_condition("p", "stuck", active=True, since=NOW, last_notified_at=None, now=NOW)
    spent = NOW - timedelta(hours=1)
    assert store.spend_attention("p", now=spent, day=f"{spent:%Y-%m-%d}", cap=5, min_gap=timedelta(0))
    view = overview_page(store, "p", Settings(), now=NOW)
    assert view.status == overview(store, "p", now=NOW)
    assert view.waiting == 3
    assert view.monitor_ran
    assert view.status.waiting_approval[0][0] == ids[-1]
    assert view.status.conditions["stuck"] is True
    assert view.status.current_step == "first"
    assert view.status.last_ticks["fast"] is not None
    assert view.status.last_ticks["fast"].detail == "fast 2"
    assert view.status.attention_today == 1
    empty = overview_page(store, "q", Settings(), now=NOW)
    assert empty.status == overview(store, "q", now=NOW)
    assert not empty.monitor_ran


def test_the_monitors_last_pass_is_remembered_per_scope_and_shown_by_the_overview(store: Store) -> None:
    """A pass over every profile covers each one; a pass over named profiles covers only them; the
    newest covering pass wins, and the overview's snapshot carries it (None before any pass)."""
    kinds = ["fast"]
    assert store.last_monitor_pass("p") is None
    assert store.overview_snapshot("p", kinds=kinds, waiting=5, since=NOW).monitor_ran_at is None
    store.record_monitor_pass(["q"], now=NOW)
    assert store.last_monitor_pass("p") is None
    assert store.last_monitor_pass("q") == NOW
    store.record_monitor_pass(None, now=NOW + timedelta(minutes=1))
    assert store.last_monitor_pass("p") == NOW + timedelta(minutes=1)
    store.record_monitor_pass(["p", "p"], now=NOW + timedelta(minutes=2))
    assert store.last_monitor_pass("p") == NOW + timedelta(minutes=2)
    assert store.last_monitor_pass("q") == NOW + timedelta(minutes=1)
    snap = store.overview_snapshot("p", kinds=kinds, waiting=5, since=NOW)
    assert snap.monitor_ran_at == NOW + timedelta(minutes=2)
