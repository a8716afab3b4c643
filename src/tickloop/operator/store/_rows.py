"""Rows from either SQL backend -> frozen domain records (SQLite gives text times and 0/1 flags,
PostgreSQL gives datetimes and booleans; both come out the same)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from tickloop.errors import ValidationError
from tickloop.operator.domain import (
    AttentionSpend,
    ConditionState,
    Critique,
    Decision,
    DecisionKind,
    GoalModel,
    GoalStatus,
    Intent,
    IntentOrigin,
    IntentStatus,
    MemoryNote,
    Notification,
    Observation,
    Outcome,
    PlanStep,
    Profile,
    ProgressRow,
    StateOfPlay,
    StepStatus,
    Task,
    TaskStatus,
    Tier,
    Verdict,
    check_text,
)

Row = Mapping[str, Any]


def dumps(name: str, value: Any) -> str:
    """Canonical JSON (sorted keys, compact, ASCII) for a JSON column; refuses what JSON can't hold."""
    import json  # noqa: PLC0415  (an observe tick that finds nothing never loads json)

    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{name}: not JSON-serialisable: {exc}") from None
    return check_text(name, text)


def _loads(text: str) -> Any:
    import json  # noqa: PLC0415  (an observe tick that finds nothing never loads json)

    return json.loads(text)


def iso(moment: datetime) -> str:
    """A time as SQLite stores it: ISO 8601 UTC, milliseconds, ``Z`` (the format of ``utc_iso``).

    Not imported from ``tickloop.clock``: that module pulls in asyncio, 20 ms a tick never needs.
    """
    if moment.tzinfo is None:
        raise ValueError("the store needs timezone-aware datetimes")
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ts(value: Any) -> datetime:
    """A stored time as an aware UTC datetime."""
    if isinstance(value, str) and value.endswith("Z"):
        return datetime.fromisoformat(value)  # SQLite's own format: already UTC
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment.astimezone(UTC)


def ts_or_none(value: Any) -> datetime | None:
    return None if value is None else ts(value)


def profile(r: Row) -> Profile:
    return Profile(r["name"], r["display_name"], r["timezone"], ts(r["created_at"]))


def goal(r: Row) -> GoalModel:
    return GoalModel(
        profile=r["profile"],
        version=int(r["version"]),
        status=GoalStatus(r["status"]),
        title=r["title"],
        body=r["body"],
        data=_loads(r["data"]),
        created_at=ts(r["created_at"]),
        activated_at=ts_or_none(r["activated_at"]),
    )


def task(r: Row) -> Task:
    return Task(
        id=int(r["id"]),
        profile=r["profile"],
        title=r["title"],
        priority=int(r["priority"]),
        status=TaskStatus(r["status"]),
        notes=r["notes"],
        created_at=ts(r["created_at"]),
        updated_at=ts(r["updated_at"]),
    )


def step(r: Row) -> PlanStep:
    return PlanStep(
        id=int(r["id"]),
        profile=r["profile"],
        goal_version=int(r["goal_version"]),
        position=int(r["position"]),
        title=r["title"],
        task_id=None if r["task_id"] is None else int(r["task_id"]),
        status=StepStatus(r["status"]),
        updated_at=ts(r["updated_at"]),
    )


def intent(r: Row) -> Intent:
    return Intent(
        id=int(r["id"]),
        profile=r["profile"],
        action_type=r["action_type"],
        title=r["title"],
        recipient=r["recipient"],
        payload=_loads(r["payload"]),
        tier=Tier(r["tier"]),
        status=IntentStatus(r["status"]),
        verdict=None if r["verdict"] is None else Verdict(r["verdict"]),
        verdict_reasons=tuple(_loads(r["verdict_reasons"])),
        decision_id=None if r["decision_id"] is None else int(r["decision_id"]),
        claim_owner=r["claim_owner"],
        claimed_at=ts_or_none(r["claimed_at"]),
        claim_prior=None if r["claim_prior"] is None else IntentStatus(r["claim_prior"]),
        dry_run=bool(r["dry_run"]),
        result=None if r["result"] is None else _loads(r["result"]),
        handoff=bool(r["handoff"]),
        origin=IntentOrigin(r["origin_tick"], bool(r["origin_tainted"])),
        created_at=ts(r["created_at"]),
        updated_at=ts(r["updated_at"]),
    )


def decision(r: Row) -> Decision:
    return Decision(
        id=int(r["id"]),
        profile=r["profile"],
        intent_id=int(r["intent_id"]),
        kind=DecisionKind(r["kind"]),
        by=r["by_whom"],
        note=r["note"],
        decided_at=ts(r["decided_at"]),
    )


def progress(r: Row) -> ProgressRow:
    return ProgressRow(
        id=int(r["id"]),
        profile=r["profile"],
        tick_kind=r["tick_kind"],
        outcome=Outcome(r["outcome"]),
        state_hash=r["state_hash"],
        intent_id=None if r["intent_id"] is None else int(r["intent_id"]),
        error=r["error"],
        detail=r["detail"],
        started_at=ts(r["started_at"]),
        ended_at=ts(r["ended_at"]),
    )


def observation(r: Row) -> Observation:
    return Observation(
        id=int(r["id"]),
        profile=r["profile"],
        source=r["source"],
        content_hash=r["content_hash"],
        tainted=bool(r["tainted"]),
        payload=_loads(r["payload"]),
        observed_at=ts(r["observed_at"]),
    )


def note(r: Row) -> MemoryNote:
    return MemoryNote(
        int(r["id"]), r["profile"], r["text"], r["source"], bool(r["tainted"]), ts(r["created_at"])
    )


def critique(r: Row) -> Critique:
    return Critique(
        int(r["id"]),
        r["profile"],
        int(r["goal_version"]),
        r["text"],
        r["failure_type"],
        ts(r["created_at"]),
    )


def spend(r: Row) -> AttentionSpend:
    return AttentionSpend(int(r["id"]), r["profile"], r["budget"], r["reason"], ts(r["spent_at"]))


def notification(r: Row) -> Notification:
    return Notification(
        id=int(r["id"]),
        profile=r["profile"],
        channel=r["channel"],
        kind=r["kind"],
        subject=r["subject"],
        body=r["body"],
        intent_id=None if r["intent_id"] is None else int(r["intent_id"]),
        sent_at=ts(r["sent_at"]),
    )


def condition(r: Row) -> ConditionState:
    return ConditionState(
        profile=r["profile"],
        name=r["name"],
        active=bool(r["active"]),
        since=ts_or_none(r["since"]),
        last_notified_at=ts_or_none(r["last_notified_at"]),
        updated_at=ts(r["updated_at"]),
    )


def state_of_play(r: Row) -> StateOfPlay:
    return StateOfPlay(int(r["id"]), r["profile"], r["text"], ts(r["created_at"]))
