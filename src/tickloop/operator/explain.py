"""Why an intent is where it is: the gate's verdict, the rule that decided it, the person's decisions,
and its cell on the autonomy ladder (capability tier x gate verdict), with what happens next.

A read, callable from every face: ``tickloop mcp serve``'s ``explain_intent`` is a thin wrapper.
"""

from __future__ import annotations

import msgspec

from tickloop.operator.domain import Decision, Intent, IntentStatus, Tier, Verdict
from tickloop.operator.intents import FINAL_STATUSES
from tickloop.operator.store.base import Store

#: gate and drift rule id -> the verdict that rule asks for (``tickloop.operator.gate``'s rules).
RULE_VERDICTS: dict[str, Verdict] = {
    "gate.allowed": Verdict.ALLOWED,
    "gate.block_list": Verdict.BLOCKED,
    "drift.repeat": Verdict.BLOCKED,
    "gate.money": Verdict.REQUIRES_APPROVAL,
    "gate.tainted_external": Verdict.REQUIRES_APPROVAL,
    "gate.external_or_irreversible": Verdict.REQUIRES_APPROVAL,
    "gate.unknown_type": Verdict.REQUIRES_APPROVAL,
    "mcp.waits_for_person": Verdict.REQUIRES_APPROVAL,
}

#: (tier, verdict) -> the ladder cell, in the seed's words (Figure 8).
LADDER: dict[tuple[Tier, Verdict], str] = {
    (Tier.REVERSIBLE, Verdict.ALLOWED): "auto-fires: a reversible write the executor may perform",
    (Tier.REVERSIBLE, Verdict.REQUIRES_APPROVAL): "held: the verdict holds it for the person's approval",
    (Tier.EXTERNAL, Verdict.ALLOWED): "refused by the tier floor unless approved with a linked decision",
    (Tier.EXTERNAL, Verdict.REQUIRES_APPROVAL): "fires only if the person approves it (approved + linked)",
    (Tier.SPEND, Verdict.ALLOWED): "never executed: handed off to the person to do by hand",
    (Tier.SPEND, Verdict.REQUIRES_APPROVAL): "never executed: handed off to the person to do by hand",
}
_BLOCKED_CELL = "never: blocked intents are not executable, approvable or markable"

#: status -> what happens next.
NEXT: dict[IntentStatus, str] = {
    IntentStatus.PROPOSED: "waits for the gate's verdict",
    IntentStatus.ALLOWED: "waits to be staged for the executor",
    IntentStatus.REQUIRES_APPROVAL: "waits for the person's decision (CLI, dashboard, or a channel)",
    IntentStatus.READY: "the executor may claim it on its next pass",
    IntentStatus.APPROVED: "the executor may claim it on its next pass",
    IntentStatus.CLAIMED: "an executor holds it",
    IntentStatus.SENDING: "an executor is performing it; the outcome is unknown until it ends",
}

#: The dead ends only the person can open (``intents.RECONCILE``): what they can do next.
WAY_BACK: dict[IntentStatus, str] = {
    IntentStatus.FAILED: "final for the machine; the person may hand it back: intents retry ID --note ...",
    IntentStatus.NEEDS_HUMAN: (
        "the outcome is unknown: the person reconciles it (intents reconcile ID done-by-hand | "
        "did-not-happen) or hands it back (intents retry ID --note ...)"
    ),
}


class Ladder(msgspec.Struct, frozen=True):
    """Where an intent stands on the autonomy ladder."""

    tier: Tier
    verdict: Verdict | None
    cell: str
    status: IntentStatus
    next: str


class Explanation(msgspec.Struct, frozen=True):
    """Everything a face shows about one intent's standing."""

    intent: Intent
    verdict: Verdict | None
    reasons: tuple[str, ...]
    #: the rule id whose verdict is the intent's (the first such reason), or None before the gate
    deciding_rule: str | None
    decisions: list[Decision]
    ladder: Ladder


def rule_id(reason: str) -> str:
    """``gate.money`` from ``gate.money: money always needs the person's approval``."""
    return reason.split(":", 1)[0].strip()


def deciding_rule(verdict: Verdict | None, reasons: tuple[str, ...]) -> str | None:
    """The first reason whose rule asks for ``verdict``: the one that decided it."""
    if verdict is None:
        return None
    for reason in reasons:
        if RULE_VERDICTS.get(rule_id(reason)) is verdict:
            return rule_id(reason)
    return rule_id(reasons[0]) if reasons else None


def ladder(intent: Intent) -> Ladder:
    """The intent's ladder cell and its next step."""
    if intent.verdict is None:
        cell = "not judged yet"
    elif intent.verdict is Verdict.BLOCKED:
        cell = _BLOCKED_CELL
    else:
        cell = LADDER[(intent.tier, intent.verdict)]
    if intent.status in WAY_BACK:
        after = WAY_BACK[intent.status]
    elif intent.status in FINAL_STATUSES:
        after = f"final: {intent.status.value}; nothing further happens"
    else:
        after = NEXT[intent.status]
    return Ladder(tier=intent.tier, verdict=intent.verdict, cell=cell, status=intent.status, next=after)


def explain(store: Store, profile: str, intent_id: int) -> Explanation:
    """Read one intent of ``profile`` (``NotFoundError`` for another profile's) and explain it."""
    intent = store.get_intent(profile, intent_id)
    decisions = [] if intent.decision_id is None else [store.get_decision(profile, intent.decision_id)]
    return Explanation(
        intent=intent,
        verdict=intent.verdict,
        reasons=intent.verdict_reasons,
        deciding_rule=deciding_rule(intent.verdict, intent.verdict_reasons),
        decisions=decisions,
        ladder=ladder(intent),
    )
