"""The attention layer wired to the store and the channels: every unsolicited message goes through here.

``Notifier.consider`` screens a candidate with ``attention.screen`` (the profile's settings and
timezone, busy windows inferred from calendar observations, today's approval pings), spends the
budget with the store's single conditional statement BEFORE anything is sent, delivers through the
profile's channels, and records the decision, sent or silenced, with the check that decided it.

Records live in the notification log: ``channel="attention"``, ``kind="attention"``, the candidate's
title as the subject and a JSON body (``check``, ``sent``, ``holdUntil``, ``digest``, ...). Each channel
attempt is logged too (channel = its name, kind = the notice's source). Held (quiet hours, busy) and
batched (approval cap) items are delivered later, as ONE message, by ``send_digest``; the digest
appends a ``digest`` record listing the item ids it carried, which marks them sent (the log is
append-only, so nothing is rewritten).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, time, timedelta
from pathlib import Path
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

import msgspec

from tickloop.config import Settings, secret
from tickloop.errors import ConfigError
from tickloop.notify import Channel, DeliveryResult, NotifySettings, SmtpSettings, build_channels
from tickloop.operator.attention import (
    AttentionSettings,
    Candidate,
    Check,
    Kind,
    Screening,
    VoiceCheck,
    Window,
    screen,
    voice_arbiter,
    worth_clarifying,
)
from tickloop.operator.conditions import MonitorSettings
from tickloop.operator.domain import Intent, Notification
from tickloop.operator.store import Store
from tickloop.operator.store.base import EPOCH

T = TypeVar("T")

#: the notification-log channel and kinds the attention layer writes.
ATTENTION = "attention"
DIGEST = "digest"
VOICE = "voice"
#: the sections a ``[profiles.NAME]`` table may override.
PROFILE_SECTIONS: dict[str, type[Any]] = {
    "attention": AttentionSettings,
    "monitor": MonitorSettings,
    "notify": NotifySettings,
}
#: how far back calendar observations are read for busy windows, and how many.
_CALENDAR_LOOKBACK = timedelta(days=14)
_CALENDAR_LIMIT = 500


# -- per-profile settings ----------------------------------------------------------------------------


def profile_section(settings: Settings, profile: str, name: str, kind: type[T]) -> T:
    """A section for one profile: the global ``[name]`` table with ``[profiles.PROFILE.name]``'s keys
    laid over it, validated together. Errors name the table and the key."""
    overrides = _profile_table(settings, profile)
    base = getattr(settings, name)
    extra = overrides.get(name, {})
    if not isinstance(extra, dict):
        raise ConfigError(f"[profiles.{profile}.{name}] must be a table")
    where = f"[profiles.{profile}.{name}] over [{name}]" if extra else f"[{name}]"
    try:
        return msgspec.convert({**base, **extra}, kind, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid configuration in {where}: {exc}") from None


def _profile_table(settings: Settings, profile: str) -> dict[str, Any]:
    table = settings.profiles.get(profile, {})
    if not isinstance(table, dict):
        raise ConfigError(f"[profiles.{profile}] must be a table")
    unknown = sorted(set(table) - set(PROFILE_SECTIONS))
    if unknown:
        raise ConfigError(
            f"[profiles.{profile}]: unknown sections {unknown}; a profile may override "
            f"{sorted(PROFILE_SECTIONS)}"
        )
    return table


def validate_profile_overrides(settings: Settings) -> None:
    """Check every ``[profiles.*]`` table now, so a typo fails the first run rather than the first alert."""
    for profile in settings.profiles:
        for name, kind in PROFILE_SECTIONS.items():
            profile_section(settings, profile, name, kind)


def attention_settings(settings: Settings, store: Store, profile: str) -> AttentionSettings:
    """The profile's attention settings; the timezone is the profile's own unless the config sets one."""
    chosen = profile_section(settings, profile, "attention", AttentionSettings)
    configured = "timezone" in settings.attention or "timezone" in _profile_table(settings, profile).get(
        "attention", {}
    )
    if configured:
        return chosen
    return msgspec.structs.replace(chosen, timezone=store.get_profile(profile).timezone)


# -- busy windows ------------------------------------------------------------------------------------


def busy_windows(store: Store, profile: str, *, now: datetime) -> list[Window]:
    """Timed calendar events around ``now``, from observations (newest observation per event wins:
    a later removal or cancellation frees the slot). All-day and transparent events do not count."""
    seen: set[str] = set()
    windows = []
    for obs in store.list_observations(profile, since=now - _CALENDAR_LOOKBACK, limit=_CALENDAR_LIMIT):
        if not obs.source.startswith("calendar"):
            continue
        payload = obs.payload
        uid = str(payload.get("uid", "")) + str(payload.get("_instance", ""))
        if uid in seen:
            continue
        seen.add(uid)
        window = _window(payload)
        if window is not None:
            windows.append(window)
    return windows


def _window(payload: Mapping[str, Any]) -> Window | None:
    if payload.get("allDay") or str(payload.get("status", "")).upper() == "CANCELLED":
        return None
    try:
        start = datetime.fromisoformat(str(payload["start"]))
        end = datetime.fromisoformat(str(payload["end"]))
    except (KeyError, ValueError):
        return None  # a removal ({"uid"}) or a date-only value
    if start.tzinfo is None or end.tzinfo is None or end <= start:
        return None
    return Window(start, end)


# -- records -----------------------------------------------------------------------------------------


class Decision(msgspec.Struct, frozen=True):
    """What the attention layer did with one candidate."""

    check: Check
    sent: bool  #: delivered through at least one channel
    hold_until: datetime | None = None
    to_digest: bool = False
    results: tuple[DeliveryResult, ...] = ()
    record_id: int = 0


class AttentionRecord(msgspec.Struct, frozen=True):
    """One recorded decision, as ``tickloop operator attention`` shows it."""

    id: int
    at: datetime
    title: str
    check: str
    kind: str
    source: str
    sent: bool
    hold_until: str | None
    digest: bool


class _RecordBody(msgspec.Struct, rename="camel"):
    """What a record's body may say (any JSON value in each field; other fields ignored)."""

    check: object = ""
    kind: object = ""
    source: object = ""
    sent: object = False
    hold_until: object = None
    digest: object = False


#: decodes a body straight into its fields, in C (the attention page reads up to 1,000 records)
_RECORD_BODY = msgspec.json.Decoder(_RecordBody)


def read_record(note: Notification) -> AttentionRecord:
    """Decode an attention record from the notification log (a body that is not a JSON object counts
    as an empty one)."""
    try:
        body = _RECORD_BODY.decode(note.body)
    except msgspec.DecodeError:  # not JSON, or not an object
        body = _RecordBody()
    hold: Any = body.hold_until  # as stored: a time, or whatever a hand-written body says
    return AttentionRecord(
        id=note.id,
        at=note.sent_at,
        title=note.subject,
        check=str(body.check),
        kind=str(body.kind),
        source=str(body.source),
        sent=bool(body.sent),
        hold_until=hold,
        digest=bool(body.digest),
    )


def _json(text: str) -> dict[str, Any]:
    try:
        value = msgspec.json.decode(text)  # in C: the attention page decodes up to 1,000 of these
    except msgspec.DecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def local_day_start(now: datetime, zone: str) -> datetime:
    """The start of the profile-local day containing ``now``, as an aware time."""
    local = now.astimezone(ZoneInfo(zone))
    return datetime.combine(local.date(), time(0), tzinfo=ZoneInfo(zone))


def attention_records(
    store: Store, profile: str, *, since: datetime = EPOCH, limit: int = 100_000
) -> list[AttentionRecord]:
    """Every recorded decision since ``since`` (the newest ``limit``), newest first."""
    notes = store.list_notifications(profile, since=since, limit=limit, channel=ATTENTION, kind=ATTENTION)
    return [read_record(n) for n in notes]


# -- candidates from the loop's other parts ------------------------------------------------------------

#: how likely the person wants each kind of unsolicited notice now (tau* is 0.8 by default).
GATE_STOP_SCORE = 0.85
DRIFT_SCORE = 0.85


def approval_candidate(intent: Intent, *, link: str = "") -> Candidate:
    """An intent waiting at ``requires_approval``. One fed by untrusted input does not ping (its title
    may be an attacker's words); it waits in ``tickloop operator intents`` and the monitor's
    "waiting on your approval" notice, in the operator's own words, points the person there.
    ``link`` is the dashboard's page for the intent (``dashboard_link``), shown after the title."""
    title = f"approval needed: intent #{intent.id} {intent.title}"
    return Candidate(Kind.APPROVAL, f"{title} {link}".rstrip(), 1.0, intent.origin.tainted)


class DashboardSettings(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", kw_only=True
):
    """Where the person opens ``tickloop web``, for links in notices."""

    #: the dashboard's address as the person opens it (``https://host:8765``); approval notices
    #: link to its page (the link only opens the page: deciding needs a login and a POST)
    base_url: str = ""
    #: where ``tickloop web`` is reached from a phone (``https://host``): its Host allowlist and the
    #: base of its login URL; notice links use it when ``baseUrl`` is unset
    public_url: str = ""


def dashboard_link(settings: Settings, profile: str, intent_id: int | None = None) -> str:
    """The dashboard page for ``intent_id`` (or the approvals page); "" without ``[web] baseUrl``."""
    from urllib.parse import quote, urlsplit  # noqa: PLC0415

    chosen = profile_section_web(settings)
    base = (chosen.base_url or chosen.public_url).strip()
    if not base:
        return ""
    parts = urlsplit(base)
    if parts.scheme not in {"http", "https"} or not parts.netloc or not base.isprintable() or " " in base:
        raise ConfigError(f"[web] baseUrl {base!r} must be an http:// or https:// address")
    page = f"intents/{intent_id}" if intent_id is not None else "approvals"
    return f"{base.rstrip('/')}/p/{quote(profile, safe='')}/{page}"


def profile_section_web(settings: Settings) -> DashboardSettings:
    """The ``[web]`` table, validated."""
    try:
        return msgspec.convert(settings.web, DashboardSettings, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid configuration in [web]: {exc}") from None


def gate_stop_candidate(intent: Intent) -> Candidate:
    """The gate blocked an action the fast tick proposed."""
    reasons = ", ".join(intent.verdict_reasons) or "no reason recorded"
    return Candidate(
        Kind.NOTICE,
        f"blocked: intent #{intent.id} {intent.title} ({reasons})",
        GATE_STOP_SCORE,
        intent.origin.tainted,
    )


def drift_candidate(flags: Sequence[str], *, tainted: bool) -> Candidate | None:
    """The slow review's drift flags, as one notice (None: no flags, nothing to say)."""
    if not flags:
        return None
    return Candidate(Kind.NOTICE, "drift: " + "; ".join(flags), DRIFT_SCORE, tainted)


# -- the notifier ------------------------------------------------------------------------------------


class Notifier(msgspec.Struct):
    """Screens, spends, delivers and records for one profile. Channels are built on first use."""

    store: Store
    profile: str
    settings: Settings
    env: Mapping[str, str]
    channels_factory: Callable[[], Sequence[Channel]] | None = None
    _attention: AttentionSettings | None = None
    _channels: Sequence[Channel] | None = None

    @property
    def attention(self) -> AttentionSettings:
        if self._attention is None:
            self._attention = attention_settings(self.settings, self.store, self.profile)
        return self._attention

    def channels(self) -> Sequence[Channel]:
        if self._channels is None:
            self._channels = (self.channels_factory or self._build_channels)()
        return self._channels

    def _build_channels(self) -> Sequence[Channel]:
        notify = profile_section(self.settings, self.profile, "notify", NotifySettings)
        smtp = msgspec.convert(self.settings.smtp, SmtpSettings, strict=False)
        return build_channels(notify, smtp=smtp, secret=lambda name: secret(name, self.settings, self.env))

    def consider(
        self, candidate: Candidate | None, *, now: datetime, source: str, body: str = ""
    ) -> Decision:
        """Screen ``candidate``; spend, deliver and record. Every outcome is recorded."""
        settings = self.attention
        screening = self._screen(candidate, now=now, settings=settings)
        results: tuple[DeliveryResult, ...] = ()
        check = screening.check
        if screening.deliver and screening.needs_budget:
            day = now.astimezone(ZoneInfo(settings.timezone)).date().isoformat()
            spent = self.store.spend_attention(
                self.profile,
                now=now,
                day=day,
                cap=settings.budget_per_day,
                min_gap=timedelta(minutes=settings.min_gap_min),
                reason=source,
            )
            screening = screening if spent else Screening(Check.BUDGET)
        if screening.deliver and candidate is not None:
            results = self.deliver(candidate.title, body, now=now, source=source)
        sent = any(r.ok for r in results)
        record = self._record(candidate, screening, check=check, sent=sent, now=now, source=source, body=body)
        return Decision(check, sent, screening.hold_until, screening.to_digest, results, record.id)

    def _screen(
        self, candidate: Candidate | None, *, now: datetime, settings: AttentionSettings
    ) -> Screening:
        if candidate is None or candidate.tainted or not candidate.actionable:
            return screen(candidate, now=now, settings=settings)  # decided before any store read
        approvals = 0
        if candidate.kind is Kind.APPROVAL:
            since = local_day_start(now, settings.timezone)
            approvals = sum(
                1
                for r in attention_records(self.store, self.profile, since=since)
                if r.kind == Kind.APPROVAL and r.check == Check.EXEMPT
            )
        busy = busy_windows(self.store, self.profile, now=now)
        return screen(candidate, now=now, settings=settings, busy=busy, approvals_today=approvals)

    def deliver(self, subject: str, body: str, *, now: datetime, source: str) -> tuple[DeliveryResult, ...]:
        """Send through every channel (no screening: callers screen first); log each attempt."""
        results = []
        for channel in self.channels():
            result = channel.send(subject, body)
            results.append(result)
            logged = body if result.ok else f"delivery failed: {result.reason}\n\n{body}"
            self.store.log_notification(
                self.profile, channel=channel.name, kind=source, subject=subject, body=logged, now=now
            )
        return tuple(results)

    def _record(
        self,
        candidate: Candidate | None,
        screening: Screening,
        *,
        check: Check,
        sent: bool,
        now: datetime,
        source: str,
        body: str,
    ) -> Notification:
        spent_denied = screening.check is Check.BUDGET and not screening.deliver
        data = {
            "check": check.value,
            "kind": "" if candidate is None else candidate.kind.value,
            "score": None if candidate is None else candidate.score,
            "tainted": None if candidate is None else candidate.tainted,
            "source": source,
            "sent": sent,
            "budgetDenied": spent_denied and check is Check.BUDGET,
            "holdUntil": None if screening.hold_until is None else screening.hold_until.isoformat(),
            "digest": screening.to_digest,
            "text": body,
        }
        return self.store.log_notification(
            self.profile,
            channel=ATTENTION,
            kind=ATTENTION,
            subject="" if candidate is None else candidate.title,
            body=json.dumps(data, sort_keys=True),
            now=now,
        )

    # -- clarifying questions and voice ----------------------------------------------------------------

    def clarify(
        self,
        question: str,
        *,
        now: datetime,
        top_priority: bool,
        blocking: bool,
        underspecified: bool,
        body: str = "",
    ) -> Decision:
        """Ask a clarifying question only when ``worth_clarifying``; otherwise record the silence."""
        worth = worth_clarifying(
            self.attention, top_priority=top_priority, blocking=blocking, underspecified=underspecified
        )
        candidate = Candidate(Kind.CLARIFY, question, score=1.0 if worth else 0.0)
        return self.consider(candidate, now=now, source="clarify", body=body)

    def voice(self, text: str, *, score: float, now: datetime, presence: Path | None = None) -> VoiceCheck:
        """The voice arbiter: may this proactive voice message be spoken now? Spends a voice slot
        (its own budget, min gap 0) when it may, and records the decision either way. Speaking it is
        the caller's: there is no voice channel yet."""
        from tickloop.presence import chat_active  # noqa: PLC0415

        settings = self.attention
        zone = ZoneInfo(settings.timezone)
        since = local_day_start(now, settings.timezone)
        spends = self.store.attention_spends(self.profile, since=since)
        sent_today = sum(1 for s in spends if s.budget == VOICE)
        check = voice_arbiter(
            score, sent_today=sent_today, live_conversation=chat_active(presence), settings=settings
        )
        if check is VoiceCheck.SPEAK and not self.store.spend_attention(
            self.profile,
            now=now,
            day=now.astimezone(zone).date().isoformat(),
            cap=settings.voice_budget_per_day,
            min_gap=timedelta(0),
            budget=VOICE,
            reason=text[:200],
        ):
            check = VoiceCheck.VOICE_BUDGET  # another process took the last slot
        data = {"check": check.value, "score": score, "sentToday": sent_today, "text": text}
        self.store.log_notification(
            self.profile, channel=ATTENTION, kind=VOICE, subject=text[:200], body=json.dumps(data), now=now
        )
        return check


# -- the digest --------------------------------------------------------------------------------------


class DigestResult(msgspec.Struct, frozen=True):
    """What ``send_digest`` did."""

    items: int
    sent: bool
    results: tuple[DeliveryResult, ...] = ()


def pending_digest(store: Store, profile: str, *, now: datetime) -> list[AttentionRecord]:
    """Items waiting for the digest, oldest first: batched approvals, and held items whose hold has
    ended, that no delivered digest has carried yet."""
    carried: set[int] = set()
    for note in store.list_notifications(profile, limit=100_000, channel=ATTENTION, kind=DIGEST):
        body = _json(note.body)
        if body.get("sent"):
            carried.update(int(i) for i in body.get("items", []))
    items = []
    records = store.list_notifications(profile, limit=100_000, channel=ATTENTION, kind=ATTENTION)
    for note in reversed(records):
        if note.id in carried:
            continue
        record = read_record(note)
        held = record.hold_until is not None and datetime.fromisoformat(record.hold_until) <= now
        if record.digest or held:
            items.append(record)
    return items


def send_digest(notifier: Notifier, *, now: datetime) -> DigestResult:
    """Send every pending item as ONE message through the channels; mark them sent on delivery."""
    items = pending_digest(notifier.store, notifier.profile, now=now)
    if not items:
        return DigestResult(0, sent=False)
    subject = f"tickloop digest: {len(items)} item(s)"
    body = "\n".join(f"- [{r.check}] {r.title}" for r in items)
    results = notifier.deliver(subject, body, now=now, source=DIGEST)
    sent = any(r.ok for r in results)
    data = {"items": [r.id for r in items], "sent": sent}
    notifier.store.log_notification(
        notifier.profile, channel=ATTENTION, kind=DIGEST, subject=subject, body=json.dumps(data), now=now
    )
    return DigestResult(len(items), sent, results)
