"""The operator's entities and enums: frozen records the store returns, and the inputs it accepts.

Every record belongs to exactly one profile. Times are timezone-aware UTC datetimes supplied by the
caller (the store never reads the clock). Ids are integers assigned by the store.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import msgspec

from tickloop.errors import ValidationError

if TYPE_CHECKING:  # zoneinfo pulls in sysconfig: only what reads a zone imports it
    from zoneinfo import ZoneInfo

#: The largest intent payload / observation payload / note the store accepts, in UTF-8 bytes.
MAX_TEXT_BYTES = 4 * 1024 * 1024


class IntentStatus(StrEnum):
    """Where an action intent is in its life (the table is in ``tickloop.operator.intents``)."""

    PROPOSED = "proposed"  #: recorded, the gate has not judged it yet
    ALLOWED = "allowed"  #: the gate allowed it
    REQUIRES_APPROVAL = "requires_approval"  #: the gate wants a person's decision first
    BLOCKED = "blocked"  #: the gate refused it; never approvable, executable or markable (final)
    READY = "ready"  #: allowed and staged for the executor
    APPROVED = "approved"  #: a person approved it; the executor may take it
    DENIED = "denied"  #: a person denied it (final)
    CLAIMED = "claimed"  #: one executor holds it; nobody else may take it
    SENDING = "sending"  #: inside the side-effect zone: the outcome is unknown until it ends
    SENT = "sent"  #: the effect happened (final)
    COMPLETED = "completed"  #: done without a send, e.g. a hand-off to a person (final)
    FAILED = "failed"  #: refused or failed before any effect could happen (final)
    NEEDS_HUMAN = "needs_human"  #: unknown outcome: a person must reconcile it; never retried (final)


class Verdict(StrEnum):
    """The gate's judgement of one intent."""

    ALLOWED = "allowed"  #: may proceed to ready
    REQUIRES_APPROVAL = "requires_approval"  #: held for a person
    BLOCKED = "blocked"  #: refused for good


class Tier(StrEnum):
    """What the handler that would perform an intent is able to do."""

    REVERSIBLE = "reversible"  #: writes only: notes, drafts, jailed builds
    EXTERNAL = "external"  #: leaves the machine: mail, messages
    SPEND = "spend"  #: money: never executed, always handed to a person


class Outcome(StrEnum):
    """The fixed set of progress-row outcome labels, set deterministically by the runner."""

    DONE = "done"  #: the tick did its work
    STAGED = "staged"  #: an allowed intent was staged for the executor
    NOOP = "noop"  #: nothing to do
    REFUSED = "refused"  #: the tick refused to act (e.g. no active goal model)
    GATE_STOP = "gate_stop"  #: the gate stopped the action (approval needed or blocked)
    BLOCKED = "blocked"  #: the drift guard blocked a repeat of a tried-and-failed action
    FAILED = "failed"  #: an exception ended the tick
    INTERRUPTED = "interrupted"  #: a signal ended the tick; the handler flushed this row


#: Outcomes that count as progress for the stall monitor.
PROGRESS_OUTCOMES = frozenset({Outcome.DONE, Outcome.STAGED})


class TickKind(StrEnum):
    """The one-shot processes that write progress rows and take tick locks."""

    OBSERVE = "observe"  #: cheap deltas from outside, tainted
    FAST = "fast"  #: the doer: one step per tick
    SLOW = "slow"  #: the daily reviewer
    EXECUTOR = "executor"  #: the only process that acts
    CONSOLIDATE = "consolidate"  #: the nightly summary and pruning
    MONITOR = "monitor"  #: the stall monitor, outside the loop


class GoalStatus(StrEnum):
    """A goal model version's standing; at most one is active per profile."""

    DRAFT = "draft"  #: written (e.g. by consolidation) but never auto-activated
    ACTIVE = "active"  #: the goal every tick re-grounds on
    RETIRED = "retired"  #: replaced by a later activation


class TaskStatus(StrEnum):
    """A board task's state."""

    TODO = "todo"  #: not started
    DOING = "doing"  #: in progress
    BLOCKED = "blocked"  #: cannot progress; its plan steps become blocked, never done
    DONE = "done"  #: finished


class StepStatus(StrEnum):
    """A plan step's state; the first pending step is the current one."""

    PENDING = "pending"  #: not yet done
    DONE = "done"  #: advanced
    BLOCKED = "blocked"  #: its task is blocked
    SKIPPED = "skipped"  #: deliberately passed over


class DecisionKind(StrEnum):
    """A person's answer to an intent: approval, or the way back from a dead end."""

    APPROVE = "approve"  #: the intent may be executed
    DENY = "deny"  #: the intent is dropped
    RETRY = "retry"  #: a failed or needs_human intent goes back to the executor (a sanctioned retry)
    DONE_BY_HAND = "done_by_hand"  #: needs_human reconciled: the person did it; the intent is completed
    DID_NOT_HAPPEN = "did_not_happen"  #: needs_human reconciled: nothing happened; the intent failed


def check_text(name: str, value: str, *, limit: int = MAX_TEXT_BYTES) -> str:
    """Return ``value`` if it is storable text: valid UTF-8, no NUL, at most ``limit`` bytes."""
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValidationError(f"{name}: not valid UTF-8 text; re-encode the input as UTF-8") from None
    if "\x00" in value:
        raise ValidationError(f"{name}: contains a NUL character, which the store cannot keep")
    if size > limit:
        raise ValidationError(f"{name}: {size} bytes is over the limit of {limit} bytes")
    return value


def check_timezone(name: str, *, where: str = "--timezone") -> ZoneInfo:
    """The IANA zone ``name`` names, or a ``ValidationError`` naming ``where`` (checked at entry)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # noqa: PLC0415

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError, TypeError):
        raise ValidationError(
            f"{where}: {name!r} is not an IANA timezone (e.g. Europe/Berlin, America/New_York, UTC)"
        ) from None


class Profile(msgspec.Struct, frozen=True):
    """One person's operator; every other row belongs to exactly one profile."""

    name: str
    display_name: str
    timezone: str
    created_at: datetime

    def zone(self) -> ZoneInfo:
        """The profile's zone; a stored value that names none is one clear error saying how to fix it."""
        where = f"profile {self.name!r}: stored timezone (fix: tickloop operator profile set --timezone ZONE)"
        return check_timezone(self.timezone, where=where)


class GoalModel(msgspec.Struct, frozen=True):
    """One version of a profile's goal model."""

    profile: str
    version: int
    status: GoalStatus
    title: str
    body: str
    data: dict[str, Any]
    created_at: datetime
    activated_at: datetime | None


class Task(msgspec.Struct, frozen=True):
    """A task on the board."""

    id: int
    profile: str
    title: str
    priority: int
    status: TaskStatus
    notes: str
    created_at: datetime
    updated_at: datetime


class NewPlanStep(msgspec.Struct, frozen=True):
    """A plan step to write; ``position`` is its index in the list passed to ``replace_plan``."""

    title: str
    task_id: int | None = None


class PlanStep(msgspec.Struct, frozen=True):
    """One ordered step of a goal's forward plan."""

    id: int
    profile: str
    goal_version: int
    position: int
    title: str
    task_id: int | None
    status: StepStatus
    updated_at: datetime


class IntentOrigin(msgspec.Struct, frozen=True):
    """Which tick made an intent, and whether untrusted input fed it."""

    tick_kind: str = "manual"
    tainted: bool = False


class NewIntent(msgspec.Struct, frozen=True):
    """An action to stage; it starts at ``proposed``."""

    action_type: str
    title: str
    recipient: str = ""
    payload: dict[str, Any] = msgspec.field(default_factory=dict)
    tier: Tier = Tier.REVERSIBLE
    dry_run: bool = True
    origin: IntentOrigin = msgspec.field(default_factory=IntentOrigin)


class Intent(msgspec.Struct, frozen=True):
    """An action intent and everything the gate, the person and the executor recorded on it."""

    id: int
    profile: str
    action_type: str
    title: str
    recipient: str
    payload: dict[str, Any]
    tier: Tier
    status: IntentStatus
    verdict: Verdict | None
    verdict_reasons: tuple[str, ...]
    decision_id: int | None
    claim_owner: str | None
    claimed_at: datetime | None
    claim_prior: IntentStatus | None
    #: True until an armed executor ends it (a dry pass never does); False once something really ran
    dry_run: bool
    #: the ending's record, or a dry pass's ``{"dry_run": true, "preview": ...}`` (status unchanged)
    result: dict[str, Any] | None
    handoff: bool
    origin: IntentOrigin
    created_at: datetime
    updated_at: datetime

    def action_key(self) -> str:
        """``type|title|recipient``, lowercased and whitespace-collapsed: the drift guard's key."""
        raw = f"{self.action_type}|{self.title}|{self.recipient}".lower()
        return " ".join(raw.split())


class Decision(msgspec.Struct, frozen=True):
    """A person's approve or deny of one intent."""

    id: int
    profile: str
    intent_id: int
    kind: DecisionKind
    by: str
    note: str
    decided_at: datetime


class NewProgress(msgspec.Struct, frozen=True):
    """One tick's row: written on every path, keyed to the state hash the tick saw."""

    tick_kind: str
    outcome: Outcome
    started_at: datetime
    ended_at: datetime
    state_hash: str = ""
    intent_id: int | None = None
    error: str = ""
    detail: str = ""


class ProgressRow(msgspec.Struct, frozen=True):
    """A stored progress row."""

    id: int
    profile: str
    tick_kind: str
    outcome: Outcome
    state_hash: str
    intent_id: int | None
    error: str
    detail: str
    started_at: datetime
    ended_at: datetime


class Observation(msgspec.Struct, frozen=True):
    """Something the observe tick saw; the content hash is unique per profile."""

    id: int
    profile: str
    source: str
    content_hash: str
    tainted: bool
    payload: dict[str, Any]
    observed_at: datetime


class MemoryNote(msgspec.Struct, frozen=True):
    """A note the operator keeps, searchable by full text."""

    id: int
    profile: str
    text: str
    source: str
    tainted: bool
    created_at: datetime


class Critique(msgspec.Struct, frozen=True):
    """An ephemeral self-critique; only the last three per goal are kept."""

    id: int
    profile: str
    goal_version: int
    text: str
    failure_type: str
    created_at: datetime


class AttentionSpend(msgspec.Struct, frozen=True):
    """One unsolicited interruption that the budget paid for."""

    id: int
    profile: str
    budget: str
    reason: str
    spent_at: datetime


class Notification(msgspec.Struct, frozen=True):
    """One message sent (or attempted) to the person."""

    id: int
    profile: str
    channel: str
    kind: str
    subject: str
    body: str
    intent_id: int | None
    sent_at: datetime


class ConditionState(msgspec.Struct, frozen=True):
    """The stall monitor's memory of one condition (stuck, silent, no_goal)."""

    profile: str
    name: str
    active: bool
    since: datetime | None
    last_notified_at: datetime | None
    updated_at: datetime


class StateOfPlay(msgspec.Struct, frozen=True):
    """The nightly summary the next morning's tick reads first."""

    id: int
    profile: str
    text: str
    created_at: datetime
