"""The run state machine of `verify`, pinned as a table; and the bounded line reader, by property."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tickloop.audit import ledger as ledger_module
from tickloop.audit.ledger import LineReader
from tickloop.errors import LedgerError
from tickloop.protocol.ledger import Oversized, RecordType, canonical, decode, record
from tickloop.protocol.policy import compile_policy
from tickloop.protocol.verify import Phase, verify

POLICY = compile_policy("default", "tick")
P = {
    "policyId": "default",
    "timeStepSha256": POLICY.time_step_sha256,
    "timeStepBytes": POLICY.time_step_bytes,
}
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
R = RecordType


def rec(kind: RecordType, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, **fields}


ARMED = rec(R.LOOP_ARMED, requested=2, resume=False, rule="admit.ok", next="next.ok")
#: A ledger prefix that leaves the run in each phase (``ended_last``: after the final step's terminal).
PREFIXES: dict[str, list[dict[str, Any]]] = {
    "armed": [ARMED],
    "waiting": [{**ARMED, "next": "next.terminal_missing"}],
    "scheduled": [ARMED, rec(R.TICK_SCHEDULED, step=1, rule="next.ok")],
    "enqueued": [ARMED, rec(R.TICK_SCHEDULED, step=1, rule="next.ok"), rec(R.TICK_ENQUEUED, step=1)],
    "ended": [
        ARMED,
        rec(R.TICK_SCHEDULED, step=1, rule="next.ok"),
        rec(R.TICK_ENQUEUED, step=1),
        rec(R.TICK_TERMINAL, step=1, status="completed"),
    ],
    "ended_last": [
        {**ARMED, "requested": 1},
        rec(R.TICK_SCHEDULED, step=1, rule="next.ok"),
        rec(R.TICK_ENQUEUED, step=1),
        rec(R.TICK_TERMINAL, step=1, status="completed"),
    ],
    "cancelled": [
        ARMED,
        rec(R.TICK_SCHEDULED, step=1, rule="next.ok"),
        rec(R.TICK_CANCELLED, step=1, rule="cancel.state_changed"),
    ],
    "closed": [ARMED, rec(R.LOOP_STOPPED, rule="stop.user")],
}
#: The next record of each type, shaped right for the phase it follows (step numbers, rule).
NEXT: dict[str, dict[str, Any]] = {
    "tick_scheduled": rec(R.TICK_SCHEDULED, rule="next.ok"),
    "tick_enqueued": rec(R.TICK_ENQUEUED),
    "tick_terminal": rec(R.TICK_TERMINAL, status="completed"),
    "tick_cancelled_before_enqueue": rec(R.TICK_CANCELLED, rule="cancel.state_changed"),
    "loop_stopped": rec(R.LOOP_STOPPED, rule="recover.orphaned_run"),
    "loop_complete": rec(R.LOOP_COMPLETE, rule="next.target_reached"),
}
#: Which (phase, next record) pairs the protocol allows: the spec's state machine, written out.
ALLOWED = {
    ("armed", "tick_scheduled"),
    ("armed", "loop_stopped"),
    ("waiting", "tick_scheduled"),
    ("waiting", "loop_stopped"),
    ("scheduled", "tick_enqueued"),
    ("scheduled", "tick_cancelled_before_enqueue"),
    ("scheduled", "loop_stopped"),
    ("enqueued", "tick_terminal"),
    ("enqueued", "loop_stopped"),
    ("ended", "tick_scheduled"),
    ("ended", "loop_stopped"),
    ("ended_last", "loop_complete"),
    ("ended_last", "loop_stopped"),
    ("cancelled", "loop_stopped"),
}


def build(items: list[dict[str, Any]]) -> list[tuple[int, bytes]]:
    out, step = [], 0
    for i, item in enumerate(items):
        fields = {k: v for k, v in item.items() if k != "kind"}
        kind = item["kind"]
        if kind is R.TICK_SCHEDULED and "step" not in fields:
            fields["step"] = step + 1
        elif kind in (R.TICK_ENQUEUED, R.TICK_TERMINAL, R.TICK_CANCELLED) and "step" not in fields:
            fields["step"] = step
        step = fields.get("step", step)
        at = T0 + timedelta(seconds=i)
        built = record(kind, recorded_at=at, session_id="t", runId="r", **P, **fields)
        out.append((i + 1, canonical({**built, "seq": i + 1})))
    return out


@pytest.mark.parametrize("phase", sorted(PREFIXES))
@pytest.mark.parametrize("kind", sorted(NEXT))
def test_every_phase_and_record_type_pair_is_allowed_exactly_as_the_table_says(phase: str, kind: str) -> None:
    """A record the state machine allows in a phase verifies; one it does not is a violation on its line."""
    items = [*PREFIXES[phase], NEXT[kind]]
    if phase == "cancelled" and kind == "loop_stopped":
        items[-1] = rec(R.LOOP_STOPPED, rule="cancel.state_changed")
    report = verify(build(items))
    if (phase, kind) in ALLOWED:
        assert report.ok, report.violations
    else:
        assert not report.ok
        assert report.violations[0].line == len(items)


def test_the_table_names_every_phase() -> None:
    """Each phase of the verifier's machine has a prefix here, so no phase goes untested."""
    assert {p.removesuffix("_last") for p in PREFIXES} == {str(p) for p in Phase}


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
    tail=st.binary(max_size=20).map(lambda b: b.replace(b"\n", b"")),
    chunk=st.integers(min_value=1, max_value=17),
    cap=st.integers(min_value=1, max_value=45),
)
def test_the_line_reader_splits_exactly_whatever_the_chunking(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], tail: bytes, chunk: int, cap: int
) -> None:
    """Every line comes back whole (or as Oversized with its size), numbered, the torn tail counted."""
    path = tmp_path_factory.mktemp("r") / "f"
    path.write_bytes(b"".join(line + b"\n" for line in lines) + tail)
    original = ledger_module._CHUNK
    ledger_module._CHUNK = chunk
    try:
        reader = LineReader(path, max_record_bytes=cap)
        got = list(reader)
    finally:
        ledger_module._CHUNK = original
    tail_oversized = len(tail) > cap
    expected: list[tuple[int, bytes | Oversized]] = [
        (i, line if len(line) <= cap else Oversized(len(line), cap)) for i, line in enumerate(lines, start=1)
    ]
    if tail_oversized:
        expected.append((len(lines) + 1, Oversized(len(tail), cap)))
    assert got == expected
    assert reader.torn_size == (0 if tail_oversized else len(tail))
    assert reader.torn_tail == (tail if tail and not tail_oversized else None)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=60), max_size=20))
def test_verify_never_raises_on_arbitrary_lines(lines: list[bytes]) -> None:
    """Any bytes at all give a report (violations by line), never an exception."""
    report = verify(enumerate(lines, start=1), strict=True)
    unreadable = []
    for line in lines:
        try:
            decode(line)
        except LedgerError:
            unreadable.append(line)
    assert report.records == len(lines) - len(unreadable)
    assert report.violation_count >= len(unreadable)
    assert [v.rule for v in report.violations].count("verify.malformed") == len(unreadable)


def test_oversized_lines_count_their_size_without_keeping_it(tmp_path: Path) -> None:
    """A line over the cap is yielded as its size only; the next line is read normally."""
    path = tmp_path / "f"
    path.write_bytes(b"x" * 5000 + b"\nok\n")
    assert list(LineReader(path, max_record_bytes=100)) == [(1, Oversized(5000, 100)), (2, b"ok")]
