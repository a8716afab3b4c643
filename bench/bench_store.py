"""The operator store's figures, each as a ratio to a baseline measured in the same run.

1. Claim + complete throughput (1 and 4 processes) on SQLite and PostgreSQL, against a raw loop of
   single-row UPDATE + COMMIT on the same database with the same settings (SQLite: WAL,
   synchronous=FULL, as the store opens it). Claims take 10 at a time; each intent is then
   completed in its own transaction, as an executor does after each side effect. One process:
   the median of alternating rounds; four processes: against the mean of the baseline measured
   just before and just after. Target >= 0.5.
2. The fast tick's reads (active goal, current plan step, tried-and-failed list, last critiques,
   latest state of play, recent progress) with 1,000,000 progress rows against 1,000. Target <= 1.3.
3. ``memory://`` (SQLite in memory, the test store) against a SQLite file: claim+complete in one
   process, and the fast tick's reads at 1,000 progress rows; rounds alternate between the two,
   medians compared, with each round's ratio's min-max. No target: it says what the test store buys.
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from statistics import median

from bench._util import rate, report, report_rounds
from bench.store_load import T0, run_processes, seed_intents, seed_progress
from tickloop.operator.domain import IntentStatus, NewIntent, NewPlanStep, Verdict
from tickloop.operator.store import Store, open_store
from tickloop.testing.postgres import create_schema, drop_schema, find_server


@contextmanager
def _database(backend: str) -> Iterator[str | None]:
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite://{Path(folder) / 'bench.db'}"
        return
    server = find_server()
    if server.url is None:
        print(f"postgres: no server ({'; '.join(server.tried)}); skipped")
        yield None
        return
    schema, url = create_schema(server.url)
    try:
        yield url
    finally:
        drop_schema(server.url, schema)


def _raw_update_rate(url: str, seconds: float) -> float:
    """Commits per second of `UPDATE one row; COMMIT` on the same database, same settings."""
    if url.startswith("sqlite://"):
        conn = sqlite3.connect(url.removeprefix("sqlite://"), isolation_level=None)
        for pragma in ("journal_mode=WAL", "busy_timeout=30000", "synchronous=FULL"):
            conn.execute(f"PRAGMA {pragma}")
        conn.execute("CREATE TABLE IF NOT EXISTS bench_counter (id INTEGER PRIMARY KEY, v INTEGER)")
        conn.execute("INSERT OR IGNORE INTO bench_counter VALUES (1, 0)")

        def sqlite_once() -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("UPDATE bench_counter SET v = v + 1 WHERE id = 1")
            conn.execute("COMMIT")

        try:
            return rate(sqlite_once, seconds=seconds)
        finally:
            conn.close()
    import psycopg  # noqa: PLC0415

    with psycopg.connect(url) as pg:
        pg.execute("CREATE TABLE IF NOT EXISTS bench_counter (id INTEGER PRIMARY KEY, v INTEGER)")
        pg.execute("INSERT INTO bench_counter VALUES (1, 0) ON CONFLICT DO NOTHING")
        pg.commit()

        def pg_once() -> None:
            pg.execute("UPDATE bench_counter SET v = v + 1 WHERE id = 1")
            pg.commit()

        return rate(pg_once, seconds=seconds)


def _claim_complete(store: Store, profile: str, count: int) -> float:
    """Intents per second claimed (10 at a time) and completed one by one, as an executor does."""
    started, done = time.perf_counter(), 0
    while done < count and (batch := store.claim_intents(profile, owner="ex", now=T0, limit=10)):
        for intent in batch:
            store.finish_intent(profile, intent.id, IntentStatus.COMPLETED, owner="ex", now=T0)
        done += len(batch)
    return done / (time.perf_counter() - started)


def _throughput(backend: str, url: str, *, quick: bool) -> None:
    # Rounds alternate baseline and store so a slow spell of the shared disk hits both alike.
    rounds, per_round, raw_s = (3, 200, 0.3) if quick else (5, 800, 1.0)
    with open_store(url) as store:
        store.create_profile("one", now=T0)
        store.create_profile("four", now=T0)
        seed_intents(url, "one", rounds * per_round)
        raw, ours = [], []
        for _ in range(rounds):
            raw.append(_raw_update_rate(url, raw_s))
            ours.append(_claim_complete(store, "one", per_round))
    report(f"{backend}: claim+complete, 1 process", median(ours), median(raw), target=">= 0.5")
    seed_intents(url, "four", rounds * per_round * 2)
    before = _raw_update_rate(url, raw_s)
    job = {"url": url, "profile": "four", "finish": "complete", "batch": 10}
    results = run_processes([("claim", {**job, "owner": f"ex-{k}"}) for k in range(4)])
    four = sum(len(r["ids"]) for r in results) / max(r["seconds"] for r in results)
    baseline = (before + _raw_update_rate(url, raw_s)) / 2
    report(f"{backend}: claim+complete, 4 processes", four, baseline, target=">= 0.5")


def _fast_tick_reads(store: Store) -> Callable[[], None]:
    def reads() -> None:
        goal = store.active_goal_model("r")
        assert goal is not None
        store.current_plan_step("r", goal.version)
        store.failed_actions("r", since=T0 - timedelta(days=3))
        store.recent_critiques("r", goal.version)
        store.latest_state_of_play("r")
        store.recent_progress("r", limit=10, tick_kind="fast")
        store.recent_progress("r", limit=10)

    return reads


def _prepare_reads(store: Store) -> None:
    store.create_profile("r", now=T0)
    goal = store.add_goal_model("r", title="g", now=T0)
    store.activate_goal_model("r", goal.version, now=T0)
    store.replace_plan("r", goal.version, [NewPlanStep(f"step {i}") for i in range(5)], now=T0)
    for i in range(5):
        store.add_critique("r", goal.version, f"critique {i}", failure_type="repeat", now=T0)
        intent = store.stage_intent("r", NewIntent("note", f"failed {i}"), now=T0)
        store.record_verdict("r", intent.id, Verdict.BLOCKED, ["x"], now=T0)
    store.add_state_of_play("r", "all quiet", now=T0)


def _analyze(url: str) -> None:
    """Fresh statistics and a vacuumed table, as autovacuum (PostgreSQL) or ANALYZE would leave them."""
    if url.startswith("sqlite://"):
        with sqlite3.connect(url.removeprefix("sqlite://")) as conn:
            conn.execute("ANALYZE")
        return
    import psycopg  # noqa: PLC0415

    # VACUUM too: otherwise autovacuum starts on the freshly loaded table during the measurement
    # and competes for the same two cores.
    with psycopg.connect(url, autocommit=True) as pg:
        pg.execute("VACUUM ANALYZE")


def _best_ms(fn: Callable[[], None], *, rounds: int, seconds: float) -> float:
    """Milliseconds per call in the best of ``rounds`` runs: the figure least disturbed by neighbours."""
    return min(1000 / rate(fn, seconds=seconds) for _ in range(rounds))


def _reads(backend: str, url: str, *, quick: bool) -> None:
    small, large = 1_000, (100_000 if quick else 1_000_000)
    rounds, seconds = (2, 0.2) if quick else (8, 0.4)
    with open_store(url) as store:
        _prepare_reads(store)
        seed_progress(url, "r", small)
        _analyze(url)
        at_small = _best_ms(_fast_tick_reads(store), rounds=rounds, seconds=seconds)
        loaded = time.perf_counter()
        seed_progress(url, "r", large - small)
        _analyze(url)
        print(f"{backend}: loaded {large - small:,} progress rows in {time.perf_counter() - loaded:.1f}s")
        at_large = _best_ms(_fast_tick_reads(store), rounds=rounds, seconds=seconds)
    report(
        f"{backend}: fast-tick reads, {large:,} vs {small:,} rows",
        at_large,
        at_small,
        target="<= 1.3",
        unit="ms",
    )


def _memory_vs_file(*, quick: bool) -> None:
    rounds, per_round, seconds = (3, 200, 0.2) if quick else (7, 800, 0.4)
    with tempfile.TemporaryDirectory() as folder:
        urls = {"memory": "memory://", "file": f"sqlite://{Path(folder) / 'bench.db'}"}
        stores = {kind: open_store(url) for kind, url in urls.items()}
        claims: dict[str, list[float]] = {kind: [] for kind in stores}
        reads: dict[str, list[float]] = {kind: [] for kind in stores}
        for kind, store in stores.items():
            store.create_profile("one", now=T0)
            seed_intents(urls[kind], "one", rounds * per_round, store=store)
            _prepare_reads(store)
            seed_progress(urls[kind], "r", 1_000, store=store)
        for _ in range(rounds):
            for kind, store in stores.items():
                claims[kind].append(_claim_complete(store, "one", per_round))
                reads[kind].append(_best_ms(_fast_tick_reads(store), rounds=1, seconds=seconds))
        for store in stores.values():
            store.close()
    report_rounds("memory:// vs sqlite file: claim+complete, 1 proc", claims["memory"], claims["file"])
    report_rounds("memory:// vs sqlite file: fast-tick reads", reads["memory"], reads["file"], unit="ms")


def run(quick: bool) -> None:  # noqa: FBT001  (the bench runner's fixed signature)
    _memory_vs_file(quick=quick)
    for backend in ("sqlite", "postgres"):
        with _database(backend) as url:
            if url is None:
                continue
            _throughput(backend, url, quick=quick)
            _reads(backend, url, quick=quick)
