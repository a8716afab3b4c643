"""The pages where the person decides: the waiting intents and one intent, read and decided.

An intent is shown as the person judges it (an email as a mail client shows it: To, Subject, Body),
with only the observations recorded with it (``payload.fed_by``), never a guess. Its buttons name it
("Approve #43 · email to ada@…"), and a decision on an intent that no longer waits is refused in
words. The one write is ``decide``, through the same ``Store.decide`` the CLI uses.
"""

from __future__ import annotations

import getpass
import json
from datetime import datetime
from typing import Any

import msgspec

from tickloop.errors import ConflictError, NotFoundError
from tickloop.operator.domain import (
    Decision,
    DecisionKind,
    Intent,
    IntentStatus,
    Notification,
    Observation,
    PlanStep,
    ProgressRow,
)
from tickloop.operator.store.base import Store

#: how many waiting intents the approvals page shows per page, oldest first (the count says how many
#: wait in all; the person decides them in order, and twenty full cards are already a long page on a phone)
APPROVALS_SHOWN = 20
#: how many observations an intent's ``fed_by`` may name (the fast tick records at most this many)
FED_SHOWN = 20
#: how long a button's short title may be ("email to ada@…")
LABEL_CHARS = 28
#: log lines and progress rows naming the intent that its page shows at most (the newest)
TRAIL_SHOWN = 200
#: the prefix a dashboard decision's ``by`` carries: ``web:<login>``
VIA_WEB = "web:"
#: payload keys the proposal shows in its own place (not again among the other fields)
SHOWN_KEYS = frozenset({"body", "fed_by"})


# -- approvals ---------------------------------------------------------------------------------------


class Proposal(msgspec.Struct, frozen=True):
    """What an intent would do, as the person reads it: an email as a mail client shows it."""

    headers: list[tuple[str, str | None]]  #: (label, text): To and Subject for an email; None: none given
    body: str | None  #: the text as written, newlines and all
    rest: dict[str, Any]  #: the payload's other fields


def proposal(intent: Intent) -> Proposal:
    """To, Subject and Body for an email; the title, recipient and body for any other type."""
    body = intent.payload.get("body")
    text = body if isinstance(body, str) else None
    rest = {k: v for k, v in intent.payload.items() if k not in SHOWN_KEYS or (k == "body" and text is None)}
    if intent.action_type == "email":
        return Proposal([("To", intent.recipient or None), ("Subject", intent.title)], text, rest)
    heads: list[tuple[str, str | None]] = [("Title", intent.title)]
    heads += [("Recipient", intent.recipient)] if intent.recipient else []
    return Proposal(heads, text, rest)


def label(intent: Intent) -> str:
    """The short title a decision button carries: ``email to ada@…``, ``purchase: New keyboard``."""
    text = (
        f"{intent.action_type} to {intent.recipient}"
        if intent.recipient
        else f"{intent.action_type}: {intent.title}"
    )
    text = " ".join(text.split())
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def fed_ids(intent: Intent) -> list[int]:
    """The observation ids recorded with the intent (``payload.fed_by``), nothing guessed."""
    raw = intent.payload.get("fed_by")
    if not isinstance(raw, list):
        return []
    return [i for i in raw if isinstance(i, int) and not isinstance(i, bool)][:FED_SHOWN]


class Waiting(msgspec.Struct, frozen=True):
    """One intent that waits for the person, with what it came from."""

    intent: Intent
    step: PlanStep | None
    fed_by: list[Observation]

    # Worked out when a card is rendered, not when it is read: a card already rendered (fragments.py)
    # shows neither again, and an intent's title, recipient and payload never change once staged.
    @property
    def label(self) -> str:
        return label(self.intent)

    @property
    def proposal(self) -> Proposal:
        return proposal(self.intent)


class Decided(msgspec.Struct, frozen=True):
    """The decision just made, shown above the next waiting cards."""

    intent: Intent
    decision: Decision | None
    label: str


class ApprovalsPage(msgspec.Struct, frozen=True):
    """A page of waiting intents, oldest first (the order to decide them in), and how many wait in all."""

    items: list[Waiting]
    total: int
    after: int  #: the page starts after this id (0: the oldest)
    next_after: int | None  #: where the next page starts, or None on the last page
    decided: Decided | None


def approvals_page(
    store: Store, profile: str, *, after: int = 0, decided: int | None = None
) -> ApprovalsPage:
    """The waiting intents after ``after`` with their plan step and the observations recorded as feeding
    them; ``decided`` names a decision just made, shown first."""
    total = store.count_intents(profile, status=IntentStatus.REQUIRES_APPROVAL)
    waiting = store.intents_oldest(
        profile, status=IntentStatus.REQUIRES_APPROVAL, after=after, limit=APPROVALS_SHOWN + 1
    )
    more = len(waiting) > APPROVALS_SHOWN
    waiting = waiting[:APPROVALS_SHOWN]
    items = waiting_cards(store, profile, waiting)
    nxt = waiting[-1].id if more else None
    return ApprovalsPage(
        items, total, after, nxt, None if decided is None else decided_card(store, profile, decided)
    )


def waiting_cards(store: Store, profile: str, intents: list[Intent]) -> list[Waiting]:
    """The cards of ``intents``, with two reads at most however many there are: the plan (only when a
    card names a step) and every card's recorded observations at once."""
    steps = _steps(store, profile) if any(_int(i.payload.get("step_id")) > 0 for i in intents) else {}
    wanted = [set(fed_ids(i)) for i in intents]
    found = store.observations_by_id(profile, sorted(set().union(*wanted)))  # oldest first
    return [
        Waiting(intent, steps.get(_int(intent.payload.get("step_id"))), [o for o in found if o.id in ids])
        for intent, ids in zip(intents, wanted, strict=True)
    ]


def waiting_card(store: Store, profile: str, intent: Intent) -> Waiting:
    """One card: the proposal, its plan step, and the observations it recorded."""
    [card] = waiting_cards(store, profile, [intent])
    return card


def decided_card(store: Store, profile: str, intent_id: int) -> Decided | None:
    try:
        intent = store.get_intent(profile, intent_id)
    except NotFoundError:
        return None
    decision = store.get_decision(profile, intent.decision_id) if intent.decision_id else None
    return Decided(intent, decision, label(intent))


def _steps(store: Store, profile: str) -> dict[int, PlanStep]:
    goal = store.active_goal_model(profile)
    return {} if goal is None else {s.id: s for s in store.list_plan(profile, goal.version)}


def _int(value: object) -> int:
    return value if isinstance(value, int) else -1


def decider() -> str:
    """Who a dashboard decision is recorded as: ``web:`` and the login of the person running it."""
    try:
        return VIA_WEB + getpass.getuser()
    except (KeyError, OSError):
        return VIA_WEB + "person"


def decide(
    store: Store, profile: str, intent_id: int, *, approve: bool, note: str, now: datetime
) -> Decision:
    """The person's decision, through the same store call as ``tickloop operator approve|deny``.

    A retry of a decision already recorded (same kind, same person) returns that decision instead of
    a second one, so a POST sent again after a timeout is safe. Any other intent that no longer waits
    raises ``ConflictError`` saying, in words, what became of it."""
    kind = DecisionKind.APPROVE if approve else DecisionKind.DENY
    try:
        return store.decide(profile, intent_id, kind, by=decider(), note=note.strip()[:2000], now=now)
    except ConflictError:
        intent = store.get_intent(profile, intent_id)
        decision = store.get_decision(profile, intent.decision_id) if intent.decision_id else None
        if decision is not None and decision.kind is kind and decision.by == decider():
            return decision
        raise ConflictError(gone(intent, decision)) from None


def gone(intent: Intent, decision: Decision | None) -> str:
    """Why a decision on this intent was not recorded."""
    head = f"Not recorded: #{intent.id} · {label(intent)} is no longer waiting for you."
    if decision is None:
        return f"{head} It is now {intent.status.value}."
    state = "approved" if decision.kind is DecisionKind.APPROVE else "denied"
    return f"{head} It was {state} by {decision.by} at {decision.decided_at:%Y-%m-%d %H:%M:%S} UTC."


class LifeEvent(msgspec.Struct, frozen=True):
    """One moment in an intent's life."""

    at: datetime | None
    state: str
    text: str


class IntentPage(msgspec.Struct, frozen=True):
    """One intent: its life, its decision, and every log line and progress row that names it."""

    intent: Intent
    life: list[LifeEvent]
    decision: Decision | None
    log: list[Notification]
    rows: list[ProgressRow]
    waiting: bool
    card: Waiting


def intent_page(store: Store, profile: str, intent_id: int) -> IntentPage:
    intent = store.get_intent(profile, intent_id)
    decision = store.get_decision(profile, intent.decision_id) if intent.decision_id else None
    log = store.notifications_for_intent(profile, intent.id, limit=TRAIL_SHOWN)
    rows = store.progress_for_intent(profile, intent.id, limit=TRAIL_SHOWN)
    waiting = intent.status is IntentStatus.REQUIRES_APPROVAL
    return IntentPage(
        intent, life(intent, decision), decision, log, rows, waiting, waiting_card(store, profile, intent)
    )


#: How each kind of decision shows in an intent's life.
DECIDED = {
    DecisionKind.APPROVE: "approved",
    DecisionKind.DENY: "denied",
    DecisionKind.RETRY: "retried",
    DecisionKind.DONE_BY_HAND: "done by hand",
    DecisionKind.DID_NOT_HAPPEN: "did not happen",
}


def life(intent: Intent, decision: Decision | None) -> list[LifeEvent]:
    """proposed -> the gate's verdict -> the person's decision -> the claim -> where it ended."""
    events = [LifeEvent(intent.created_at, "proposed", f"by the {intent.origin.tick_kind} tick or face")]
    if intent.verdict is not None:
        events.append(LifeEvent(intent.created_at, intent.verdict.value, "; ".join(intent.verdict_reasons)))
    if decision is not None:
        said = f" ({decision.note})" if decision.note else ""
        state = DECIDED[decision.kind]
        events.append(LifeEvent(decision.decided_at, state, f"by {decision.by}{said}"))
    if intent.claimed_at is not None:
        events.append(LifeEvent(intent.claimed_at, "claimed", f"by {intent.claim_owner or '?'}"))
    if intent.status.value not in {e.state for e in events}:
        result = json.dumps(intent.result, sort_keys=True) if intent.result else ""
        events.append(LifeEvent(intent.updated_at, intent.status.value, result))
    return events
