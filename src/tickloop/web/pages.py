"""One read function per dashboard page: store (or files) in, a frozen record out, no HTTP.

Routes call these and hand the record to one template each, so every page is testable by calling
its function on a real store. Everything here reads; the one write the dashboard makes is
``decide`` (the person's approve or deny), through the same ``Store.decide`` the CLI uses.
"""

from __future__ import annotations

import getpass
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tickloop.config import Settings
from tickloop.operator.domain import (
    Decision,
    DecisionKind,
    Intent,
    IntentStatus,
    Notification,
    Observation,
    Outcome,
    PlanStep,
    ProgressRow,
    Task,
    TaskStatus,
    TickKind,
)
from tickloop.operator.status import Overview, overview
from tickloop.operator.store.base import Store
from tickloop.web.timeline import Chart, chart

#: how many waiting intents the approvals page shows, oldest first (the count says how many more wait;
#: the person decides them in order, and twenty full cards are already a long page on a phone)
APPROVALS_SHOWN = 20
#: how far back the approvals page looks for the observations that fed an intent
FED_WINDOW = timedelta(days=1)
#: rows the timeline and the intents page read at most
TIMELINE_ROWS = 2000
TABLE_ROWS = 200
#: the prefix a dashboard decision's ``by`` carries: ``web:<login>``
VIA_WEB = "web:"


# -- overview ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OverviewPage:
    """The one-screen status of a profile."""

    status: Overview
    attention_budget: int
    waiting: int


def overview_page(store: Store, profile: str, settings: Settings, *, now: datetime) -> OverviewPage:
    """Goal and step, last tick of each kind, monitor conditions, attention against the budget."""
    from tickloop.operator.notices import attention_settings  # noqa: PLC0415

    status = overview(store, profile, now=now)
    budget = attention_settings(settings, store, profile).budget_per_day
    return OverviewPage(status, budget, len(status.waiting_approval))


# -- approvals ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Waiting:
    """One intent that waits for the person, with what it came from."""

    intent: Intent
    step: PlanStep | None
    fed_by: list[Observation]


@dataclass(frozen=True, slots=True)
class ApprovalsPage:
    """The oldest waiting intents (the order to decide them in), and how many wait in all."""

    items: list[Waiting]
    total: int


def approvals_page(store: Store, profile: str) -> ApprovalsPage:
    """The waiting intents with their plan step and, for a tainted one, the observations before it."""
    waiting = store.list_intents(profile, status=IntentStatus.REQUIRES_APPROVAL, limit=500)
    total = len(waiting)
    waiting = waiting[-APPROVALS_SHOWN:]
    steps = _steps(store, profile) if any("step_id" in i.payload for i in waiting) else {}
    items = []
    for intent in reversed(waiting):
        fed: list[Observation] = []
        if intent.origin.tainted:
            recent = store.list_observations(profile, since=intent.created_at - FED_WINDOW, limit=20)
            fed = [o for o in recent if o.observed_at <= intent.created_at and o.tainted][:5]
        items.append(Waiting(intent, steps.get(_int(intent.payload.get("step_id"))), fed))
    return ApprovalsPage(items, total)


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
    """The person's decision, through the same store call as ``tickloop operator approve|deny``."""
    kind = DecisionKind.APPROVE if approve else DecisionKind.DENY
    return store.decide(profile, intent_id, kind, by=decider(), note=note.strip()[:2000], now=now)


# -- board and plan ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BoardPage:
    """Tasks by priority and the active goal's plan."""

    goal: str | None
    tasks: list[Task]
    plan: list[PlanStep]
    current: int | None
    blocked: int


def board_page(store: Store, profile: str) -> BoardPage:
    goal = store.active_goal_model(profile)
    tasks = store.list_tasks(profile)
    plan = store.list_plan(profile, goal.version) if goal else []
    current = next((s.id for s in plan if s.status.value == "pending"), None)
    return BoardPage(
        goal=f"v{goal.version}: {goal.title}" if goal else None,
        tasks=tasks,
        plan=plan,
        current=current,
        blocked=sum(1 for t in tasks if t.status is TaskStatus.BLOCKED),
    )


# -- timeline ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TimelinePage:
    """The chart of the newest rows and the (filtered) rows below it."""

    chart: Chart
    rows: list[ProgressRow]
    kind: str
    outcome: str
    kinds: list[str]
    outcomes: list[str]


def timeline_page(
    store: Store, profile: str, *, now: datetime, kind: str = "", outcome: str = ""
) -> TimelinePage:
    """Ticks per kind over time (outcome by colour, gaps visible), then the rows filtered."""
    kinds = [k.value for k in TickKind]
    outcomes = [o.value for o in Outcome]
    kind = kind if kind in kinds else ""
    outcome = outcome if outcome in outcomes else ""
    newest = store.recent_progress(profile, limit=TIMELINE_ROWS)
    source = newest if not kind else store.recent_progress(profile, limit=TIMELINE_ROWS, tick_kind=kind)
    rows = [r for r in source if not outcome or r.outcome.value == outcome][:TABLE_ROWS]
    return TimelinePage(chart(newest, now=now), rows, kind, outcome, kinds, outcomes)


# -- intents -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IntentsPage:
    """The intents' history, newest first, filtered by status, type and words in the title."""

    intents: list[Intent]
    status: str
    action_type: str
    query: str
    statuses: list[str]


def intents_page(
    store: Store, profile: str, *, status: str = "", action_type: str = "", query: str = ""
) -> IntentsPage:
    statuses = [s.value for s in IntentStatus]
    status = status if status in statuses else ""
    found = store.list_intents(profile, status=IntentStatus(status) if status else None, limit=TABLE_ROWS * 5)
    words = query.lower().split()
    chosen = [
        i
        for i in found
        if (not action_type or i.action_type == action_type) and all(w in i.title.lower() for w in words)
    ][:TABLE_ROWS]
    return IntentsPage(chosen, status, action_type, query, statuses)


@dataclass(frozen=True, slots=True)
class LifeEvent:
    """One moment in an intent's life."""

    at: datetime | None
    state: str
    text: str


@dataclass(frozen=True, slots=True)
class IntentPage:
    """One intent: its life, its decision, and every log line and progress row that names it."""

    intent: Intent
    life: list[LifeEvent]
    decision: Decision | None
    log: list[Notification]
    rows: list[ProgressRow]
    waiting: bool


def intent_page(store: Store, profile: str, intent_id: int) -> IntentPage:
    intent = store.get_intent(profile, intent_id)
    decision = store.get_decision(profile, intent.decision_id) if intent.decision_id else None
    log = [n for n in store.list_notifications(profile, limit=TIMELINE_ROWS) if n.intent_id == intent.id]
    rows = [r for r in store.recent_progress(profile, limit=TIMELINE_ROWS) if r.intent_id == intent.id]
    return IntentPage(
        intent, life(intent, decision), decision, log, rows, intent.status is IntentStatus.REQUIRES_APPROVAL
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


# -- attention ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AttentionPage:
    """Every decision of the attention gate, newest first, with the check that made it."""

    records: list[Any]
    spent_today: int
    budget: int


def attention_page(store: Store, profile: str, settings: Settings, *, now: datetime) -> AttentionPage:
    from tickloop.operator.notices import (  # noqa: PLC0415
        attention_records,
        attention_settings,
        local_day_start,
    )

    chosen = attention_settings(settings, store, profile)
    spent = store.attention_spends(profile, since=local_day_start(now, chosen.timezone))
    records = attention_records(store, profile)[: TABLE_ROWS * 5]
    return AttentionPage(records, sum(1 for s in spent if s.budget == "unsolicited"), chosen.budget_per_day)


# -- tick sessions -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One session and its ledger, with ``audit verify``'s verdict."""

    session_id: str
    turns: int
    last_status: str
    created_at: str
    ledger: str | None  #: the ledger's file name, or None without one
    verified: bool | None  #: None: no ledger
    summary: str
    violations: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SessionsPage:
    rows: list[SessionRow]
    sessions_dir: str
    audit_dir: str


def sessions_page(sessions_dir: Path, audit_dir: Path) -> SessionsPage:
    """Every session in ``sessions_dir`` with its ledger from ``audit_dir`` verified."""
    from tickloop.harness.catalog import list_sessions  # noqa: PLC0415

    rows = [
        _session_row(
            s.session_id,
            s.path.name,
            turns=s.turns,
            last=s.last_status,
            created=s.created_at,
            audit_dir=audit_dir,
        )
        for s in list_sessions(sessions_dir)
    ]
    return SessionsPage(list(reversed(rows)), str(sessions_dir), str(audit_dir))


def _session_row(sid: str, name: str, *, turns: int, last: str, created: str, audit_dir: Path) -> SessionRow:
    from tickloop.audit import verify_file  # noqa: PLC0415

    ledger = audit_dir / name
    if not ledger.is_file():
        return SessionRow(sid, turns, last, created, None, None, "no ledger")
    report, read = verify_file(ledger)
    torn = f" (torn final line of {len(read.torn_tail)} bytes ignored)" if read.torn_tail else ""
    problems = [f"line {v.line}: {v.rule}: {v.message}" for v in report.violations]
    return SessionRow(sid, turns, last, created, name, report.ok, report.summary() + torn, problems)


@dataclass(frozen=True, slots=True)
class Step:
    """One turn of a transcript as the session page shows it."""

    number: int
    who: str
    text: str
    time_step: str | None  #: "time step 2/5" for a plugin time step
    reply: str | None
    terminal: str


@dataclass(frozen=True, slots=True)
class SessionPage:
    """A session's transcript and its ledger's records."""

    row: SessionRow
    steps: list[Step]
    records: list[dict[str, Any]]


def session_page(sessions_dir: Path, audit_dir: Path, session_id: str) -> SessionPage:
    """The transcript (time steps marked) and the ledger, for one session id."""
    from tickloop.audit import read_ledger  # noqa: PLC0415
    from tickloop.filenames import session_file_name  # noqa: PLC0415
    from tickloop.harness.catalog import load_session  # noqa: PLC0415
    from tickloop.protocol.envelope import is_time_step  # noqa: PLC0415

    session = load_session(sessions_dir, session_id)  # names its file safely; raises if unknown
    name = session_file_name(session_id)
    steps = []
    for turn in session.turns:
        message = turn.input
        step = None
        if is_time_step(message):
            step = f"time step {message.meta.get('step', '?')}/{message.meta.get('of', '?')}"
        who = "you" if message.source.kind == "user" else str(message.source)
        terminal = "open" if turn.terminal is None else str(turn.terminal.status)
        reply = None if turn.reply is None else turn.reply.text
        steps.append(Step(turn.number, who, message.text, step, reply, terminal))
    last = steps[-1].terminal if steps else "empty"
    row = _session_row(session_id, name, turns=len(steps), last=last, created="", audit_dir=audit_dir)
    records: list[dict[str, Any]] = []
    if row.ledger is not None:
        from tickloop.protocol.ledger import Oversized, decode  # noqa: PLC0415

        for _, raw in read_ledger(audit_dir / name).lines:
            if isinstance(raw, Oversized):
                continue  # shown by the verify summary as record_too_large
            try:
                records.append(decode(raw))
            except Exception:  # noqa: BLE001, S112  (a bad line is shown by the verify summary, not here)
                continue
    return SessionPage(row, steps, records)


# -- the live-refresh fingerprint ----------------------------------------------------------------------


def fingerprint(store: Store, profiles: list[str]) -> tuple[str, dict[str, int]]:
    """A short string that changes whenever the overview or an intent's state could have: the newest
    progress row (every tick, the executor's included, writes one), the newest log line, the waiting
    intents and the monitor's conditions. Also the waiting count per profile."""
    parts: list[str] = []
    waiting: dict[str, int] = {}
    conditions = {(c.profile, c.name): c.active for c in store.list_conditions(profiles)}
    for profile in profiles:
        newest = store.recent_progress(profile, limit=1)
        note = store.list_notifications(profile, limit=1)
        ids = [i.id for i in store.list_intents(profile, status=IntentStatus.REQUIRES_APPROVAL, limit=500)]
        waiting[profile] = len(ids)
        parts.append(f"{profile}:{newest[0].id if newest else 0}:{note[0].id if note else 0}:{ids}")
    parts.append(repr(sorted(conditions.items())))
    return "|".join(parts), waiting
