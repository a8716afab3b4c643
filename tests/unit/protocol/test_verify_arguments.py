"""``verify()``'s own arguments, each shown to change what it reports; and a malformed policy id.

A mutation run of ``protocol/verify.py`` found that dropping ``key``, ``max_reported`` or
``torn_tail`` on their way from ``verify()`` to the checker changed nothing any in-process test saw,
nor did a policy id that is a string but not a valid id, or its rule.
"""

from __future__ import annotations

import pytest
from test_verify_table import ARMED, R, build, rec

from tickloop.protocol.ledger import MAX_POLICY_BYTES, NEXT_TARGET_REACHED, Seal, canonical, decode
from tickloop.protocol.report import VerifyReport
from tickloop.protocol.verify import iso_ms, verify

#: a run of one completed step, closed
CLEAN = [
    {**ARMED, "requested": 1},
    rec(R.TICK_SCHEDULED, step=1, rule="next.ok"),
    rec(R.TICK_ENQUEUED, step=1),
    rec(R.TICK_TERMINAL, step=1, status="completed"),
    rec(R.LOOP_COMPLETE, rule=NEXT_TARGET_REACHED),
]


def _rules(report: VerifyReport) -> list[tuple[int, str]]:
    return [(v.line, v.rule) for v in report.violations]


def test_the_clean_ledger_of_these_tests_verifies() -> None:
    assert verify(build(CLEAN)).ok


def test_a_key_given_to_verify_checks_the_macs() -> None:
    """An unkeyed file checked with a key is a violation: the key reaches the checker."""
    report = verify(build(CLEAN), key=b"k" * 32)
    assert _rules(report) == [(1, "verify.mac_mismatch")]
    assert "no record has a mac" in report.violations[0].message


def test_strict_with_a_torn_tail_reports_the_incomplete_last_line() -> None:
    lines = build(CLEAN)
    assert verify(lines, strict=True).ok
    report = verify(lines, strict=True, torn_tail=True)
    assert _rules(report) == [(len(lines) + 1, "verify.torn_tail")]
    assert report.violations[0].message == "the last line is incomplete (no newline)"


def test_only_the_first_max_reported_violations_are_kept_and_all_are_counted() -> None:
    seqs = [1, 5, 3, 9, 2]  # each after the first out of order
    lines = [(n, canonical({**decode(raw), "seq": seqs[n - 1]})) for n, raw in build(CLEAN)]
    everything = verify(lines)
    capped = verify(lines, max_reported=2)
    assert everything.violation_count == capped.violation_count >= 3
    assert capped.violations == everything.violations[:2]


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("policyId", "9lives", "policyId '9lives' is not a policy id"),
        ("timeStepSha256", "AB" * 32, "timeStepSha256 must be 64 lowercase hex digits"),
        ("timeStepBytes", 0, f"timeStepBytes 0 is not in 1..{MAX_POLICY_BYTES}"),
    ],
)
def test_a_malformed_policy_field_is_a_bad_field_naming_it(field: str, value: object, said: str) -> None:
    lines = [(n, canonical({**decode(raw), field: value})) for n, raw in build(CLEAN)]
    first = verify(lines).violations[0]
    assert (first.line, first.rule, first.message) == (1, "verify.bad_field", said)


def test_times_are_written_to_the_millisecond_in_utc_with_a_z() -> None:
    assert iso_ms(1_764_583_200_123) == "2025-12-01T10:00:00.123Z"


def test_a_seal_given_to_verify_is_checked() -> None:
    """A seal that does not match the file's lines is a violation: the seal reaches the checker."""
    wrong = Seal(records=len(CLEAN), sha256="0" * 64)
    assert verify(build(CLEAN)).ok
    assert [v.rule for v in verify(build(CLEAN), seal=wrong).violations] == ["verify.seal_mismatch"]
