"""The physical limit the store's figures are fractions of: ``UPDATE one row; COMMIT`` in a loop.

``raw_rate(url, seconds)`` measures it on one connection in this process. ``raw_rate_parallel(url, n,
seconds)`` starts ``n`` processes (``python -m bench._raw JSON``), released at the same moment, each
updating its own row on its own connection, and sums their commits: the baseline of an n-process
figure (n writers commit together: group commit on PostgreSQL, a queue on SQLite's one write lock).
Same database, same settings as the store (SQLite: WAL, synchronous=FULL).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

_TABLE = "CREATE TABLE IF NOT EXISTS bench_counter (id INTEGER PRIMARY KEY, v INTEGER)"


def _loop(once: Callable[[], None], seconds: float) -> tuple[int, float]:
    commits, started = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds or commits < 10:
        once()
        commits += 1
    return commits, elapsed


def raw_commits(url: str, seconds: float, *, row: int = 1, start_at: float = 0.0) -> tuple[int, float]:
    """Commits of ``UPDATE bench_counter row; COMMIT`` in about ``seconds``, and the seconds taken."""
    if url.startswith("sqlite://"):
        conn = sqlite3.connect(url.removeprefix("sqlite://"), isolation_level=None, timeout=30)
        for pragma in ("journal_mode=WAL", "busy_timeout=30000", "synchronous=FULL"):
            conn.execute(f"PRAGMA {pragma}")
        conn.execute(_TABLE)
        conn.execute("INSERT OR IGNORE INTO bench_counter VALUES (?, 0)", (row,))

        def sqlite_once() -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("UPDATE bench_counter SET v = v + 1 WHERE id = ?", (row,))
            conn.execute("COMMIT")

        try:
            time.sleep(max(0.0, start_at - time.time()))
            return _loop(sqlite_once, seconds)
        finally:
            conn.close()
    import psycopg  # noqa: PLC0415

    # Autocommit: the UPDATE is its own transaction, one round trip and one commit, as the store's
    # single-statement writes are (with BEGIN and COMMIT sent apart it took three round trips).
    with psycopg.connect(url, autocommit=True) as pg:
        pg.execute(_TABLE)
        pg.execute("INSERT INTO bench_counter VALUES (%s, 0) ON CONFLICT DO NOTHING", (row,))

        def pg_once() -> None:
            pg.execute("UPDATE bench_counter SET v = v + 1 WHERE id = %s", (row,))

        time.sleep(max(0.0, start_at - time.time()))
        return _loop(pg_once, seconds)


def raw_rate(url: str, seconds: float) -> float:
    """Commits per second on one connection, in this process."""
    commits, elapsed = raw_commits(url, seconds)
    return commits / elapsed


def raw_rate_parallel(url: str, processes: int, seconds: float, *, lead_s: float = 1.5) -> float:
    """Commits per second of ``processes`` processes at once, each on its own connection and row."""
    start_at = time.time() + lead_s
    procs = []
    for k in range(processes):
        job = json.dumps({"url": url, "seconds": seconds, "row": k + 1, "start_at": start_at})
        argv = [sys.executable, "-m", "bench._raw", job]
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, text=True))
    results: list[dict[str, Any]] = []
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"raw loop process failed ({proc.returncode})")
        results.append(json.loads(out))
    return sum(r["commits"] for r in results) / max(r["seconds"] for r in results)


def main(argv: list[str]) -> int:
    """``python -m bench._raw JSON``: one raw loop; prints ``{"commits": N, "seconds": S}``."""
    args = json.loads(argv[0])
    commits, elapsed = raw_commits(args["url"], args["seconds"], row=args["row"], start_at=args["start_at"])
    print(json.dumps({"commits": commits, "seconds": elapsed}))  # the result travels on stdout
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
