"""The gate's reasons, word for word: the sentences a person reads under an intent (dashboard, CLI,
``explain_intent``). The rule id before the colon is pinned elsewhere; a mutation run found the words
after it were not (an untainted allow read "reversible" and no test noticed)."""

from __future__ import annotations

import pytest

from tickloop.operator.domain import Tier, Verdict
from tickloop.operator.gate import GateSettings, Proposal, judge


@pytest.mark.parametrize(
    ("proposal", "settings", "verdict", "reasons"),
    [
        (
            Proposal("note", Tier.REVERSIBLE),
            GateSettings(),
            Verdict.ALLOWED,
            ["gate.allowed: reversible and untainted"],
        ),
        (
            Proposal("note", Tier.REVERSIBLE, tainted=True),
            GateSettings(),
            Verdict.ALLOWED,
            ["gate.allowed: reversible"],
        ),
        (
            Proposal("note", Tier.REVERSIBLE),
            GateSettings(block=["note"]),
            Verdict.BLOCKED,
            ["gate.block_list: 'note' is blocked"],
        ),
        (
            Proposal("pay", Tier.SPEND),
            GateSettings(),
            Verdict.REQUIRES_APPROVAL,
            [
                "gate.money: money always needs the person's approval",
            ],
        ),
        (
            Proposal("email", Tier.EXTERNAL, tainted=True),
            GateSettings(allow=["email"]),
            Verdict.REQUIRES_APPROVAL,
            [
                "gate.tainted_external: untrusted input fed an external action",
                "gate.external_or_irreversible: 'email' leaves the machine or cannot be undone",
            ],
        ),
        (
            Proposal("teleport", None),
            GateSettings(),
            Verdict.REQUIRES_APPROVAL,
            ["gate.unknown_type: no handler for 'teleport'"],
        ),
    ],
)
def test_each_reason_reads_as_written(
    proposal: Proposal, settings: GateSettings, verdict: Verdict, reasons: list[str]
) -> None:
    """Every reason the gate gives is the full sentence, in the order the rules are applied."""
    stamp = judge(proposal, settings)
    assert (stamp.verdict, list(stamp.reasons)) == (verdict, reasons)
