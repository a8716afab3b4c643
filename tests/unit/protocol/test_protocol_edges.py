"""Edges of the protocol a mutation run found unpinned: the refusal a person reads when they redefine
the built-in policy, the cap on reported violations, and the canonical encoder's pure-Python fallback."""

from __future__ import annotations

import pytest

from tickloop.errors import PolicyError
from tickloop.protocol import ledger
from tickloop.protocol.ledger import canonical
from tickloop.protocol.policy import PolicySet
from tickloop.protocol.report import VerifyReport, Violation


def test_redefining_the_built_in_policy_says_what_it_means_and_what_to_do() -> None:
    with pytest.raises(PolicyError) as refused:
        PolicySet({"mine": "tick", "default": "something"})
    assert str(refused.value) == (
        "policy 'default' is built in (the literal text 'tick'); give your policy another id"
    )


def test_a_report_keeps_at_most_max_reported_violations_and_counts_them_all() -> None:
    report = VerifyReport(max_reported=2)
    for line in range(1, 6):
        report.add(Violation(line, "verify.seq_gap", f"line {line}"))
    assert [v.line for v in report.violations] == [1, 2]
    assert report.violation_count == 5
    assert not report.ok


def test_the_pure_python_encoder_writes_the_same_canonical_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the C encoder is missing (another interpreter), the fallback gives byte-identical lines."""
    fields = {"type": "loop_armed", "a": "é\u2028", "n": [1, 2.5, None, True]}
    fast = canonical(fields)
    monkeypatch.setattr(ledger, "_C_ENCODE", None)
    assert canonical(fields) == fast == '{"a":"é\u2028","n":[1,2.5,null,true],"type":"loop_armed"}'.encode()
