"""Ledger records, canonical JSON, and verify() against golden ledgers."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from tickloop.audit import read_ledger, verify_file
from tickloop.errors import LedgerError
from tickloop.protocol.ledger import RecordType, Seal, canonical, chain_digest, decode, record

GOLDEN = Path(__file__).parents[2] / "golden" / "ledgers"
VIOLATIONS = sorted(p.stem for p in GOLDEN.glob("*.jsonl") if not p.stem.startswith("valid"))
GOLDEN_KEY = b"golden-audit-key"  # tests/golden/make_ledgers.py KEY
#: How a golden file is verified when its rule needs it (mirrors make_ledgers.OPTIONS).
OPTIONS: dict[str, dict[str, Any]] = {
    "open_run": {"strict": True},
    "torn_tail": {"strict": True},
    "mac_mismatch": {"key": GOLDEN_KEY},
    "record_too_large": {"max_record_bytes": 2048},
    "seal_mismatch": {"seal": Seal.parse((GOLDEN / "seal_mismatch.seal").read_text())},
    "empty": {"strict": True},
    "unchained": {"require_chain": True},
    "unkeyed": {"key": GOLDEN_KEY, "require_key": True},
    "session_file": {"file_name": "session-other.jsonl"},
}


def test_canonical_json_is_sorted_compact_utf8() -> None:
    """The documented canonical form: sorted keys, no spaces, UTF-8 (not \\u escapes), no NaN."""
    assert (
        canonical({"b": 1, "a": "é", "c": [1, {"y": 2, "x": 1}]})
        == '{"a":"é","b":1,"c":[1,{"x":1,"y":2}]}'.encode()
    )
    with pytest.raises(ValueError, match="JSON compliant"):
        canonical({"x": float("nan")})


def test_canonical_golden_vector_and_chain_digest() -> None:
    """A fixed record encodes to fixed bytes and a fixed chain digest (the contract's test vector)."""
    rec = record(
        RecordType.LOOP_ARMED,
        recorded_at=datetime(2026, 11, 30, 9, 0, tzinfo=UTC),
        session_id="s",
        runId="r",
        requested=3,
        policyId="default",
        timeStepBytes=4,
        timeStepSha256="55a4bc5be68ea5c30cbe4d07e3bf951163b5a207dfd628ea53a2eb21072a9f3b",
    )
    line = canonical({**rec, "seq": 1})
    assert line == (
        b'{"policyId":"default","recordedAt":"2026-11-30T09:00:00.000Z","requested":3,"runId":"r",'
        b'"schema":"tickloop.audit.v1","seq":1,"sessionId":"s","timeStepBytes":4,'
        b'"timeStepSha256":"55a4bc5be68ea5c30cbe4d07e3bf951163b5a207dfd628ea53a2eb21072a9f3b",'
        b'"type":"loop_armed"}'
    )
    assert chain_digest(b"abc") == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_record_times_are_utc_with_milliseconds() -> None:
    """recordedAt is ISO 8601 UTC whatever zone the clock reported in; naive times are refused."""
    plus2 = datetime(2026, 3, 29, 3, 30, 15, 123456, tzinfo=timezone(timedelta(hours=2)))
    rec = record(RecordType.LOOP_STOPPED, recorded_at=plus2, session_id="s", runId="r", rule="stop.user")
    assert rec["recordedAt"] == "2026-03-29T01:30:15.123Z"
    with pytest.raises(LedgerError, match="timezone-aware"):
        record(RecordType.LOOP_ARMED, recorded_at=datetime(2026, 1, 1), session_id="s")  # noqa: DTZ001


def test_stops_cancels_and_refusals_must_carry_their_rule() -> None:
    """A record that explains a refusal or a stop cannot be built without the rule that caused it."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    for kind in (RecordType.LOOP_STOPPED, RecordType.TICK_CANCELLED, RecordType.COMMAND_REJECTED):
        with pytest.raises(LedgerError, match="rule"):
            record(kind, recorded_at=now, session_id="s", runId="r")


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (b"not json", "not JSON"),
        (b"[1,2]", "JSON object"),
        (b'{"schema":"other.v1"}', "schema"),
        (b'{"schema":"tickloop.audit.v1","type":"loop_exploded","seq":1}', "unknown record type"),
        (b'{"schema":"tickloop.audit.v1","type":"loop_armed","seq":0}', "seq"),
        (b'{"schema":"tickloop.audit.v1","type":"loop_armed","seq":true}', "seq"),
        (b'{"schema":"tickloop.audit.v1","type":"loop_armed","seq":1,"sessionId":5}', "recordedAt"),
        (b"\xff\xfe", "not JSON"),
    ],
)
def test_decode_refuses_bad_lines_saying_why(line: bytes, problem: str) -> None:
    """A hostile or damaged line is refused with a reason, never half-read."""
    with pytest.raises(LedgerError, match=problem):
        decode(line)


def test_valid_golden_ledger_verifies_with_its_chain() -> None:
    """A well-formed session ledger holds every invariant, and its hash chain is recognised."""
    report, _ = verify_file(GOLDEN / "valid.jsonl")
    assert report.ok, report.violations
    assert report.chained
    assert report.summary() == (
        "ok: 17 records, 2 runs, 4 time steps enqueued, session 'golden', hash chain intact, no macs, "
        "file name not checked (not a session file name)"
    )
    unchained, _ = verify_file(GOLDEN / "valid_unchained.jsonl", file_name="session-golden.jsonl")
    assert unchained.ok
    assert not unchained.chained
    assert unchained.summary().endswith("session 'golden', no hash chain, no macs")


@pytest.mark.parametrize("name", VIOLATIONS)
def test_each_golden_violation_is_reported_with_its_rule(name: str) -> None:
    """Each golden ledger breaks one invariant, and verify names exactly that rule (and its line)."""
    report, _ = verify_file(GOLDEN / f"{name}.jsonl", **OPTIONS.get(name, {}))
    assert [v.rule for v in report.violations] == [f"verify.{name}"]
    assert report.violations[0].line >= 1


def test_golden_set_covers_every_invariant() -> None:
    """There is a golden ledger for every rule verify can report, and none for a rule it cannot."""
    protocol = Path(__file__).parents[3] / "src/tickloop/protocol"
    source = "".join(path.read_text() for path in sorted(protocol.glob("*.py")))
    rules = {part.split('"')[0] for part in source.split('"verify.')[1:]}
    assert rules == set(VIOLATIONS)


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_golden_files_needing_an_option_are_clean_without_it(name: str) -> None:
    """Open runs and torn tails are violations only under --strict; the others need their key, seal or cap."""
    report, _ = verify_file(GOLDEN / f"{name}.jsonl")
    assert report.ok, report.violations


def test_torn_tail_is_reported_not_fatal() -> None:
    """A crash can tear only the last line; the reader reports it and the rest still verifies."""
    report, read = verify_file(GOLDEN / "torn_tail.jsonl")
    assert report.ok
    assert read.torn_tail is not None
    assert read.torn_tail.startswith(b'{"schema"')


def test_another_key_order_is_noncanonical_on_every_line() -> None:
    """A hand-written ledger in another key order is not the canonical form: each line is named."""
    lines = (GOLDEN / "valid_unchained.jsonl").read_bytes().splitlines()
    shuffled = [json.dumps(dict(reversed(list(json.loads(x).items())))).encode() for x in lines]
    from tickloop.protocol.verify import verify  # noqa: PLC0415

    report = verify(enumerate(shuffled, start=1))
    assert [(v.line, v.rule) for v in report.violations] == [(i, "verify.noncanonical") for i in range(1, 18)]
    assert read_ledger(GOLDEN / "valid.jsonl").records()[0]["type"] == "loop_armed"


def test_every_field_the_tick_plugin_writes_is_in_the_schema() -> None:
    """A field the writer can put in a record is one verify knows (never reported noncanonical)."""
    import ast  # noqa: PLC0415

    from tickloop.protocol.ledger import FIELDS  # noqa: PLC0415

    source = Path(__file__).parents[3] / "src/tickloop/harness/tick_plugin.py"
    written = {
        keyword.arg
        for node in ast.walk(ast.parse(source.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in {"_write_run", "_write", "_close"}
        for keyword in node.keywords
        if keyword.arg is not None
    }
    assert {"requested", "dueAt", "status", "steps", "tokens"} <= written
    assert written <= FIELDS
