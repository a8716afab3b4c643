"""Load helpers for the store's concurrency tests and benchmarks: fast bulk seeding, and worker
processes started as ``python -m bench.store_load KIND JSON`` that print a JSON result.

Test tooling, not part of the package: the tests import it with the repository root on the path
(pytest's ``pythonpath``), and workers get that root on their ``PYTHONPATH`` (``child_env``).

Workers wait for a shared wall-clock start time so they really run at once (this module is test
tooling; the store itself never reads the clock).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tickloop.clock import utc_iso
from tickloop.errors import ConflictError
from tickloop.operator.domain import IntentStatus
from tickloop.operator.store import Ending, Store, open_store

T0 = datetime(2026, 7, 7, tzinfo=UTC)
#: The repository root: ``python -m bench.*`` in a worker needs it on the path.
ROOT = Path(__file__).resolve().parents[1]
_INTENT_COLUMNS = (
    "profile, action_type, title, recipient, payload, tier, status, verdict, verdict_reasons, "
    "claim_owner, claimed_at, dry_run, handoff, origin_tick, origin_tainted, created_at, updated_at"
)
_PROGRESS_COLUMNS = "profile, tick_kind, outcome, state_hash, error, detail, started_at, ended_at"


def _rows_to_db(
    url: str, table: str, columns: str, rows: Iterable[tuple[Any, ...]], store: Store | None = None
) -> None:
    """Insert many rows with one executemany (SQLite) or COPY (PostgreSQL). A ``memory://`` database
    is private to its store, so its rows go through that store's connection (``store``)."""
    if url.startswith("memory://"):
        if store is None:
            raise ValueError("seeding a memory:// store needs the store itself (store=...)")
        marks = ", ".join("?" * (columns.count(",") + 1))
        with store._lock:  # type: ignore[attr-defined]
            conn = store._conn  # type: ignore[attr-defined]
            conn.execute("BEGIN")
            conn.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)
            conn.execute("COMMIT")
        return
    if url.startswith("sqlite://"):
        import sqlite3  # noqa: PLC0415

        width = columns.count(",") + 1
        with sqlite3.connect(url.removeprefix("sqlite://")) as conn:
            marks = ", ".join("?" * width)
            conn.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)
            conn.commit()
            # Fold the bulk load into the database file now, so the first operations measured
            # after seeding do not pay for checkpointing it.
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return
    import psycopg  # noqa: PLC0415

    with psycopg.connect(url) as pg, pg.cursor() as cur:
        with cur.copy(f"COPY {table} ({columns}) FROM STDIN".encode()) as copy:
            for row in rows:
                copy.write_row(row)
        pg.commit()


def _time(url: str, moment: datetime) -> Any:
    return utc_iso(moment) if _is_sqlite(url) else moment


def _is_sqlite(url: str) -> bool:
    return url.startswith(("sqlite://", "memory://"))


def seed_intents(
    url: str,
    profile: str,
    n: int,
    *,
    status: IntentStatus = IntentStatus.READY,
    owner: str | None = None,
    action_type: str = "note",
    store: Store | None = None,
) -> None:
    """``n`` intents at ``status``; with ``owner``, claimed by it at T0 + i seconds."""

    def rows() -> Iterable[tuple[Any, ...]]:
        flag = not _is_sqlite(url)
        for i in range(n):
            claimed = None if owner is None else _time(url, T0 + timedelta(seconds=i))
            yield (
                profile, action_type, f"intent {i}", "", "{}", "reversible", status.value, "allowed", "[]",
                owner, claimed, flag if flag else 1, False if flag else 0, "load", False if flag else 0,
                _time(url, T0), _time(url, T0),
            )  # fmt: skip

    _rows_to_db(url, "intents", _INTENT_COLUMNS, rows(), store)


def seed_progress(
    url: str,
    profile: str,
    n: int,
    *,
    kinds: Sequence[str] = ("fast", "observe", "slow"),
    store: Store | None = None,
) -> None:
    """``n`` progress rows spread over the kinds, one second apart from T0."""

    def rows() -> Iterable[tuple[Any, ...]]:
        for i in range(n):
            at = _time(url, T0 + timedelta(seconds=i))
            yield (profile, kinds[i % len(kinds)], "noop", f"sha256:{i:x}", "", "", at, at)

    _rows_to_db(url, "progress", _PROGRESS_COLUMNS, rows(), store)


def seed_fleet(url: str, profiles: int, rows_each: int, *, at: datetime = T0) -> list[str]:
    """``profiles`` profiles ``fleet-N``, each with an active goal model and ``rows_each`` fresh fast
    progress rows that made progress (a healthy fleet: the monitor finds nothing to report)."""
    names = [f"fleet-{n:06d}" for n in range(profiles)]
    when = _time(url, at)
    _rows_to_db(
        url, "profiles", "name, display_name, timezone, created_at", ((n, "", "UTC", when) for n in names)
    )
    _rows_to_db(
        url,
        "goal_models",
        "profile, version, status, title, body, data, created_at, activated_at",
        ((n, 1, "active", "g", "", "{}", when, when) for n in names),
    )
    _rows_to_db(
        url,
        "progress",
        _PROGRESS_COLUMNS,
        ((n, "fast", "done", f"sha256:{i:x}", "", "", when, when) for n in names for i in range(rows_each)),
    )
    return names


# -- workers ---------------------------------------------------------------------------------------


def _wait(start_at: float) -> None:
    while time.time() < start_at:
        time.sleep(0.001)


def claim_worker(args: dict[str, Any]) -> Any:
    """Claim batches until none are left. ``finish``: ``none`` (claim only), ``complete`` (claimed ->
    completed) or ``send`` (claimed -> sending -> completed with the executor's writes: each ending
    shares its commit with the next intent's ``sending``). Returns the ids and the seconds taken."""
    store = open_store(args["url"], migrate=False)
    owner, profile, finish = args["owner"], args["profile"], args.get("finish", "none")
    _wait(args["start_at"])
    started = time.perf_counter()
    ids: list[int] = []
    while batch := store.claim_intents(profile, owner=owner, now=T0, limit=args.get("batch", 20)):
        ids += [intent.id for intent in batch]
        if finish == "send":
            _send_all(store, profile, owner, [intent.id for intent in batch])
        elif finish != "none":
            for intent in batch:
                store.finish_intent(profile, intent.id, IntentStatus.COMPLETED, owner=owner, now=T0)
    elapsed = time.perf_counter() - started
    store.close()
    return {"ids": ids, "seconds": elapsed}


def _send_all(store: Store, profile: str, owner: str, ids: list[int]) -> None:
    ending = None
    for intent_id in [*ids, None]:
        store.finish_and_send(profile, ending=ending, send=intent_id, owner=owner, now=T0)
        ending = None if intent_id is None else Ending(intent_id, IntentStatus.COMPLETED)


def spend_worker(args: dict[str, Any]) -> Any:
    """Try to spend at each given minute offset from T0; return the offsets that were spent."""
    store = open_store(args["url"], migrate=False)
    gap = timedelta(minutes=args["gap_min"])
    _wait(args["start_at"])
    spent = [
        minute
        for minute in args["minutes"]
        if store.spend_attention(
            args["profile"], now=T0 + timedelta(minutes=minute), day="2026-07-07", cap=args["cap"],
            min_gap=gap, budget=args["budget"],
        )
    ]  # fmt: skip
    store.close()
    return spent


def finish_worker(args: dict[str, Any]) -> Any:
    """Complete each given ``sending`` intent as its owner (with ``finish_intent``, or with
    ``finish_and_send`` if ``hand_over``); return those it won."""
    store = open_store(args["url"], migrate=False)
    profile, owner = args["profile"], args["owner"]
    _wait(args["start_at"])
    won = []
    for intent_id in args["ids"]:
        if args.get("hand_over"):
            ending = Ending(intent_id, IntentStatus.COMPLETED)
            if not store.finish_and_send(profile, ending=ending, send=None, owner=owner, now=T0)[0]:
                continue
        else:
            try:
                store.finish_intent(profile, intent_id, IntentStatus.COMPLETED, owner=owner, now=T0)
            except ConflictError:
                continue
        won.append(intent_id)
    store.close()
    return won


def reap_worker(args: dict[str, Any]) -> Any:
    """Reap with a cutoff that moves forward a step at a time; return every id reaped."""
    store = open_store(args["url"], migrate=False)
    _wait(args["start_at"])
    reaped: list[int] = []
    for step in range(args["steps"]):
        cutoff = T0 + timedelta(seconds=step * args["step_s"])
        reaped += store.reap_stuck(cutoff=cutoff, now=T0 + timedelta(days=1))
    store.close()
    return reaped


def lock_worker(args: dict[str, Any]) -> Any:
    """Take the tick lock, touch ``marker`` once held, then hold it for ``hold_s`` seconds."""
    store = open_store(args["url"], migrate=False)
    with store.tick_lock(args["profile"], args["kind"], owner=args["owner"], now=T0) as held:
        Path(args["marker"]).write_text("held" if held else "refused", encoding="utf-8")
        time.sleep(args["hold_s"] if held else 0)
    store.close()
    return held


def executor_worker(args: dict[str, Any]) -> Any:
    """A real, armed executor process (``bench.executor_load``), started like the others."""
    from bench.executor_load import executor_worker as run  # noqa: PLC0415  (imports this)

    return run(args)


WORKERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "executor": executor_worker,
    "lock": lock_worker,
    "claim": claim_worker,
    "spend": spend_worker,
    "finish": finish_worker,
    "reap": reap_worker,
}


def run_processes(jobs: Sequence[tuple[str, dict[str, Any]]], *, lead_s: float = 1.5) -> list[Any]:
    """Start one process per ``(kind, args)``, all released at the same moment; their results."""
    start_at = time.time() + lead_s
    procs = [_start(kind, {**args, "start_at": start_at}) for kind, args in jobs]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"worker failed ({proc.returncode}): {err[-2000:]}")
        results.append(json.loads(out))
    return results


def start_process(kind: str, args: dict[str, Any]) -> subprocess.Popen[str]:
    """Start one worker now, without waiting for it."""
    return _start(kind, {**args, "start_at": 0})


def child_env() -> dict[str, str]:
    """This process's environment with the repository root first on ``PYTHONPATH``."""
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def _start(kind: str, args: dict[str, Any]) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "bench.store_load", kind, json.dumps(args)]
    # Our own module with an argument list and no shell.
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())


def main(argv: Sequence[str]) -> int:
    """``python -m bench.store_load KIND JSON``: run one worker, print its JSON result."""
    kind, raw = argv
    print(json.dumps(WORKERS[kind](json.loads(raw))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
