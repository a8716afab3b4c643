"""The gate: rules as data (``[gate]`` in config) that stamp every intent with a verdict and reasons.

Every rule that applies adds a reason; the verdict is the most severe (blocked > requires_approval >
allowed). A verdict other than allowed stops the fast tick (``gate_stop``) and becomes a notice for
the person. The rules, in the seed's terms:

1. the explicit block list: blocked;
2. money (the spend tier, or any positive ``amount``): requires approval;
3. tainted input feeding an external or spend action: never allowed (requires approval);
4. external or irreversible actions: require approval unless a profile rule allows that type;
5. an action type no handler knows: requires approval (fail closed; nothing is guessed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from tickloop.operator.domain import Tier, Verdict

_SEVERITY = {Verdict.ALLOWED: 0, Verdict.REQUIRES_APPROVAL: 1, Verdict.BLOCKED: 2}


class GateSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """The gate's rules for one profile."""

    #: action types that are always blocked
    block: list[str] = msgspec.field(default_factory=lambda: ["wire_transfer"])
    #: action types treated as irreversible even if their handler is reversible
    irreversible: list[str] = msgspec.field(default_factory=lambda: ["workspace_task"])
    #: profile rule: external or irreversible types allowed without approval (never when tainted)
    allow: list[str] = msgspec.field(default_factory=list)


class Proposal(msgspec.Struct, frozen=True):
    """What the gate judges: the action, its handler's tier, and whether tainted input fed it."""

    action_type: str
    tier: Tier | None  #: None: no handler knows this action type
    tainted: bool = False
    payload: Mapping[str, Any] | None = None


class Stamp(msgspec.Struct, frozen=True):
    """The gate's verdict and every reason behind it."""

    verdict: Verdict
    reasons: tuple[str, ...]


def judge(proposal: Proposal, settings: GateSettings) -> Stamp:
    """Apply every rule; the most severe verdict wins and all reasons are kept."""
    found = [(verdict, reason) for verdict, reason in _rules(proposal, settings)]
    if not found:
        why = "reversible" if proposal.tainted else "reversible and untainted"
        return Stamp(Verdict.ALLOWED, (f"gate.allowed: {why}",))
    verdict = max((v for v, _ in found), key=_SEVERITY.__getitem__)
    return Stamp(verdict, tuple(reason for _, reason in found))


def _rules(p: Proposal, s: GateSettings) -> list[tuple[Verdict, str]]:
    kind = p.action_type
    rules: list[tuple[Verdict, str]] = []
    if kind in s.block:
        rules.append((Verdict.BLOCKED, f"gate.block_list: {kind!r} is blocked"))
    if p.tier is Tier.SPEND or _amount(p.payload) > 0:
        rules.append((Verdict.REQUIRES_APPROVAL, "gate.money: money always needs the person's approval"))
    if p.tainted and p.tier in (Tier.EXTERNAL, Tier.SPEND, None):
        rules.append(
            (Verdict.REQUIRES_APPROVAL, "gate.tainted_external: untrusted input fed an external action")
        )
    risky = p.tier is Tier.EXTERNAL or kind in s.irreversible
    if risky and (kind not in s.allow or p.tainted):
        rules.append(
            (
                Verdict.REQUIRES_APPROVAL,
                f"gate.external_or_irreversible: {kind!r} leaves the machine or cannot be undone",
            )
        )
    if p.tier is None:
        rules.append((Verdict.REQUIRES_APPROVAL, f"gate.unknown_type: no handler for {kind!r}"))
    return rules


def _amount(payload: Mapping[str, Any] | None) -> float:
    value = (payload or {}).get("amount")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value)
