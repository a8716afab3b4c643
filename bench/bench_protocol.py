"""Issue 2's figures: the /tick parser against ``str.split``, durable ledger appends against raw fsync.

Both baselines do the irreducible part of the same job on the same input in the same run:
``str.split`` tokenises the same lines; ``os.write`` + ``os.fsync`` writes the same bytes durably.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from bench._util import rate, report
from tickloop.audit.ledger import LedgerFile
from tickloop.errors import TickCommandError
from tickloop.protocol.command import parse_tick
from tickloop.protocol.ledger import RecordType, canonical, record
from tickloop.protocol.policy import PolicySet

LINES = [
    "/tick",
    "/tick 12",
    "/tick 3 --policy=reflective-en --resume",
    "/tick --policy reflective-en 40",
    "/tick status",
    "/tick 0",
    "/tick 1e3 --bogus",
]


def bench_parser(seconds: float) -> None:
    policies = PolicySet({"reflective-en": "tick — continue"})

    def parse_all() -> None:
        for line in LINES:
            with contextlib.suppress(TickCommandError):
                parse_tick(line, default_count=6, default_policy="default", known_policies=policies)

    def split_all() -> None:
        for line in LINES:
            line.split()

    baseline = rate(split_all, seconds=seconds) * len(LINES)
    ours = rate(parse_all, seconds=seconds) * len(LINES)
    report("parse_tick lines/s vs str.split", ours, baseline)


def bench_appends(seconds: float, directory: Path) -> None:
    now = datetime(2026, 11, 30, tzinfo=UTC)
    rec = record(
        RecordType.TICK_ENQUEUED,
        recorded_at=now,
        session_id="bench",
        runId="r",
        step=1,
        policyId="default",
        timeStepBytes=4,
        timeStepSha256="55a4bc5be68ea5c30cbe4d07e3bf951163b5a207dfd628ea53a2eb21072a9f3b",
    )
    line = canonical({**rec, "seq": 1}) + b"\n"
    raw_fd = os.open(directory / "raw.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def raw_append() -> None:
        os.write(raw_fd, line)
        os.fsync(raw_fd)

    # Interleave rounds so drift in the shared machine's disk speed hits both sides alike.
    raw_total = ours_total = 0.0
    for round_no in range(3):
        raw_total += rate(raw_append, seconds=seconds / 3)
        with LedgerFile(directory / f"ours{round_no}.jsonl") as ledger:
            ours_total += rate(lambda ledger=ledger: ledger.append(rec), seconds=seconds / 3)  # type: ignore[misc]
    os.close(raw_fd)
    report("durable ledger appends/s vs os.write+fsync", ours_total / 3, raw_total / 3, target=">= 0.8")
    with LedgerFile(directory / "chained.jsonl", chain=True) as chained:
        chained_rate = rate(lambda: chained.append(rec), seconds=seconds / 3)
    report("chained ledger appends/s vs os.write+fsync", chained_rate, raw_total / 3)


def run(*, quick: bool = False) -> None:
    seconds = 0.5 if quick else 3.0
    bench_parser(seconds)
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        bench_appends(seconds, Path(tmp))
