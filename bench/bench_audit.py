"""Issues 16 and 26: ``audit verify`` and ``audit replay`` throughput against a bare ``json.loads`` loop,
and the peak RSS of each as a child process (``VmHWM``, read while it runs).

The baseline reads the same files and runs ``json.loads`` on every line, nothing else: the least any
reader of these records must do. Rounds alternate baseline and ours in the same run; each ratio is
printed with its min-max over the rounds. Sizes (records) come from ``BENCH_AUDIT_SIZES``
(default ``1000,100000``; ``--quick``: ``1000,10000``; 1M takes about 5 minutes here, so it is asked for:
``BENCH_AUDIT_SIZES=1000,100000,1000000 make bench BENCH_ARGS=audit``). Targets: verify >= 0.3 and replay
>= 0.2 of the baseline, flat across sizes, after the canonical check of every line; peak RSS at 1M
records under 100 MB for both.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench._util import peak_rss_kib
from tickloop.audit import session_file_name, verify_file
from tickloop.audit.replay import replay
from tickloop.protocol.ledger import GENESIS, RecordType, canonical, chain_digest, record
from tickloop.protocol.policy import compile_policy

R = RecordType
SESSION = "bench"
REPLY = "noted."
REPLY_SHA = hashlib.sha256(REPLY.encode()).hexdigest()
ROUNDS = 3


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_session(directory: Path, records: int) -> tuple[Path, Path]:
    """A chained ledger of about ``records`` records (runs of 3 steps) and its matching transcript."""
    policy = compile_policy("default", "tick")
    fields = {"policyId": "default", "timeStepSha256": policy.time_step_sha256, "timeStepBytes": 4}
    ledger_path = directory / "ledger.jsonl"
    sessions = directory / "sessions"
    sessions.mkdir()
    transcript_path = sessions / session_file_name(SESSION)
    now = datetime(2026, 11, 30, tzinfo=UTC)
    prev, seq, turn, run = GENESIS, 0, 0, 0
    with ledger_path.open("wb") as ledger, transcript_path.open("w") as transcript:

        def put(kind: RecordType, **extra: object) -> None:
            nonlocal prev, seq, now
            now += timedelta(milliseconds=1)
            seq += 1
            rec = {**record(kind, recorded_at=now, session_id=SESSION, **extra), "seq": seq, "prev": prev}
            line = canonical(rec)
            prev = chain_digest(line)
            ledger.write(line + b"\n")

        def say(source: dict[str, str], text: str, meta: dict[str, object] | None = None) -> None:
            nonlocal turn
            turn += 1
            content = [{"type": "text", "text": text}]
            msg = {"type": "message", "turn": turn, "role": "user", "content": content, "source": source}
            transcript.write(json.dumps({**msg, **({"meta": meta} if meta else {}), "at": _iso(now)}) + "\n")
            reply = {"type": "message", "turn": turn, "role": "assistant", "source": {"kind": "assistant"}}
            transcript.write(json.dumps({**reply, "content": [{"type": "text", "text": REPLY}]}) + "\n")
            done = {"type": "terminal", "turn": turn, "status": "completed", "usageReported": False}
            transcript.write(json.dumps({**done, "at": _iso(now)}) + "\n")

        transcript.write(
            json.dumps({"type": "session", "id": SESSION, "version": 1, "createdAt": _iso(now)}) + "\n"
        )
        while seq < records:
            run += 1
            run_id = f"{run:032x}"
            say({"kind": "user"}, "hello")
            put(
                R.LOOP_ARMED,
                runId=run_id,
                requested=3,
                resume=False,
                rule="admit.ok",
                next="next.ok",
                **fields,
            )
            for step in (1, 2, 3):
                due = _iso(now + timedelta(milliseconds=1))
                put(R.TICK_SCHEDULED, runId=run_id, step=step, rule="next.ok", dueAt=due, **fields)
                put(R.TICK_ENQUEUED, runId=run_id, step=step, **fields)
                say(
                    {"kind": "plugin", "plugin": "tickloop"},
                    "tick",
                    {"runId": run_id, "step": step, "of": 3, "policy": "default"},
                )
                put(
                    R.TICK_TERMINAL,
                    runId=run_id,
                    step=step,
                    status="completed",
                    usageReported=False,
                    replySha256=REPLY_SHA,
                    **fields,
                )
            put(R.LOOP_COMPLETE, runId=run_id, rule="next.target_reached", steps=3, **fields)
    return ledger_path, sessions


def _loads(*paths: Path) -> Callable[[], None]:
    def run() -> None:
        for path in paths:
            with path.open("rb") as handle:
                for line in handle:
                    json.loads(line)

    return run


def _timed(fn: Callable[[], None], reps: int) -> float:
    """Seconds per call of ``fn``, over ``reps`` calls (small files are repeated to be measurable)."""
    started = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - started) / reps


def _ratios(
    name: str, records: int, baseline: Callable[[], None], ours: Callable[[], None], target: str
) -> None:
    ratios, rates = [], []
    reps = max(1, 50_000 // records)
    for _ in range(ROUNDS):
        base = _timed(baseline, reps)
        mine = _timed(ours, reps)
        ratios.append(base / mine)
        rates.append(records / mine)
    ratios.sort()
    median = ratios[len(ratios) // 2]
    print(
        f"{name:<8} {records:>9,} records  {max(rates):>12,.0f} records/s  "
        f"ratio {median:.3f} (min-max {ratios[0]:.3f}-{ratios[-1]:.3f})  target {target}",
        flush=True,
    )


def child_peak_mib(args: list[str], cwd: Path) -> float:
    """MiB of peak RSS of ``tickloop ARGS`` run as a child, from its own ``VmHWM`` while it runs
    (``ru_maxrss`` would count this large process, which the child is forked from before its exec)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env["TICKLOOP_CONFIG"] = os.devnull
    child = subprocess.Popen(
        [sys.executable, "-m", "tickloop", *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL
    )
    return peak_rss_kib(child) / 1024


def run(*, quick: bool = False) -> None:
    default = "1000,10000" if quick else "1000,100000"
    sizes = [int(size) for size in os.environ.get("BENCH_AUDIT_SIZES", default).split(",")]
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            ledger, sessions = write_session(Path(tmp), size)
            transcript = sessions / session_file_name(SESSION)
            count = sum(1 for _ in ledger.open("rb"))

            def verify_once(path: Path = ledger) -> None:
                report, _ = verify_file(path)
                assert report.ok, report.violations[:3]

            def replay_once(path: Path = ledger, directory: Path = sessions) -> None:
                assert replay(path, directory).ok

            _ratios("verify", count, _loads(ledger), verify_once, ">= 0.3")
            _ratios("replay", count, _loads(ledger, transcript), replay_once, ">= 0.2")
            verify_mib = child_peak_mib(["audit", "verify", str(ledger)], Path(tmp))
            replay_mib = child_peak_mib(
                ["audit", "replay", str(ledger), "--sessions-dir", str(sessions)], Path(tmp)
            )
            print(
                f"peak RSS {count:>9,} records  verify {verify_mib:.0f} MiB  replay {replay_mib:.0f} MiB  "
                "(child VmHWM; target < 100 MB at 1M)",
                flush=True,
            )
