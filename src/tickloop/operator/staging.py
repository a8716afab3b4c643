"""The one staging path: every intent, from any face, is gate-stamped the moment it is stored.

The fast tick, ``tickloop operator intents add`` and the MCP face's ``stage_intent`` all call
:func:`stage`, so no intent is ever left ``proposed`` for a tick that will never judge it::

    proposed -> allowed -> ready           (the executor may claim it)
    proposed -> requires_approval          (waits for the person's decision)
    proposed -> blocked                    (final)

Only registered handler types are staged, with a payload their handler can take
(``tickloop.operator.handlers.checks``). The tier is always the handler's: a face
cannot make an email reversible by saying so. An intent whose origin is untrusted (another agent
through MCP) is judged as tainted, so it is never auto-allowed for an external or spend type even
where a profile rule would allow that type for the operator's own intents. An intent from MCP
(origin ``mcp`` or ``mcp:NAME``, the agent's token name) waits for the person even when the gate
allows it, unless ``auto_allow`` (``[mcp] autoAllow``) names its type.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

import msgspec

from tickloop.operator import gate
from tickloop.operator.domain import Intent, IntentOrigin, NewIntent, Tier, Verdict
from tickloop.operator.handlers.checks import check_draft
from tickloop.operator.handlers.registry import handler_for
from tickloop.operator.store.base import Store

#: Where an intent came from. A tick kind (``fast``) or a face. Faces other than the person's own
#: command line are untrusted in origin.
ORIGIN_FAST = "fast"
ORIGIN_CLI = "cli"
ORIGIN_MCP = "mcp"
UNTRUSTED_ORIGINS = frozenset({ORIGIN_MCP})


def mcp_origin(agent: str | None) -> str:
    """``mcp``, or ``mcp:NAME`` for the agent whose HTTP token is named ``NAME``."""
    return ORIGIN_MCP if agent is None else f"{ORIGIN_MCP}:{agent}"


def is_mcp(origin: str) -> bool:
    """True for ``mcp`` and ``mcp:NAME``."""
    return origin.split(":", 1)[0] == ORIGIN_MCP


class Draft(msgspec.Struct, frozen=True, kw_only=True):
    """What a face asks to stage: everything but the tier, which belongs to the handler."""

    action_type: str
    title: str
    recipient: str = ""
    payload: dict[str, Any] = msgspec.field(default_factory=dict)
    #: the tick kind or face that made it: ``fast``, ``cli``, ``mcp``
    origin: str
    #: untrusted input (mail, calendars, web) fed it
    tainted: bool = False


class Staged(NamedTuple):
    """The stored intent, already at its post-gate status, and the gate's stamp."""

    intent: Intent
    stamp: gate.Stamp


def tier_of(action_type: str) -> Tier:
    """The handler's tier; no handler means external, the cautious tier (the gate also stops it)."""
    spec = handler_for(action_type)
    return Tier.EXTERNAL if spec is None else spec.tier


def stage(
    store: Store,
    profile: str,
    draft: Draft,
    settings: gate.GateSettings,
    *,
    now: datetime,
    preset: tuple[Verdict, Sequence[str]] | None = None,
    auto_allow: frozenset[str] = frozenset(),
) -> Staged:
    """Store ``draft``, stamp the gate's verdict, and move an allowed intent to ``ready``.

    ``preset`` is a verdict decided before the gate (the drift guard's ``blocked``): it is recorded
    instead of the gate's, through the same path. ``auto_allow``: the types an MCP intent may be
    allowed for without the person. Before anything is stored the draft is checked: its type must be
    a registered handler's and its payload one that handler can take (``ValidationError`` naming the
    field otherwise), whichever face staged it."""
    check_draft(draft.action_type, draft.recipient, draft.payload)
    untrusted = draft.tainted or is_mcp(draft.origin)
    spec = handler_for(draft.action_type)
    if preset is None:
        proposal = gate.Proposal(
            draft.action_type, None if spec is None else spec.tier, untrusted, draft.payload
        )
        stamp = gate.judge(proposal, settings)
        if is_mcp(draft.origin):
            stamp = _mcp_waits(_note_origin(stamp, draft.origin), draft, auto_allow)
    else:
        stamp = gate.Stamp(preset[0], tuple(preset[1]))
    new = NewIntent(
        action_type=draft.action_type,
        title=draft.title,
        recipient=draft.recipient,
        payload=draft.payload,
        tier=tier_of(draft.action_type),
        origin=IntentOrigin(tick_kind=draft.origin, tainted=untrusted),
    )
    made = store.stage_intent(profile, new, now=now)
    made = store.record_verdict(profile, made.id, stamp.verdict, stamp.reasons, now=now)
    if stamp.verdict is Verdict.ALLOWED:
        made = store.mark_ready(profile, made.id, now=now)
    return Staged(made, stamp)


def _mcp_waits(stamp: gate.Stamp, draft: Draft, auto_allow: frozenset[str]) -> gate.Stamp:
    if stamp.verdict is not Verdict.ALLOWED or draft.action_type in auto_allow:
        return stamp
    reason = (
        f"mcp.waits_for_person: the gate would allow it, but what {draft.origin} stages waits for the "
        f"person; [mcp] autoAllow does not name {draft.action_type!r}"
    )
    kept = tuple(r for r in stamp.reasons if not r.startswith("gate.allowed"))
    return gate.Stamp(Verdict.REQUIRES_APPROVAL, (*kept, reason))


def _note_origin(stamp: gate.Stamp, origin: str) -> gate.Stamp:
    reason = f"gate.untrusted_origin: staged through {origin}; judged as tainted"
    return gate.Stamp(stamp.verdict, (*stamp.reasons, reason))
