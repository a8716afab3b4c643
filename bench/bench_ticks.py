"""The operator ticks' figures, each as a ratio to a baseline measured in the same run (SQLite).

1. Fast-tick wall time with the instant offline model (so: everything but the model), at 1,000
   and at 1,000,000 progress rows (quick: 100,000), each database with 100,000 intents; rounds
   alternate between the two databases and the medians are compared. Wall time is mostly the
   fsync of each commit (synchronous=FULL), so the CPU time of the tick is reported too.
   Target <= 1.3.
   Then ``memory://`` (SQLite in memory, the test store) against a SQLite file, each with the same
   100,000 intents and 1,000 progress rows, rounds alternating, medians compared (with each round's
   ratio's min-max): what the test store buys. No target.
2. The fast tick's context packet in estimated tokens (UTF-8 bytes / 4): with 100 new
   observations and failed actions at 1,000 progress rows, and with 10,000 of each (quick: 2,000)
   at 1,000,000. Bounded (the packet's budget is 4,000 tokens) and flat as history grows.
3. Cold start of ``tickloop operator tick observe`` on an empty profile: CPU time (user + sys of the
   child, from ``os.wait4``) against ``python -c pass``, alternately in the same run, medians.
   The children cache bytecode as an installed package does (a development shell often sets
   ``PYTHONDONTWRITEBYTECODE``, which recompiles every module on every start); one warm-up run
   writes the cache. Target <= 6 (stretch 4).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._util import report, report_rounds
from bench.store_load import seed_intents, seed_progress
from tickloop.clock import SystemClock, utc_iso
from tickloop.config import load_settings
from tickloop.models.offline import OfflineModel
from tickloop.operator.context import estimated_tokens, user_message
from tickloop.operator.domain import IntentStatus, NewPlanStep
from tickloop.operator.offline import answer
from tickloop.operator.runner import TickContext, run_tick
from tickloop.operator.store import Store, open_store
from tickloop.operator.ticks import fast

P = "b"


def _prepare(url: str) -> Store:
    store = open_store(url)
    _seed_profile(url, store)
    return store


def _seed_profile(url: str, store: Store) -> None:
    now = SystemClock().now()
    store.create_profile(P, now=now)
    goal = store.add_goal_model(P, title="Ship the thesis", body="Chapter 3 by Friday", now=now)
    store.activate_goal_model(P, goal.version, now=now)
    store.replace_plan(P, goal.version, [NewPlanStep(f"step {i}") for i in range(5_000)], now=now)
    seed_intents(url, P, 100_000, store=store)


def _tick_ms(store: Store, ticks: int) -> tuple[float, float]:
    """Wall and CPU milliseconds per fast tick over ``ticks`` consecutive ticks."""
    model = OfflineModel(json_reply=answer)
    settings = load_settings({}, None)
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(ticks):
        code = run_tick(
            "fast", store=store, profile=P, settings=settings, env={}, log=lambda _: None, model=model
        )
        assert code == 0
    return (time.perf_counter() - started) * 1000 / ticks, (time.process_time() - cpu) * 1000 / ticks


def _packet_tokens(store: Store) -> int:
    ctx = TickContext(store, P, "fast", load_settings({}, None), SystemClock(), {}, lambda _: None, "bench")
    goal = store.active_goal_model(P)
    assert goal is not None
    packet, _, _ = fast.build_packet(ctx, goal, store.current_plan_step(P, goal.version))
    return estimated_tokens(user_message(packet))


def _history(url: str, n: int) -> None:
    """``n`` new tainted observations (mail-sized payloads) and ``n`` failed actions, in bulk."""
    now = utc_iso(SystemClock().now())
    body = json.dumps({"subject": "Re: chapter 3", "from": "bob@example.org", "excerpt": "x" * 1_500})
    with sqlite3.connect(url.removeprefix("sqlite://")) as conn:
        conn.executemany(
            "INSERT INTO observations (profile, source, content_hash, tainted, payload, observed_at)"
            " VALUES (?, 'mail:inbox', ?, 1, ?, ?)",
            ((P, f"sha256:bench{n}-{i}", body, now) for i in range(n)),
        )
    seed_intents(url, P, n, status=IntentStatus.FAILED)
    with sqlite3.connect(url.removeprefix("sqlite://")) as conn:
        conn.execute("UPDATE intents SET updated_at = ? WHERE status = 'failed'", (now,))
        conn.execute("ANALYZE")


def _fast_tick(quick: bool) -> None:  # noqa: FBT001
    small, large = 1_000, (100_000 if quick else 1_000_000)
    rounds, per_round = (5, 10) if quick else (11, 20)
    with tempfile.TemporaryDirectory() as folder:
        urls = {n: f"sqlite://{Path(folder) / f'ticks-{n}.db'}" for n in (small, large)}
        stores = {n: _prepare(url) for n, url in urls.items()}
        loaded = time.perf_counter()
        for n, url in urls.items():
            seed_progress(url, P, n)
            _history(url, 100 if n == small else (2_000 if quick else 10_000))
        print(f"sqlite: loaded {small + large:,} progress rows in {time.perf_counter() - loaded:.1f}s")
        # Before any tick: the observations are still new, so each packet is as full as it gets.
        tokens = {n: _packet_tokens(store) for n, store in stores.items()}
        # Every commit is fsynced (synchronous=FULL), so the disk's latency dominates a tick and
        # drifts with the machine's load: the two sizes alternate round by round, medians compared.
        times: dict[int, list[tuple[float, float]]] = {small: [], large: []}
        for _ in range(rounds):
            for n, store in stores.items():
                times[n].append(_tick_ms(store, per_round))
        for store in stores.values():
            store.close()
    for index, what in ((0, "wall"), (1, "CPU")):
        at_small, at_large = (sorted(t[index] for t in times[n])[rounds // 2] for n in (small, large))
        name = f"fast tick {what} (offline model), {large:,} vs {small:,} rows"
        report(name, at_large, at_small, target="<= 1.3", unit="ms")
    report("context packet, large vs small history", tokens[large], tokens[small], target="flat", unit="tok")


def _fast_tick_memory(quick: bool) -> None:  # noqa: FBT001
    rounds, per_round = (5, 10) if quick else (11, 20)
    with tempfile.TemporaryDirectory() as folder:
        urls = {"memory": "memory://", "file": f"sqlite://{Path(folder) / 'ticks.db'}"}
        stores = {kind: _prepare(url) for kind, url in urls.items()}
        for kind, store in stores.items():
            seed_progress(urls[kind], P, 1_000, store=store)
        times: dict[str, list[tuple[float, float]]] = {kind: [] for kind in stores}
        for _ in range(rounds):
            for kind, store in stores.items():
                times[kind].append(_tick_ms(store, per_round))
        for store in stores.values():
            store.close()
    for index, what in ((0, "wall"), (1, "CPU")):
        ours, base = ([t[index] for t in times[kind]] for kind in ("memory", "file"))
        report_rounds(f"fast tick {what}, memory:// vs sqlite file", ours, base, unit="ms")


def _cpu(args: list[str], env: dict[str, str]) -> float:
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{args} exited {proc.returncode}")
    return usage.ru_utime + usage.ru_stime


def _cold_start(quick: bool) -> None:  # noqa: FBT001
    rounds = 7 if quick else 21
    with tempfile.TemporaryDirectory() as folder:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("TICKLOOP_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        env.update(
            TICKLOOP_STORE=f"sqlite://{Path(folder) / 'cold.db'}",
            TICKLOOP_CONFIG=str(Path(folder) / "config.toml"),
            XDG_STATE_HOME=str(Path(folder) / "state"),
        )
        (Path(folder) / "config.toml").write_text("")
        tick = [sys.executable, "-m", "tickloop", "operator", "tick", "observe"]
        _cpu([sys.executable, "-m", "tickloop", "operator", "init", "--goal", "g"], env)
        _cpu(tick, env)  # warm-up: writes the bytecode cache
        runs: dict[str, list[float]] = {"pass": [], "tick": []}
        commands: dict[str, Callable[[], float]] = {
            "pass": lambda: _cpu([sys.executable, "-c", "pass"], env),
            "tick": lambda: _cpu(tick, env),
        }
        for _ in range(rounds):  # alternating, so a busy spell of the machine hits both alike
            for name, command in commands.items():
                runs[name].append(command())
    tick_ms, pass_ms = (sorted(runs[n])[len(runs[n]) // 2] * 1000 for n in ("tick", "pass"))
    report("cold start: operator tick observe (CPU, median)", tick_ms, pass_ms, target="<= 6", unit="ms")


def run(quick: bool) -> None:  # noqa: FBT001  (the bench runner's fixed signature)
    _fast_tick(quick)
    _fast_tick_memory(quick)
    _cold_start(quick)
