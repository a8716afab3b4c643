"""The attention gate: interrupting the person is a cost to spend, biased toward silence.

``screen`` runs the checks in the seed's order and stops at the first that fails:

    1. no candidate          2. untrusted content      3. not actionable
    4. below threshold tau*  5. quiet hours (held)     6. inferred busy window (held)
    7. the budget            -> spent atomically by the store, not here

The threshold check is strict: only a score *below* tau* is silenced (the seed's "below threshold"), so a
score of exactly tau* (0.8 with the shipped knobs) passes on to quiet hours and the budget. The voice
arbiter's raised threshold is inclusive in the same way.

Approvals skip the threshold and the budget, but past ``approval_cap`` a day they go to the digest.
``screen`` is pure: it takes ``now``, the profile's settings and what the store counted, and returns
a ``Screening`` naming the check that decided. The caller records every screening, sent or silent.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, time, timedelta
from enum import StrEnum
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgspec

from tickloop.errors import ConfigError

_HOUR = Annotated[int, msgspec.Meta(ge=0, le=23)]
_POSITIVE = Annotated[float, msgspec.Meta(gt=0)]
_PROBABILITY = Annotated[float, msgspec.Meta(ge=0, le=1)]


class AttentionSettings(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", kw_only=True
):
    """Per-profile attention settings; the defaults are the seed's shipped table."""

    #: unsolicited interruptions per day (approvals are exempt)
    budget_per_day: Annotated[int, msgspec.Meta(ge=0, le=1000)] = 6
    #: minimum minutes between unsolicited interruptions, tested globally rather than per day
    min_gap_min: Annotated[int, msgspec.Meta(ge=0, le=24 * 60)] = 90
    #: profile-local hour the quiet window starts (wraps midnight when start > end)
    quiet_start: _HOUR = 22
    #: profile-local hour the quiet window ends
    quiet_end: _HOUR = 7
    #: approval pings per day before further ones batch into the digest
    approval_cap: Annotated[int, msgspec.Meta(ge=0, le=10_000)] = 20
    #: cost of an unwanted interruption (the false-alarm knob of tau*)
    cost_false_alarm: _POSITIVE = 4.0
    #: cost of a missed chance to help (the missed-help knob of tau*)
    cost_missed_help: _POSITIVE = 1.0
    #: cost of asking a clarifying question
    clarify_cost: _POSITIVE = 0.5
    #: probability a clarifying question resolves the underspecification
    clarify_p_resolve: _PROBABILITY = 0.6
    #: proactive voice messages per day
    voice_budget_per_day: Annotated[int, msgspec.Meta(ge=0, le=100)] = 4
    #: threshold added per voice message already sent today
    voice_penalty_per_message: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.05
    #: the profile's IANA timezone, for quiet hours
    timezone: str = "UTC"

    def __post_init__(self) -> None:
        try:
            ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(
                f"attention.timezone {self.timezone!r} is not an IANA timezone (e.g. Europe/Berlin)"
            ) from None

    @property
    def threshold(self) -> float:
        """tau* = C_falsealarm / (C_falsealarm + C_missedhelp): 0.8 with the shipped 4 : 1."""
        return self.cost_false_alarm / (self.cost_false_alarm + self.cost_missed_help)


class Kind(StrEnum):
    """What is asking for the person's attention."""

    NOTICE = "notice"  #: an unsolicited update (monitor conditions, gate stops, reviews)
    APPROVAL = "approval"  #: an intent waiting for a decision: exempt from the budget
    CLARIFY = "clarify"  #: a clarifying question about the goal
    #: the one recovery notice closing a delivered alert: already paid for, so exempt from the
    #: threshold and the budget (a 90-minute gap must not swallow "it cleared")
    RECOVERY = "recovery"


class Check(StrEnum):
    """The check that decided a screening (in the order they run)."""

    NO_CANDIDATE = "no_candidate"  #: nothing to say
    UNTRUSTED = "untrusted"  #: tainted content never auto-interrupts
    NOT_ACTIONABLE = "not_actionable"  #: the person could do nothing with it
    BELOW_THRESHOLD = "below_threshold"  #: score under tau* (or the clarify value under its cost)
    QUIET_HOURS = "quiet_hours"  #: held until the quiet window ends; still recorded
    BUSY = "busy"  #: held: the calendar says the person is busy
    APPROVAL_CAP = "approval_cap"  #: over the day's approval pings: batched into the digest
    BUDGET = "budget"  #: passed every check; needs a budget slot (spent by the store)
    EXEMPT = "exempt"  #: an approval under the cap: send without spending budget


class Candidate(msgspec.Struct, frozen=True):
    """Something that might interrupt the person."""

    kind: Kind
    title: str
    score: float  #: estimated probability the person wants this now (0..1)
    tainted: bool = False  #: fed by untrusted input (mail, calendars, web)
    actionable: bool = True


class Screening(msgspec.Struct, frozen=True):
    """The outcome: deliver now, hold until a time, batch, or stay silent; and the deciding check."""

    check: Check
    deliver: bool = False  #: send now (for BUDGET: only if the store grants the slot)
    needs_budget: bool = False
    hold_until: datetime | None = None
    to_digest: bool = False


class Window(msgspec.Struct, frozen=True):
    """A busy interval taken from calendar observations."""

    start: datetime
    end: datetime


def screen(  # noqa: PLR0911  (one return per check, in the seed's order)
    candidate: Candidate | None,
    *,
    now: datetime,
    settings: AttentionSettings,
    busy: Sequence[Window] = (),
    approvals_today: int = 0,
) -> Screening:
    """Run the checks in order; the first one that fails decides."""
    if candidate is None:
        return Screening(Check.NO_CANDIDATE)
    if candidate.tainted:
        return Screening(Check.UNTRUSTED)
    if not candidate.actionable:
        return Screening(Check.NOT_ACTIONABLE)
    approval = candidate.kind is Kind.APPROVAL
    exempt = approval or candidate.kind is Kind.RECOVERY
    if not exempt and candidate.score < settings.threshold:
        return Screening(Check.BELOW_THRESHOLD)
    quiet_end = quiet_until(now, settings)
    if quiet_end is not None:
        return Screening(Check.QUIET_HOURS, hold_until=quiet_end)
    busy_end = busy_until(now, busy)
    if busy_end is not None:
        return Screening(Check.BUSY, hold_until=busy_end)
    if approval:
        if approvals_today >= settings.approval_cap:
            return Screening(Check.APPROVAL_CAP, to_digest=True)
        return Screening(Check.EXEMPT, deliver=True)
    if exempt:
        return Screening(Check.EXEMPT, deliver=True)
    return Screening(Check.BUDGET, deliver=True, needs_budget=True)


def quiet_until(now: datetime, settings: AttentionSettings) -> datetime | None:
    """If ``now`` is inside the profile-local quiet window, when it ends (aware UTC); else None.

    Computed in local wall time through zoneinfo, so a DST change moves the window with the clock
    on the wall, not with UTC.
    """
    zone = ZoneInfo(settings.timezone)
    local = now.astimezone(zone)
    start, end = settings.quiet_start, settings.quiet_end
    if start == end:
        return None
    hour = local.hour
    inside = start <= hour < end if start < end else hour >= start or hour < end
    if not inside:
        return None
    end_date = local.date() if hour < end else local.date() + timedelta(days=1)
    wall = datetime.combine(end_date, time(end), tzinfo=zone)
    return wall.astimezone(now.tzinfo)


def busy_until(now: datetime, busy: Sequence[Window]) -> datetime | None:
    """The end of the latest busy window covering ``now``, if any."""
    ends = [w.end for w in busy if w.start <= now < w.end]
    return max(ends) if ends else None


def worth_clarifying(
    settings: AttentionSettings, *, top_priority: bool, blocking: bool, underspecified: bool
) -> bool:
    """Ask a clarifying question only when its expected value beats its cost.

    Only a top-priority, blocking, underspecified goal has value to gain (1.0); its expected value
    is ``p_resolve * 1.0`` (0.6 by default) against the cost (0.5 by default).
    """
    value = 1.0 if (top_priority and blocking and underspecified) else 0.0
    return settings.clarify_p_resolve * value > settings.clarify_cost


class VoiceCheck(StrEnum):
    """What decided a proactive voice message."""

    LIVE_CONVERSATION = "live_conversation"  #: a chat is in progress: hard suppression
    VOICE_BUDGET = "voice_budget"  #: today's voice messages are spent
    VOICE_THRESHOLD = "voice_threshold"  #: under the threshold, raised per message already sent
    SPEAK = "speak"  #: allowed


def voice_arbiter(
    score: float, *, sent_today: int, live_conversation: bool, settings: AttentionSettings
) -> VoiceCheck:
    """A separate, more conservative gate for proactive voice messages."""
    if live_conversation:
        return VoiceCheck.LIVE_CONVERSATION
    if sent_today >= settings.voice_budget_per_day:
        return VoiceCheck.VOICE_BUDGET
    if score < settings.threshold + settings.voice_penalty_per_message * sent_today:
        return VoiceCheck.VOICE_THRESHOLD
    return VoiceCheck.SPEAK
