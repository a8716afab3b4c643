"""The executor's tier floor as a table: tier x the claim's prior status x the linked decision.

The floor is independent of the gate (seed 002, figure 8): an external or spend handler fires only for
an intent whose claim came from ``approved`` with a valid *approve* decision linked to it.
"""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from tickloop.operator.domain import Decision, DecisionKind, Intent, IntentOrigin, IntentStatus, Tier
from tickloop.operator.ticks.executor import tier_floor_passes

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
INTENT = Intent(
    id=43, profile="p", action_type="email", title="send chapter 3", recipient="ada@example.org",
    payload={"body": "hi"}, tier=Tier.EXTERNAL, status=IntentStatus.CLAIMED, verdict=None,
    verdict_reasons=(), decision_id=7, claim_owner="exec-1", claimed_at=NOW,
    claim_prior=IntentStatus.APPROVED, dry_run=True, result=None, handoff=False, origin=IntentOrigin(),
    created_at=NOW, updated_at=NOW,
)  # fmt: skip
APPROVAL = Decision(
    id=7, profile="p", intent_id=43, kind=DecisionKind.APPROVE, by="cli", note="", decided_at=NOW
)


@pytest.mark.parametrize("kind", list(DecisionKind))
@pytest.mark.parametrize("tier", [Tier.EXTERNAL, Tier.SPEND])
def test_only_an_approve_decision_lets_an_external_or_spend_intent_pass_the_floor(
    kind: DecisionKind, tier: Tier
) -> None:
    """Of every decision kind, only ``approve`` passes; a linked deny (or any other kind) is refused."""
    decision = msgspec.structs.replace(APPROVAL, kind=kind)
    assert tier_floor_passes(tier, INTENT, decision) is (kind is DecisionKind.APPROVE)


@pytest.mark.parametrize(
    ("case", "intent", "decision"),
    [
        ("no decision", INTENT, None),
        ("decision of another intent", INTENT, msgspec.structs.replace(APPROVAL, intent_id=44)),
        ("decision of another profile", INTENT, msgspec.structs.replace(APPROVAL, profile="q")),
        ("intent links another decision", msgspec.structs.replace(INTENT, decision_id=8), APPROVAL),
        ("intent links no decision", msgspec.structs.replace(INTENT, decision_id=None), APPROVAL),
        *[
            (f"claimed from {prior}", msgspec.structs.replace(INTENT, claim_prior=prior), APPROVAL)
            for prior in IntentStatus
            if prior is not IntentStatus.APPROVED
        ],
        ("claim prior unknown", msgspec.structs.replace(INTENT, claim_prior=None), APPROVAL),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
@pytest.mark.parametrize("tier", [Tier.EXTERNAL, Tier.SPEND])
def test_an_external_or_spend_intent_without_an_approved_and_linked_claim_is_refused(
    case: str, intent: Intent, decision: Decision | None, tier: Tier
) -> None:
    """Every way the approval can be missing, foreign, unlinked or not the claim's origin fails the floor."""
    assert not tier_floor_passes(tier, intent, decision), case


def test_the_approved_and_linked_external_intent_passes_and_reversible_needs_nothing() -> None:
    """The one passing external case, and a reversible handler that needs no decision at all."""
    assert tier_floor_passes(Tier.EXTERNAL, INTENT, APPROVAL)
    ready = msgspec.structs.replace(INTENT, claim_prior=IntentStatus.READY, decision_id=None)
    assert tier_floor_passes(Tier.REVERSIBLE, ready, None)
