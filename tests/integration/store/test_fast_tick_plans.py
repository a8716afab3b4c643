"""The fast tick's reads on PostgreSQL stay bounded as the tables grow: each hot query is planned
against large tables shared by many profiles, and none scans a table or sorts more than it returns."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from bench.store_load import T0, seed_progress
from psycopg import sql

from tickloop.operator.store import open_store
from tickloop.operator.store._sql import load_queries, to_pyformat

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
PROFILES = 50
TARGET = "p000"  # the profile the tick runs for: its rows are the OLDEST, every other profile's newer
ROWS = 200_000  # progress rows; the other tables get a quarter to a half of that

#: Every table a fast tick reads, filled for PROFILES profiles (TARGET first, so its rows are oldest).
T0S = f"'{T0.isoformat()}'::timestamptz"
SEED = f"""
INSERT INTO profiles
  SELECT 'p' || lpad(g::text, 3, '0'), '', 'UTC', {T0S} FROM generate_series(0, {PROFILES - 1}) g;
INSERT INTO goal_models
  SELECT 'p' || lpad(p::text, 3, '0'), v, CASE WHEN v = 40 THEN 'active' ELSE 'retired' END, 'g', '',
         '{{}}', {T0S}, {T0S}
  FROM generate_series(0, {PROFILES - 1}) p, generate_series(1, 40) v;
INSERT INTO tasks (profile, title, priority, status, notes, created_at, updated_at)
  SELECT 'p' || lpad((g / {ROWS // 4 // PROFILES})::text, 3, '0'), 't', mod(g, 4), 'done', '', {T0S}, {T0S}
  FROM generate_series(0, {ROWS // 4 - 1}) g;
INSERT INTO plan_steps (profile, goal_version, position, title, status, updated_at)
  SELECT 'p' || lpad((g / {ROWS // 4 // PROFILES})::text, 3, '0'), 40, g, 's',
         CASE WHEN mod(g, 50) = 49 THEN 'pending' ELSE 'done' END, {T0S}
  FROM generate_series(0, {ROWS // 4 - 1}) g;
INSERT INTO intents (profile, action_type, title, recipient, payload, tier, status, verdict_reasons,
                     dry_run, handoff, origin_tick, origin_tainted, created_at, updated_at)
  SELECT 'p' || lpad((g / {ROWS // 2 // PROFILES})::text, 3, '0'), 'note', 'n', '', '{{}}', 'reversible',
         CASE WHEN mod(g, 10) = 0 THEN 'failed' ELSE 'sent' END, '[]', false, false, 'fast', false,
         {T0S} + g * interval '1 second', {T0S} + g * interval '1 second'
  FROM generate_series(0, {ROWS // 2 - 1}) g;
INSERT INTO progress (profile, tick_kind, outcome, state_hash, error, detail, started_at, ended_at)
  SELECT 'p' || lpad((g / {ROWS // PROFILES})::text, 3, '0'), (ARRAY['fast','observe','slow'])[mod(g, 3) + 1],
         'noop', 'h', '', '', {T0S} + g * interval '1 second', {T0S} + g * interval '1 second'
  FROM generate_series(0, {ROWS - 1}) g;
INSERT INTO observations (profile, source, content_hash, tainted, payload, observed_at)
  SELECT 'p' || lpad((g / {ROWS // 2 // PROFILES})::text, 3, '0'), 'git', 'h' || g, false, '{{}}',
         {T0S} + g * interval '1 second'
  FROM generate_series(0, {ROWS // 2 - 1}) g;
INSERT INTO critiques (profile, goal_version, text, failure_type, created_at)
  SELECT 'p' || lpad((g / {ROWS // 4 // PROFILES})::text, 3, '0'), 40, 'c', 'repeat', {T0S}
  FROM generate_series(0, {ROWS // 4 - 1}) g;
INSERT INTO states_of_play (profile, text, created_at)
  SELECT 'p' || lpad((g / {ROWS // 4 // PROFILES})::text, 3, '0'), 's', {T0S}
  FROM generate_series(0, {ROWS // 4 - 1}) g;
"""

SINCE = T0 + timedelta(days=365)  # a window that holds none of the target's rows: the worst case
#: The hot reads of one fast tick (ticks/fast.py), with the arguments it passes.
HOT: dict[str, dict[str, Any]] = {
    "active_goal_model": {},
    "current_plan_step": {"goal_version": 40},
    "list_intents": {"limit": 200},
    "recent_progress": {"limit": 10},
    "recent_progress_kind": {"tick_kind": "fast", "limit": 1},
    "list_observations": {"since": SINCE, "limit": 40},
    "failed_actions": {"since": SINCE - timedelta(days=7), "limit": 40},
    "recent_critiques": {"goal_version": 40, "limit": 3},
    "latest_state_of_play": {},
    "list_tasks": {},
}


@pytest.fixture(scope="module")
def fleet(pg_server: str) -> Iterator[str]:
    """A store URL whose tables hold PROFILES profiles' rows, analysed as autovacuum leaves them."""
    from tickloop.testing.postgres import create_schema, drop_schema  # noqa: PLC0415

    schema, url = create_schema(pg_server)
    try:
        open_store(url).close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(SEED.encode())
            conn.execute("VACUUM ANALYZE")
        yield url
    finally:
        drop_schema(pg_server, schema)


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _plan(url: str, name: str) -> dict[str, Any]:
    sql = to_pyformat(load_queries("postgres")[name])
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            f"EXPLAIN (FORMAT JSON) {sql}".encode(), {"profile": TARGET, **HOT[name]}
        ).fetchone()  # type: ignore[arg-type]
    assert row is not None
    plan: dict[str, Any] = row[0][0]["Plan"]
    return plan


@pytest.mark.parametrize("name", sorted(HOT))
def test_each_hot_fast_tick_read_uses_the_profile_index_and_stops_at_its_limit(fleet: str, name: str) -> None:
    """No sequential scan; every table is reached through an index on the profile; and a query with
    a LIMIT has no full sort and no bitmap scan under it (it stops after LIMIT rows)."""
    plan = _plan(fleet, name)
    nodes = list(_nodes(plan))
    kinds = [n["Node Type"] for n in nodes]
    assert "Seq Scan" not in kinds, (name, kinds)
    # The scans that pick rows: an index (or bitmap index) scan, each bounded to the profile.
    scans = [n for n in nodes if n["Node Type"] in {"Index Scan", "Index Only Scan", "Bitmap Index Scan"}]
    assert scans, (name, kinds)
    for scan in scans:
        assert "profile" in scan.get("Index Cond", ""), (name, scan["Node Type"], scan.get("Index Cond"))
    if "limit" in load_queries("postgres")[name].lower():
        assert kinds[0] == "Limit", (name, kinds)
        assert not {"Sort", "Bitmap Heap Scan", "Hash", "Materialize"} & set(kinds), (name, kinds)


@pytest.fixture(scope="module")
def lopsided(pg_server: str) -> Iterator[str]:
    """Two profiles: TARGET with 1,000 old progress rows, `other` with 300,000 newer ones."""
    from tickloop.testing.postgres import create_schema, drop_schema  # noqa: PLC0415

    schema, url = create_schema(pg_server)
    try:
        with open_store(url) as store:
            store.create_profile(TARGET, now=T0)
            store.create_profile("other", now=T0)
        seed_progress(url, TARGET, 1_000)
        seed_progress(url, "other", 300_000)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
        yield url
    finally:
        drop_schema(pg_server, schema)


def _generic_plan(url: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The plan a prepared statement settles on after its first runs (any long-lived connection)."""
    names: list[str] = []

    def positional(match: re.Match[str]) -> str:
        if match[1] not in names:
            names.append(match[1])
        return f"${names.index(match[1]) + 1}"

    body = re.sub(r"(?<!:):(\w+)", positional, load_queries("postgres")[name]).strip().rstrip(";")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET plan_cache_mode = force_generic_plan")
        conn.execute(f"PREPARE hot AS {body}".encode())
        values = sql.SQL(", ").join(sql.Literal(args[n]) for n in names)
        row = conn.execute(sql.SQL("EXPLAIN (FORMAT JSON) EXECUTE hot({})").format(values)).fetchone()
    assert row is not None
    plan: dict[str, Any] = row[0][0]["Plan"]
    return plan


@pytest.mark.parametrize("name", ["recent_progress", "recent_progress_kind"])
def test_progress_reads_stay_on_the_profile_index_under_a_generic_plan(lopsided: str, name: str) -> None:
    """Run many times on one connection, a progress read still walks only its own profile's rows:
    the generic plan never walks the primary key back through another profile's newer rows."""
    args = {"profile": TARGET, "tick_kind": "fast", "limit": 10}
    nodes = list(_nodes(_generic_plan(lopsided, name, args)))
    print(nodes)
    assert [n["Node Type"] for n in nodes] == ["Limit", "Index Scan"], nodes
    assert nodes[1]["Index Name"] in {"progress_recent", "progress_kind"}
    assert "profile" in nodes[1]["Index Cond"]
