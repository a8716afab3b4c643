"""One read function per dashboard page: store (or files) in, a frozen record out, no HTTP.

Routes call these and hand the record to one template each, so every page is testable by calling
its function on a real store. Everything here reads; the pages where the person decides
are in ``proposals``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from tickloop.config import Settings
from tickloop.operator.conditions import Condition
from tickloop.operator.domain import (
    Intent,
    IntentStatus,
    Outcome,
    PlanStep,
    ProgressRow,
    Task,
    TaskStatus,
    TickKind,
)
from tickloop.operator.status import Overview
from tickloop.operator.store.base import Store
from tickloop.web.timeline import Chart, chart

#: rows the timeline and the intents page read at most
TIMELINE_ROWS = 2000
#: how many of the newest waiting intents the overview lists (the count is a COUNT; the full queue
#: is one tap away on Approvals)
WAITING_LISTED = 5
TABLE_ROWS = 200
#: the attention page's records at most, the newest
ATTENTION_ROWS = 1000
# -- overview ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OverviewPage:
    """The one-screen status of a profile."""

    status: Overview
    attention_budget: int
    waiting: int
    monitor_ran: bool  #: False until the stall monitor finished a pass over this profile: not "all clear"
    monitor_pass: datetime | None  #: when its last pass over this profile finished (None: never)


def overview_page(store: Store, profile: str, settings: Settings, *, now: datetime) -> OverviewPage:
    """Goal and step, last tick of each kind, monitor conditions, attention against the budget; read
    in one snapshot (one statement on PostgreSQL)."""
    from tickloop.operator.attention import AttentionSettings  # noqa: PLC0415
    from tickloop.operator.notices import profile_section  # noqa: PLC0415

    kinds = [k.value for k in TickKind if k is not TickKind.MONITOR]
    snap = store.overview_snapshot(
        profile, kinds=kinds, waiting=WAITING_LISTED, since=now - timedelta(days=2)
    )
    zone = ZoneInfo(snap.profile.timezone)
    midnight = datetime.combine(now.astimezone(zone).date(), time(), zone)
    active = {c.name: c.active for c in snap.conditions}
    status = Overview(
        profile=profile,
        goal=f"v{snap.goal.version}: {snap.goal.title}" if snap.goal else None,
        current_step=snap.step.title if snap.step else None,
        last_ticks=snap.last,
        waiting_approval=[(i.id, i.action_type, i.title) for i in snap.waiting],
        conditions={c.value: active.get(c.value, False) for c in Condition},
        attention_today=sum(1 for s in snap.spends if s.spent_at >= midnight),
    )
    budget = profile_section(settings, profile, "attention", AttentionSettings).budget_per_day
    ran = snap.monitor_ran_at is not None or bool(snap.conditions)
    return OverviewPage(status, budget, snap.waiting_count, ran, snap.monitor_ran_at)


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
    if kind or outcome:
        rows = store.progress_filtered(profile, tick_kind=kind, outcome=outcome, limit=TABLE_ROWS)
    else:
        rows = newest[:TABLE_ROWS]
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
    older: int | None = None  #: the next page starts below this id; None on the last page


def intents_page(
    store: Store,
    profile: str,
    *,
    status: str = "",
    action_type: str = "",
    query: str = "",
    before: int | None = None,
) -> IntentsPage:
    """Every intent, newest first, a page of ``TABLE_ROWS`` below ``before``; the filters in SQL."""
    statuses = [s.value for s in IntentStatus]
    status = status if status in statuses else ""
    found = store.search_intents(
        profile,
        status=IntentStatus(status) if status else None,
        action_type=action_type.strip(),
        words=query.split()[:3],
        before=before,
        limit=TABLE_ROWS + 1,
    )
    older = found[TABLE_ROWS - 1].id if len(found) > TABLE_ROWS else None
    return IntentsPage(found[:TABLE_ROWS], status, action_type, query, statuses, older)


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
    records = attention_records(store, profile, limit=ATTENTION_ROWS)
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


def fingerprint(store: Store, profiles: Sequence[str]) -> tuple[str, dict[str, int]]:
    """A short string that changes whenever the overview or an intent's state could have: the newest
    progress row (every tick, the executor's included, writes one), the newest log line, the waiting
    intents and the monitor's conditions. Also the waiting count per profile."""
    parts: list[str] = []
    waiting: dict[str, int] = {}
    conditions = {(c.profile, c.name): c.active for c in store.list_conditions(profiles)}
    for profile in profiles:
        newest = store.recent_progress(profile, limit=1)
        note = store.list_notifications(profile, limit=1)
        count, last = store.intent_mark(profile, IntentStatus.REQUIRES_APPROVAL)
        waiting[profile] = count
        parts.append(f"{profile}:{newest[0].id if newest else 0}:{note[0].id if note else 0}:{count}:{last}")
    parts.append(repr(sorted(conditions.items())))
    return "|".join(parts), waiting
