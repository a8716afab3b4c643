"""The executor's throughput, as a ratio to the store's raw claim-and-complete loop in the same run.

Intents executed per second by real, armed executor passes (``TICKLOOP_DRY_RUN=0``) with a no-op
reversible handler (``bench.executor_load``'s ``sink`` with no sink file), its log lines
written to a file as a tick writes them to stderr, for 1 and 4 executors on SQLite and PostgreSQL.
The baseline is ``bench_store``'s own measurement: claim 10, complete each in its own transaction
(one process in-process; four as worker processes). An executor pass does more per intent than that
loop: it must commit ``sending`` before the side effect and the ending after it. It commits each
ending together with the next intent's ``sending`` (``Store.finish_and_send``), so a batch of 10
costs 12 commits where the loop spends 11. Target >= 0.5. A second line compares against the same
store loop with the executor's writes (``claim_worker``'s ``send``): the executor's own cost on top
of them.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from statistics import median

from bench._util import report
from bench.bench_store import _claim_complete, _database
from bench.executor_load import (
    SINK_TYPE,
    ShiftedClock,
    armed_context,
    drain,
    line_log,
    register_sink,
)
from bench.store_load import claim_worker, run_processes, seed_intents
from tickloop.operator.store import Store, open_store


def _executor_rate(store: Store, profile: str, epoch: float, log: Path) -> float:
    """Intents per second executed by one armed executor draining ``profile``'s queue in-process,
    writing its log lines to a file as a tick writes them to stderr."""
    clock = ShiftedClock(epoch)
    with log.open("a", encoding="utf-8") as stream:
        ctx = armed_context(store, profile, "bench-executor", clock, log=line_log(stream, clock))
        started = time.perf_counter()
        done = drain(ctx)
        return done / (time.perf_counter() - started)


def _four(url: str, kind: str, profile: str, epoch: float, *, log: Path, finish: str = "complete") -> float:
    job = {"url": url, "profile": profile, "epoch": epoch, "batch": 10, "finish": finish, "log": str(log)}
    results = run_processes([(kind, {**job, "owner": f"{kind}-{k}"}) for k in range(4)])
    count = sum(r["executed"] if kind == "executor" else len(r["ids"]) for r in results)
    return count / max(r["seconds"] for r in results)


def _claim_send_complete(url: str, profile: str) -> float:
    """The store's loop with the executor's writes: claim, then each ``sending`` with the last ending."""
    done = claim_worker({"url": url, "profile": profile, "owner": "raw", "finish": "send", "start_at": 0})
    return len(done["ids"]) / done["seconds"]


_QUEUES = (("raw", "note"), ("send", "note"), ("ex", SINK_TYPE))
_FOUR = (*_QUEUES, ("raw_after", "note"))


def _seed(store: Store, url: str, epoch: float, rounds: int, per_round: int) -> None:
    """Every queue, one profile each, so a pass drains exactly one queue. All before anything is
    measured: seeding truncates SQLite's WAL, and whatever ran first after it would pay for
    growing the file again (measurably slower, and always the same queue)."""
    queues = [(f"{name}{r}", action, per_round) for r in range(rounds) for name, action in _QUEUES]
    queues += [(f"{name}_four", action, rounds * per_round * 2) for name, action in _FOUR]
    for profile, action, count in queues:
        store.create_profile(profile, now=ShiftedClock(epoch).now())
        seed_intents(url, profile, count, action_type=action)


def _one_process(backend: str, store: Store, url: str, epoch: float, *, log: Path, rounds: int) -> None:
    measure = {
        "raw": lambda r: _claim_complete(store, f"raw{r}", 10**9),  # the whole queue, as a pass takes it
        "send": lambda r: _claim_send_complete(url, f"send{r}"),
        "ex": lambda r: _executor_rate(store, f"ex{r}", epoch, log),
    }
    rates: dict[str, list[float]] = {name: [] for name in measure}
    for r in range(rounds):
        # Alternating rounds, each starting with another queue: no queue always runs in one position.
        names = [name for name, _ in _QUEUES]
        for name in names[r % 3 :] + names[: r % 3]:
            rates[name].append(measure[name](r))
    report(f"{backend}: executor, 1 process", median(rates["ex"]), median(rates["raw"]), target=">= 0.5")
    report(f"{backend}:   vs claim+sending+complete", median(rates["ex"]), median(rates["send"]))


def _four_processes(backend: str, url: str, epoch: float, log: Path) -> None:
    before = _four(url, "claim", "raw_four", epoch, log=log)
    sending = _four(url, "claim", "send_four", epoch, log=log, finish="send")
    four = _four(url, "executor", "ex_four", epoch, log=log)
    after = _four(url, "claim", "raw_after_four", epoch, log=log)
    report(f"{backend}: executor, 4 processes", four, (before + after) / 2, target=">= 0.5")
    report(f"{backend}:   vs claim+sending+complete", four, sending)


def _throughput(backend: str, url: str, log: Path, *, quick: bool) -> None:
    rounds, per_round = (3, 200) if quick else (5, 800)
    epoch = time.time()
    register_sink(None)  # the no-op handler, in this process
    with open_store(url) as store:
        _seed(store, url, epoch, rounds, per_round)
        _one_process(backend, store, url, epoch, log=log, rounds=rounds)
    _four_processes(backend, url, epoch, log)


def run(quick: bool) -> None:  # noqa: FBT001  (the bench runner's fixed signature)
    for backend in ("sqlite", "postgres"):
        with _database(backend) as url, tempfile.TemporaryDirectory() as folder:
            if url is not None:
                _throughput(backend, url, Path(folder) / "executor.log", quick=quick)
