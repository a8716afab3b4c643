"""Regenerate the golden ledgers: ``python tests/golden/make_ledgers.py``.

``valid.jsonl`` is a chained ledger of a real-looking session; every other file breaks exactly one
invariant, named by the file (``<rule>.jsonl`` for rule ``verify.<rule>``). The files are committed;
this script documents how each was made.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tickloop.protocol.ledger import GENESIS, RecordType, canonical, chain_digest, record
from tickloop.protocol.policy import compile_policy

HERE = Path(__file__).parent / "ledgers"
POLICY = compile_policy("default", "tick")
P = {
    "policyId": POLICY.id,
    "timeStepSha256": POLICY.time_step_sha256,
    "timeStepBytes": POLICY.time_step_bytes,
}
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
R = RecordType


def base() -> list[dict[str, Any]]:
    """A session: run A completes 3 steps, a refused /tick, run B stops on an error terminal."""
    steps: list[tuple[RecordType, dict[str, Any]]] = [
        (R.LOOP_ARMED, {"runId": "A", "requested": 3, "resume": False, **P}),
    ]
    for step in (1, 2, 3):
        steps += [
            (R.TICK_SCHEDULED, {"runId": "A", "step": step, "delayMs": 1000, **P}),
            (R.TICK_ENQUEUED, {"runId": "A", "step": step, **P}),
            (R.TICK_TERMINAL, {"runId": "A", "step": step, "status": "completed", **P}),
        ]
    steps += [
        (R.LOOP_COMPLETE, {"runId": "A", "rule": "next.target_reached", **P}),
        (R.COMMAND_REJECTED, {"rule": "command.count_out_of_range", "token": "0", "line": "/tick 0"}),
        (R.LOOP_ARMED, {"runId": "B", "requested": 2, "resume": False, **P}),
        (R.TICK_SCHEDULED, {"runId": "B", "step": 1, "delayMs": 1000, **P}),
        (R.TICK_ENQUEUED, {"runId": "B", "step": 1, **P}),
        (R.TICK_TERMINAL, {"runId": "B", "step": 1, "status": "error", **P}),
        (R.LOOP_STOPPED, {"runId": "B", "rule": "next.terminal_not_completed", **P}),
    ]
    return [
        record(kind, recorded_at=T0 + timedelta(seconds=i), session_id="golden", **fields)
        for i, (kind, fields) in enumerate(steps)
    ]


def write(
    name: str, records: list[dict[str, Any]], *, chain: bool = True, seqs: list[int] | None = None
) -> None:
    lines, prev = [], GENESIS
    for i, rec in enumerate(records):
        stamped = {**rec, "seq": seqs[i] if seqs else i + 1}
        if chain:
            stamped["prev"] = prev
        line = canonical(stamped)
        prev = chain_digest(line)
        lines.append(line)
    (HERE / name).write_bytes(b"".join(line + b"\n" for line in lines))


def edited(index: int, **changes: Any) -> list[dict[str, Any]]:
    recs = base()
    recs[index] = {**recs[index], **changes}
    return recs


def inserted(index: int, rec: dict[str, Any]) -> list[dict[str, Any]]:
    recs = base()
    recs.insert(index, rec)
    return recs


def _at(kind: RecordType, **fields: Any) -> dict[str, Any]:
    return record(kind, recorded_at=T0, session_id="golden", **fields)


def main() -> None:
    HERE.mkdir(exist_ok=True)
    write("valid.jsonl", base())
    write("valid_unchained.jsonl", base(), chain=False)
    n = len(base())
    cases: dict[str, list[dict[str, Any]]] = {
        "concurrent_runs": _concurrent(),
        "enqueue_beyond_target": _beyond(),
        "enqueue_without_completed_terminal": edited(6, status="error"),
        "resume_misuse": edited(0, resumeBoundary=True),
        "policy_changed": edited(5, timeStepSha256="0" * 64),
        "record_after_close": inserted(11, _at(R.LOOP_STOPPED, runId="A", rule="stop.user", **P)),
        "missing_rule": _without_rule(),
        "unknown_run": inserted(11, _at(R.TICK_TERMINAL, runId="Z", step=1, status="completed", **P)),
        "complete_short": _short(),
        "step_order": edited(5, step=3),
        "session_mixed": edited(4, sessionId="other"),
        "terminal_out_of_order": inserted(
            4, _at(R.TICK_TERMINAL, runId="A", step=2, status="completed", **P)
        ),
    }
    for name, records in cases.items():
        write(f"{name}.jsonl", records)
    write("seq_order.jsonl", base(), seqs=[*range(1, 6), *range(7, n + 2)])
    # Tampering after the fact: a changed timestamp no longer matches the next record's prev.
    lines = (HERE / "valid.jsonl").read_bytes().splitlines()
    lines[3] = lines[3].replace(b"09:00:03", b"09:00:09")
    (HERE / "chain_broken.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    lines = (HERE / "valid_unchained.jsonl").read_bytes().splitlines()
    lines[11] = lines[11][:30]  # the command_rejected record, cut mid-way: not JSON
    (HERE / "malformed.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    torn = (HERE / "valid.jsonl").read_bytes() + b'{"schema":"tickloop.audit.v1","type":"loop_ar'
    (HERE / "torn_tail.jsonl").write_bytes(torn)


def _beyond() -> list[dict[str, Any]]:
    """Run B asks for 1 step, completes it, and enqueues a second anyway."""
    recs = base()[:12]
    recs.append(_at(R.LOOP_ARMED, runId="B", requested=1, resume=False, **P))
    recs += [
        _at(R.TICK_ENQUEUED, runId="B", step=1, **P),
        _at(R.TICK_TERMINAL, runId="B", step=1, status="completed", **P),
        _at(R.TICK_ENQUEUED, runId="B", step=2, **P),
    ]
    return recs


def _concurrent() -> list[dict[str, Any]]:
    """Run C is armed (and stopped) while run A is still active."""
    recs = base()
    recs[3:3] = [
        _at(R.LOOP_ARMED, runId="C", requested=1, resume=False, **P),
        _at(R.LOOP_STOPPED, runId="C", rule="stop.user", **P),
    ]
    return recs


def _without_rule() -> list[dict[str, Any]]:
    recs = base()
    recs[-1] = {k: v for k, v in recs[-1].items() if k != "rule"}
    return recs


def _short() -> list[dict[str, Any]]:
    """Run A closes as complete after two of its three steps."""
    recs = base()
    return recs[:7] + recs[10:]


if __name__ == "__main__":
    main()
    print(json.dumps(sorted(p.name for p in HERE.iterdir())))
