"""The gate's rules (as data) and the drift guard's normalisation, as tables."""

from __future__ import annotations

import pytest

from tickloop.operator.domain import Tier, Verdict
from tickloop.operator.drift import is_repeat, normalise
from tickloop.operator.gate import GateSettings, Proposal, judge

DEFAULT = GateSettings()
A = Verdict.ALLOWED
R = Verdict.REQUIRES_APPROVAL
B = Verdict.BLOCKED


@pytest.mark.parametrize(
    ("proposal", "settings", "verdict", "rules"),
    [
        (Proposal("note", Tier.REVERSIBLE), DEFAULT, A, ["gate.allowed"]),
        (Proposal("note", Tier.REVERSIBLE, tainted=True), DEFAULT, A, ["gate.allowed"]),
        (Proposal("draft_prep", Tier.REVERSIBLE, payload={"amount": 0}), DEFAULT, A, ["gate.allowed"]),
        (Proposal("email", Tier.EXTERNAL), DEFAULT, R, ["gate.external_or_irreversible"]),
        (Proposal("message", Tier.EXTERNAL), GateSettings(allow=["message"]), A, ["gate.allowed"]),
        (
            Proposal("message", Tier.EXTERNAL, tainted=True),
            GateSettings(allow=["message"]),
            R,
            ["gate.tainted_external", "gate.external_or_irreversible"],
        ),
        (Proposal("spend", Tier.SPEND), DEFAULT, R, ["gate.money"]),
        (Proposal("spend", Tier.SPEND), GateSettings(allow=["spend"]), R, ["gate.money"]),
        # A reversible type can still be gated by money: the tier never overrides the verdict.
        (Proposal("note", Tier.REVERSIBLE, payload={"amount": 12.5}), DEFAULT, R, ["gate.money"]),
        # any positive amount is money, however small (a cent, exactly one unit)
        (Proposal("note", Tier.REVERSIBLE, payload={"amount": 0.01}), DEFAULT, R, ["gate.money"]),
        (Proposal("note", Tier.REVERSIBLE, payload={"amount": 1}), DEFAULT, R, ["gate.money"]),
        (Proposal("note", Tier.REVERSIBLE, payload={"amount": True}), DEFAULT, A, ["gate.allowed"]),
        (Proposal("workspace_task", Tier.REVERSIBLE), DEFAULT, R, ["gate.external_or_irreversible"]),
        (
            Proposal("workspace_task", Tier.REVERSIBLE),
            GateSettings(allow=["workspace_task"]),
            A,
            ["gate.allowed"],
        ),
        (Proposal("wire_transfer", None), DEFAULT, B, ["gate.block_list", "gate.unknown_type"]),
        (Proposal("teleport", None), DEFAULT, R, ["gate.unknown_type"]),
        (
            Proposal("teleport", None, tainted=True),
            DEFAULT,
            R,
            ["gate.tainted_external", "gate.unknown_type"],
        ),
        (Proposal("note", Tier.REVERSIBLE), GateSettings(block=["note"]), B, ["gate.block_list"]),
    ],
)
def test_gate_rules_table(
    proposal: Proposal, settings: GateSettings, verdict: Verdict, rules: list[str]
) -> None:
    """Each rule applies exactly when the seed says; the most severe verdict wins; every reason is kept."""
    stamp = judge(proposal, settings)
    assert stamp.verdict is verdict
    assert [reason.split(":")[0] for reason in stamp.reasons] == rules


def test_prompt_injection_never_yields_an_allowed_external_intent() -> None:
    """Whatever a tainted mail asks for, an external or spend action it fed is never allowed, even when
    a profile rule allows that type."""
    permissive = GateSettings(block=[], irreversible=[], allow=["email", "message", "spend"])
    for tier, kind in ((Tier.EXTERNAL, "email"), (Tier.EXTERNAL, "message"), (Tier.SPEND, "spend")):
        assert judge(Proposal(kind, tier, tainted=True), permissive).verdict is not Verdict.ALLOWED


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (("email", "Send report", "bob@example.org"), ("EMAIL", "  send   REPORT ", "Bob@Example.org"), True),
        (("note", "\uff26\uff55\uff4c\uff4c width", ""), ("note", "full width", ""), True),
        (("note", "tab\tand\nnewline", ""), ("note", "tab and newline", ""), True),
        # Near misses: a genuinely new action must never be suppressed.
        (("email", "Send report", "bob@example.org"), ("email", "Send report", "alice@example.org"), False),
        (("email", "Send report", "bob@example.org"), ("email", "Send reports", "bob@example.org"), False),
        (("email", "Send report", "bob@example.org"), ("message", "Send report", "bob@example.org"), False),
        (("note", "Draft v1", ""), ("note", "Draft v2", ""), False),
        (("note", "a|b", "c"), ("note", "a", "b|c"), False),
        (("note", "a\\", "|c"), ("note", "a\\|", "c"), False),
    ],
)
def test_drift_normalisation_table(a: tuple[str, str, str], b: tuple[str, str, str], same: bool) -> None:
    """Case, width and whitespace do not make a repeat new; any other difference does."""
    assert (normalise(*a) == normalise(*b)) is same


def test_repeat_is_blocked_unless_the_kernel_sanctions_a_retry() -> None:
    """An exact-ish repeat of a failed action is caught; a sanctioned recovery retry is exempt."""
    failed = [normalise("email", "Send report", "bob@example.org")]
    key = normalise("email", "send  report", "BOB@example.org")
    assert is_repeat(key, failed)
    assert not is_repeat(key, failed, sanctioned_retry=True)
    assert not is_repeat(normalise("email", "Send report", "carol@example.org"), failed)
