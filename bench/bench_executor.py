"""The executor's throughput, as a ratio to the store's raw claim-and-complete loop in the same run.

Intents executed per second by real, armed executor passes (``TICKLOOP_DRY_RUN=0``) with a no-op
reversible handler (``tickloop.testing.executor_load``'s ``sink`` with no sink file), for 1 and 4
executors on SQLite and PostgreSQL. The baseline is ``bench_store``'s own measurement: claim 10,
complete each in its own transaction (one process in-process; four as worker processes). An
executor pass does more per intent than that loop: it must write ``sending`` before the side effect
and the ending after it, two commits where the loop has one, so about 0.5 is the ceiling where a
commit dominates (PostgreSQL). Target >= 0.5. A second line compares against the same store loop
with the ``sending`` step (``claim_worker``'s ``send``): the executor's own cost on top of its writes.
"""

from __future__ import annotations

import time
from statistics import median

from bench._util import report
from bench.bench_store import _claim_complete, _database
from tickloop.operator.store import Store, open_store
from tickloop.testing.executor_load import SINK_TYPE, ShiftedClock, armed_context, drain, register_sink
from tickloop.testing.store_load import claim_worker, run_processes, seed_intents


def _executor_rate(store: Store, profile: str, epoch: float) -> float:
    """Intents per second executed by one armed executor draining ``profile``'s queue in-process."""
    ctx = armed_context(store, profile, "bench-executor", ShiftedClock(epoch))
    started = time.perf_counter()
    done = drain(ctx)
    return done / (time.perf_counter() - started)


def _four(url: str, kind: str, profile: str, epoch: float, finish: str = "complete") -> float:
    job = {"url": url, "profile": profile, "epoch": epoch, "batch": 10, "finish": finish}
    results = run_processes([(kind, {**job, "owner": f"{kind}-{k}"}) for k in range(4)])
    count = sum(r["executed"] if kind == "executor" else len(r["ids"]) for r in results)
    return count / max(r["seconds"] for r in results)


def _claim_send_complete(url: str, profile: str) -> float:
    """The store's loop with the executor's write pattern: claim, ``sending``, complete."""
    done = claim_worker({"url": url, "profile": profile, "owner": "raw", "finish": "send", "start_at": 0})
    return len(done["ids"]) / done["seconds"]


def _throughput(backend: str, url: str, *, quick: bool) -> None:
    rounds, per_round = (3, 200) if quick else (5, 800)
    epoch = time.time()
    register_sink(None)  # the no-op handler, in this process
    queues = (("raw", "note"), ("send", "note"), ("ex", SINK_TYPE))
    with open_store(url) as store:
        raw, send, ours = [], [], []
        # Alternating rounds, each on its own profile so a pass drains exactly one round's intents.
        for r in range(rounds):
            for name, action in queues:
                store.create_profile(f"{name}{r}", now=ShiftedClock(epoch).now())
                seed_intents(url, f"{name}{r}", per_round, action_type=action)
            raw.append(_claim_complete(store, f"raw{r}", per_round))
            send.append(_claim_send_complete(url, f"send{r}"))
            ours.append(_executor_rate(store, f"ex{r}", epoch))
        report(f"{backend}: executor, 1 process", median(ours), median(raw), target=">= 0.5")
        report(f"{backend}:   vs claim+sending+complete", median(ours), median(send))
        for name, action in (*queues, ("raw_after", "note")):
            store.create_profile(f"{name}_four", now=ShiftedClock(epoch).now())
            seed_intents(url, f"{name}_four", rounds * per_round * 2, action_type=action)
    before = _four(url, "claim", "raw_four", epoch)
    sending = _four(url, "claim", "send_four", epoch, finish="send")
    four = _four(url, "executor", "ex_four", epoch)
    after = _four(url, "claim", "raw_after_four", epoch)
    report(f"{backend}: executor, 4 processes", four, (before + after) / 2, target=">= 0.5")
    report(f"{backend}:   vs claim+sending+complete", four, sending)


def run(quick: bool) -> None:  # noqa: FBT001  (the bench runner's fixed signature)
    for backend in ("sqlite", "postgres"):
        with _database(backend) as url:
            if url is not None:
                _throughput(backend, url, quick=quick)
