"""verify's checks at the end of a file and on its policy fields, at their edges, in the words it prints.

Pinned for a mutation run of ``protocol/verify.py``: timeStepBytes is allowed from 1 to 4096 bytes
and no further; one policy id names one text (sha256 and byte count) through a file, and two ids
two; a seal that differs is reported on the last sealed line, a file shorter than its seal names
both counts, a line after the sealed ones is not hashed (even one too large to read), and a sealed
line too large to hash ends the seal check; the prev after an unreadable line is checked against its
bytes; a one-record file is not empty; a file chained throughout (or from line 2) says so; a
canonical line holding a float (which the fast check leaves to the exact one) is canonical; a file
name is checked only when it looks like a session's (``session-*.jsonl``), and then against a
session id that may be malformed or long; an empty file has no session to name.
"""

from __future__ import annotations

import hashlib

import pytest
from test_verify_table import ARMED, R, build, rec

from tickloop.protocol.ledger import (
    FIELDS,
    GENESIS,
    MAX_POLICY_BYTES,
    Oversized,
    Seal,
    canonical,
    chain_digest,
    decode,
)
from tickloop.protocol.policy import compile_policy
from tickloop.protocol.report import VerifyReport
from tickloop.protocol.verify import Checks, Verifier, verify

STOPPED = [ARMED, rec(R.LOOP_STOPPED, rule="stop.user")]
NOTES = ["no hash chain", "no macs"]


def _said(report: VerifyReport) -> list[tuple[int, str, str]]:
    return [(v.line, v.rule, v.message) for v in report.violations]


def _with(items: list[dict[str, object]], **fields: object) -> list[tuple[int, bytes]]:
    return [(n, canonical({**decode(raw), **fields})) for n, raw in build(items)]


@pytest.mark.parametrize(
    ("size", "said"),
    [
        (1, []),
        (MAX_POLICY_BYTES, []),
        (MAX_POLICY_BYTES + 1, [(1, "verify.bad_field", "timeStepBytes 4097 is not in 1..4096")]),
        (True, [(1, "verify.bad_field", "timeStepBytes True is not in 1..4096")]),
    ],
)  # fmt: skip
def test_time_step_bytes_may_be_1_to_4096(size: object, said: list[tuple[int, str, str]]) -> None:
    assert _said(verify(_with(STOPPED, timeStepBytes=size)))[:1] == said


def test_a_line_after_the_sealed_ones_is_not_hashed_even_when_too_large_to_read() -> None:
    lines = build(STOPPED)
    seal = Seal(records=1, sha256=hashlib.sha256(lines[0][1] + b"\n").hexdigest())
    verifier = Verifier(Checks(seal=seal))
    verifier.feed(1, lines[0][1])
    verifier.feed(2, Oversized(5000, 100))
    assert _said(verifier.finish()) == [
        (2, "verify.record_too_large", "a record of 5000 bytes or more exceeds the 100-byte cap (not read)"),
    ]
    report = verify(lines, seal=seal)
    assert (report.ok, report.sealed) == (True, seal)
    assert "seal of 1 record matches" in report.summary()


def test_a_file_shorter_than_its_seal_names_both_counts_after_its_last_line() -> None:
    lines = build(STOPPED)
    seal = Seal(records=3, sha256="0" * 64)
    assert _said(verify(lines, seal=seal)) == [
        (3, "verify.seal_mismatch", "the file has 2 lines; the seal covers 3")
    ]


def test_a_file_of_one_record_is_not_empty_under_strict() -> None:
    one = _with([rec(R.COMMAND_REJECTED, rule="command.not_tick")], runId=None)
    assert verify(one, strict=True).ok


def test_a_checked_file_name_adds_no_note() -> None:
    assert verify(build(STOPPED), Checks(file_name="session-t.jsonl")).notes == NOTES


def test_a_name_that_starts_like_a_session_file_but_is_not_jsonl_is_only_noted() -> None:
    report = verify(build(STOPPED), Checks(file_name="session-r.json"))
    assert (report.ok, report.name_checked) == (True, False)


def test_a_session_id_with_no_file_name_is_said_so() -> None:
    report = verify(_with(STOPPED, sessionId=""), Checks(file_name="session-.jsonl"))
    said = (
        "session-.jsonl holds the ledger of session '', "
        "whose file is (none: the session id is not well-formed)"
    )
    assert _said(report) == [(1, "verify.session_file", said)]


def test_a_long_session_id_is_named_by_its_first_80_characters() -> None:
    report = verify(_with(STOPPED, sessionId="s" * 100), Checks(file_name="session-t.jsonl"))
    expected = f"session-{'s' * 100}.jsonl"
    said = f"session-t.jsonl holds the ledger of session {'s' * 80!r}, whose file is {expected}"
    assert _said(report) == [(1, "verify.session_file", said)]


def test_an_empty_file_with_a_file_name_has_no_session_to_check() -> None:
    report = verify([], Checks(file_name="session-t.jsonl"))
    assert (report.ok, report.name_checked, report.notes) == (True, None, NOTES)


def test_two_policy_ids_in_one_file_each_keep_their_own_text() -> None:
    other = compile_policy("other", "tock")
    lines = build([*STOPPED, *STOPPED])
    second = {"runId": "r2", "policyId": "other", "timeStepSha256": other.time_step_sha256}
    lines[2:] = [(n, canonical({**decode(raw), **second})) for n, raw in lines[2:]]
    assert _said(verify(lines)) == []


@pytest.mark.parametrize("every_field", [False, True])
def test_a_canonical_line_with_a_float_is_canonical(every_field: bool) -> None:
    """A float sends a line past the fast check to the exact one, which must still find it canonical,
    also when the record carries every field of the schema."""
    lines = build(STOPPED)
    extra = dict.fromkeys(FIELDS, 0.5) if every_field else {"tokens": 0.5}
    lines[1] = (2, canonical({**extra, **decode(lines[1][1])}))
    assert "verify.noncanonical" not in [v.rule for v in verify(lines).violations]


def test_a_seal_that_differs_is_reported_on_the_last_sealed_line() -> None:
    lines = build(STOPPED)
    assert _said(verify(lines, seal=Seal(records=2, sha256="0" * 64))) == [
        (2, "verify.seal_mismatch", "the first 2 lines differ from the seal")
    ]


def test_a_policy_id_whose_byte_count_changes_between_runs_is_a_conflict() -> None:
    """The same sha256 with another timeStepBytes is another text: one id names one text per file."""
    lines = build([*STOPPED, *STOPPED])
    lines[2:] = [(n, canonical({**decode(raw), "runId": "r2", "timeStepBytes": 5})) for n, raw in lines[2:]]
    assert _said(verify(lines)) == [
        (3, "verify.policy_conflict", "policy 'default' has timeStepBytes 5 here, 4 on line 1")
    ]


def test_a_file_chained_throughout_says_its_chain_is_intact() -> None:
    assert verify(_chained(build(STOPPED))).notes == ["hash chain intact", "no macs"]


def test_a_line_too_large_to_hash_ends_the_seal_check_for_the_lines_after_it() -> None:
    lines = build([ARMED, STOPPED[1], STOPPED[1]])
    verifier = Verifier(Checks(seal=Seal(records=3, sha256="0" * 64)))
    verifier.feed(1, lines[0][1])
    verifier.feed(2, Oversized(5000, 100))
    verifier.feed(3, lines[2][1])
    assert [(v.line, v.rule) for v in verifier.finish().violations] == [
        (2, "verify.seal_mismatch"),
        (2, "verify.record_too_large"),
    ]


def _chained(lines: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    out, prev = [], GENESIS
    for n, raw in lines:
        out.append((n, canonical({**decode(raw), "prev": prev})))
        prev = chain_digest(out[-1][1])
    return out


@pytest.mark.parametrize(("linked_to_the_bad_line", "broken"), [(True, []), (False, [3])])
def test_the_prev_after_an_unreadable_line_is_checked_against_its_bytes(
    linked_to_the_bad_line: bool, broken: list[int]
) -> None:
    lines = _chained(build([ARMED, rec(R.TICK_SCHEDULED, step=1, rule="next.ok"), STOPPED[1]]))
    if linked_to_the_bad_line:
        lines[2] = (3, canonical({**decode(lines[2][1]), "prev": chain_digest(b"not json")}))
    lines[1] = (2, b"not json")
    report = verify(lines)
    assert [v.line for v in report.violations if v.rule == "verify.chain_broken"] == broken


def test_finish_without_arguments_finds_no_torn_tail() -> None:
    verifier = Verifier(Checks(strict=True))
    for lineno, raw in build(STOPPED):
        verifier.feed(lineno, raw)
    assert verifier.finish().ok


def test_the_runs_still_open_at_the_end_are_named() -> None:
    assert verify(build([ARMED])).open_runs == ["r"]
    assert verify(build(STOPPED)).open_runs == []


def test_a_chain_that_starts_on_line_2_is_named_up_to_the_last_line() -> None:
    lines = build([ARMED, rec(R.LEDGER_MODE, chain=True, keyed=False), STOPPED[1]])
    lines[2] = (3, canonical({**decode(lines[2][1]), "prev": chain_digest(lines[1][1])}))
    assert verify(lines).notes == ["hash chain on lines 2-3 only", "no macs"]
