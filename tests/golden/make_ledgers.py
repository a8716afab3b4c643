"""Regenerate the golden ledgers: ``python tests/golden/make_ledgers.py``.

``valid.jsonl`` is a chained ledger shaped exactly like what ``tickloop chat`` writes; every other
file breaks exactly one rule, named by the file (``<rule>.jsonl`` for rule ``verify.<rule>``).
``OPTIONS`` says how a file is verified when the rule needs it (``--strict``, a key, a seal, a small
record cap). The files are committed; this script documents how each was made.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tickloop.protocol.ledger import GENESIS, RecordType, Seal, canonical, chain_digest, mac_of, record
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
KEY = b"golden-audit-key"  #: the key of ``mac_mismatch.jsonl`` (a test key, not a secret)
#: How each golden file is verified when its rule needs more than the defaults.
OPTIONS: dict[str, dict[str, Any]] = {
    "open_run": {"strict": True},
    "torn_tail": {"strict": True},
    "mac_mismatch": {"key": KEY},
    "record_too_large": {"max_record_bytes": 2048},
    "seal_mismatch": {"seal": "seal_mismatch.seal"},
    "empty": {"strict": True},
    "unchained": {"require_chain": True},
    "unkeyed": {"key": KEY, "require_key": True},
    "session_file": {"file_name": "session-other.jsonl"},
}


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def base() -> list[dict[str, Any]]:
    """A session: run A completes 3 steps, a refused /tick, run B stops on an error terminal."""
    steps: list[tuple[RecordType, dict[str, Any]]] = [
        (
            R.LOOP_ARMED,
            {"runId": "A", "requested": 3, "resume": False, "rule": "admit.ok", "next": "next.ok"},
        ),
    ]
    for step in (1, 2, 3):
        steps += [
            (R.TICK_SCHEDULED, {"runId": "A", "step": step, "rule": "next.ok", "dueAt": "+1"}),
            (R.TICK_ENQUEUED, {"runId": "A", "step": step}),
            (R.TICK_TERMINAL, {"runId": "A", "step": step, "status": "completed", "usageReported": False}),
        ]
    steps += [
        (R.LOOP_COMPLETE, {"runId": "A", "rule": "next.target_reached", "steps": 3}),
        (R.COMMAND_REJECTED, {"rule": "command.count_out_of_range", "token": "0"}),
        (
            R.LOOP_ARMED,
            {"runId": "B", "requested": 2, "resume": False, "rule": "admit.ok", "next": "next.ok"},
        ),
        (R.TICK_SCHEDULED, {"runId": "B", "step": 1, "rule": "next.ok", "dueAt": "+1"}),
        (R.TICK_ENQUEUED, {"runId": "B", "step": 1}),
        (R.TICK_TERMINAL, {"runId": "B", "step": 1, "status": "error"}),
        (R.LOOP_STOPPED, {"runId": "B", "rule": "next.terminal_not_completed", "steps": 1}),
    ]
    out = []
    for i, (kind, given) in enumerate(steps):
        at = T0 + timedelta(seconds=i)
        fields = {**given, **P} if "runId" in given else dict(given)
        if fields.get("dueAt") == "+1":
            fields["dueAt"] = _iso(at + timedelta(seconds=1))
        out.append(record(kind, recorded_at=at, session_id="golden", **fields))
    return out


def lines_of(
    records: list[dict[str, Any]],
    *,
    chain: bool = True,
    seqs: list[int] | None = None,
    key: bytes | None = None,
) -> list[bytes]:
    lines, prev = [], GENESIS
    for i, rec in enumerate(records):
        stamped = {**rec, "seq": seqs[i] if seqs else i + 1}
        if chain or key:
            stamped["prev"] = prev
        if key:
            stamped["mac"] = mac_of(canonical(stamped), key)
        line = canonical(stamped)
        prev = chain_digest(line)
        lines.append(line)
    return lines


def write(name: str, records: list[dict[str, Any]], **how: Any) -> None:
    (HERE / name).write_bytes(b"".join(line + b"\n" for line in lines_of(records, **how)))


def edited(index: int, **changes: Any) -> list[dict[str, Any]]:
    recs = base()
    recs[index] = {**recs[index], **changes}
    return recs


def inserted(index: int, rec: dict[str, Any]) -> list[dict[str, Any]]:
    recs = base()
    recs.insert(index, rec)
    return recs


def dropped(*indexes: int) -> list[dict[str, Any]]:
    return [rec for i, rec in enumerate(base()) if i not in indexes]


def _at(kind: RecordType, index: int = 11, **fields: Any) -> dict[str, Any]:
    """A record timed like base()[index] (so time order holds where it is inserted)."""
    if "runId" in fields:
        fields = {**P, **fields}
    return record(kind, recorded_at=T0 + timedelta(seconds=index), session_id="golden", **fields)


def without(index: int, name: str) -> list[dict[str, Any]]:
    recs = base()
    recs[index] = {k: v for k, v in recs[index].items() if k != name}
    return recs


def main() -> None:
    HERE.mkdir(exist_ok=True)
    for old in HERE.iterdir():
        old.unlink()
    write("valid.jsonl", base())
    write("valid_unchained.jsonl", base(), chain=False)
    write("valid_keyed.jsonl", base(), key=KEY)
    n = len(base())
    late = _at(R.LOOP_ARMED, 11, runId="A", requested=1, resume=False, rule="admit.ok", next="next.ok")
    cases: dict[str, list[dict[str, Any]]] = {
        "concurrent_runs": _concurrent(),
        "enqueue_beyond_target": _beyond(),
        "schedule_without_completed_terminal": edited(3, status="error", usageReported=None),
        "resume_misuse": edited(0, resumeBoundary=True),
        "policy_changed": edited(5, policyId="relabelled"),
        "policy_conflict": _conflict(),
        "future_time": edited(n - 1, recordedAt="2099-01-01T00:00:00.000Z"),
        "record_after_close": inserted(11, _at(R.LOOP_STOPPED, runId="A", rule="stop.user")),
        "missing_rule": without(n - 1, "rule"),
        "missing_run_id": inserted(11, _at(R.TICK_TERMINAL, step=1, status="completed")),
        "unknown_run": inserted(11, _at(R.TICK_TERMINAL, runId="Z", step=1, status="completed")),
        "unknown_rule": edited(10, rule="next.target_reachee"),
        "run_rearmed": inserted(12, late),
        "complete_short": _short(),
        "step_order": edited(5, step=3),
        "session_mixed": edited(4, sessionId="other"),
        "terminal_out_of_order": edited(3, step=3),
        "enqueue_without_schedule": dropped(4),
        "enqueue_after_cancel": _after_cancel(),
        "schedule_out_of_order": inserted(2, edited(1)[1]),
        "cancel_out_of_order": _cancel_after_terminal(),
        "stop_rule_mismatch": edited(n - 1, rule="stop.inconsistent_turn"),
        "steps_mismatch": edited(10, steps=2),
        "refusal_contradicts_state": edited(11, rule="admit.run_active"),
        "bad_field": edited(3, usageReported=None, usage={"inputTokens": -1, "outputTokens": 2}),
        "time_order": edited(10, recordedAt="2026-11-30T08:00:00.000Z"),
        "open_run": base()[:-1],
    }
    for name, records in cases.items():
        write(f"{name}.jsonl", records)
    write("seq_order.jsonl", base(), seqs=[*range(1, 6), *range(7, n + 2)])
    # Tampering after the fact: an edited line (one space) no longer matches the next record's prev.
    lines = (HERE / "valid.jsonl").read_bytes().splitlines()
    lines[3] = lines[3].replace(b"09:00:03.000Z", b"09:00:03.001Z")
    (HERE / "chain_broken.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    # One line in another encoding of the same record: a space after a colon.
    lines = (HERE / "valid_unchained.jsonl").read_bytes().splitlines()
    lines[3] = lines[3].replace(b'"status":"completed"', b'"status": "completed"')
    (HERE / "noncanonical.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (HERE / "empty.jsonl").write_bytes(b"")
    (HERE / "unchained.jsonl").write_bytes((HERE / "valid_unchained.jsonl").read_bytes())
    (HERE / "session_file.jsonl").write_bytes((HERE / "valid.jsonl").read_bytes())
    (HERE / "unkeyed.jsonl").write_bytes(b"".join(line + b"\n" for line in _keyed_from(6)))
    lines = (HERE / "valid_unchained.jsonl").read_bytes().splitlines()
    lines[11] = lines[11][:30]  # the command_rejected record, cut mid-way: not JSON
    (HERE / "malformed.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    torn = (HERE / "valid.jsonl").read_bytes() + b'{"schema":"tickloop.audit.v1","type":"loop_ar'
    (HERE / "torn_tail.jsonl").write_bytes(torn)
    # The keyed chain: the last record's time rewritten without the key (its mac no longer matches).
    lines = (HERE / "valid_keyed.jsonl").read_bytes().splitlines()
    lines[-1] = lines[-1].replace(b"09:00:16.000Z", b"09:00:17.000Z")
    (HERE / "mac_mismatch.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    # A record far over the (test's) 2 KiB cap.
    write("record_too_large.jsonl", edited(11, token="x" * 4096))
    # A seal of the whole valid ledger, checked against a copy whose last record is gone.
    full = lines_of(base())
    import hashlib  # noqa: PLC0415

    seal = Seal(len(full), hashlib.sha256(b"".join(line + b"\n" for line in full)).hexdigest())
    (HERE / "seal_mismatch.seal").write_text(seal.line() + "\n")
    (HERE / "seal_mismatch.jsonl").write_bytes(b"".join(line + b"\n" for line in full[:-1]))


def _conflict() -> list[dict[str, Any]]:
    """Run B names policy "default" with another text than run A did."""
    other = compile_policy("default", "tock")
    recs = base()
    for i in range(12, len(recs)):
        recs[i] = {
            **recs[i],
            "timeStepSha256": other.time_step_sha256,
            "timeStepBytes": other.time_step_bytes,
        }
    return recs


def _keyed_from(index: int) -> list[bytes]:
    """A chained ledger whose key was turned on at ``index``: a ledger_mode record starts the keyed part."""
    recs = base()
    mode = record(
        R.LEDGER_MODE, recorded_at=T0 + timedelta(seconds=index), session_id="golden", chain=True, keyed=True
    )
    recs.insert(index, mode)
    lines, prev = [], GENESIS
    for i, rec in enumerate(recs):
        stamped = {**rec, "seq": i + 1, "prev": prev}
        if i >= index:
            stamped["mac"] = mac_of(canonical(stamped), KEY)
        line = canonical(stamped)
        prev = chain_digest(line)
        lines.append(line)
    return lines


def _beyond() -> list[dict[str, Any]]:
    """Run B asks for 1 step, completes it, and schedules a second anyway."""
    recs = base()[:12]
    armed = _at(R.LOOP_ARMED, 12, runId="B", requested=1, resume=False, rule="admit.ok", next="next.ok")
    recs += [
        armed,
        _at(R.TICK_SCHEDULED, 12, runId="B", step=1, rule="next.ok", dueAt="2026-11-30T09:00:13.000Z"),
        _at(R.TICK_ENQUEUED, 13, runId="B", step=1),
        _at(R.TICK_TERMINAL, 14, runId="B", step=1, status="completed", usageReported=False),
        _at(R.TICK_SCHEDULED, 15, runId="B", step=2, rule="next.ok", dueAt="2026-11-30T09:00:16.000Z"),
    ]
    return recs


def _concurrent() -> list[dict[str, Any]]:
    """Run C is armed (and stopped) while run A is still active."""
    recs = base()
    recs[3:3] = [
        _at(R.LOOP_ARMED, 3, runId="C", requested=1, resume=False, rule="admit.ok", next="next.ok"),
        _at(R.LOOP_STOPPED, 3, runId="C", rule="stop.user", steps=0),
    ]
    return recs


def _after_cancel() -> list[dict[str, Any]]:
    """Run B's step 1 is cancelled, and enqueued all the same."""
    recs = base()
    recs.insert(14, _at(R.TICK_CANCELLED, 14, runId="B", step=1, rule="cancel.state_changed"))
    return recs


def _cancel_after_terminal() -> list[dict[str, Any]]:
    """Run B cancels a step 2 that was never scheduled, after its step 1 ended in an error."""
    recs = base()
    recs.insert(16, _at(R.TICK_CANCELLED, 16, runId="B", step=2, rule="next.terminal_not_completed"))
    return recs


def _short() -> list[dict[str, Any]]:
    """Run A closes as complete after two of its three steps."""
    recs = base()
    recs[10] = {**recs[10], "steps": 2}
    return recs[:7] + recs[10:]


if __name__ == "__main__":
    main()
    print(json.dumps(sorted(p.name for p in HERE.iterdir())))
