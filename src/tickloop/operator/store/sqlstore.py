"""The operations of the SQL backends, written once over the ``Tx`` connector.

Subclasses (``SQLiteStore``, ``PostgresStore``) supply transactions, migrations and tick locks.
Each write runs in one transaction; each state change is one conditional UPDATE whose WHERE names
the prior state, and an empty RETURNING means another process got there first.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from tickloop.errors import ConflictError, NotFoundError, ValidationError
from tickloop.operator import intents as machine
from tickloop.operator.domain import (
    AttentionSpend,
    ConditionState,
    Critique,
    Decision,
    DecisionKind,
    GoalModel,
    Intent,
    IntentStatus,
    MemoryNote,
    NewIntent,
    NewPlanStep,
    NewProgress,
    Notification,
    Observation,
    PlanStep,
    Profile,
    ProgressRow,
    StateOfPlay,
    StepStatus,
    Task,
    TaskStatus,
    Verdict,
)
from tickloop.operator.store import _rows as rows
from tickloop.operator.store._rows import Row, dumps
from tickloop.operator.store._sql import Tx
from tickloop.operator.store.base import EPOCH, PRUNABLE, Ending, Store, search_tokens

if TYPE_CHECKING:  # the monitor's types: only loop_stats builds them, and ticks never call it
    from tickloop.operator.conditions import Flagged, LoopStats

#: For each way a claim may end, the statuses it may end from (claimed and/or sending).
_FINISH_FROM = {
    end: sorted(machine.sources_of(end) & {IntentStatus.CLAIMED, IntentStatus.SENDING})
    for end in machine.ENDINGS
}


class SqlStore(Store):
    """Store operations over named SQL queries."""

    @abstractmethod
    def _write(self) -> AbstractContextManager[Tx]:
        """A write transaction, serialised against other writers where the backend needs it."""

    @abstractmethod
    def _read(self) -> AbstractContextManager[Tx]:
        """A read-only transaction."""

    def _write_one(self) -> AbstractContextManager[Tx]:
        """For a write that is ONE statement (plus reads that only explain a lost compare-and-set):
        a backend may run it as its own implicit transaction. The default is ``_write``."""
        return self._write()

    @abstractmethod
    def _fts_query(self, tokens: list[str]) -> str:
        """The backend's full-text query for these words (all must match)."""

    # -- profiles -----------------------------------------------------------------------------------

    def create_profile(
        self, name: str, *, now: datetime, display_name: str = "", timezone: str = "UTC"
    ) -> Profile:
        with self._write_one() as tx:
            row = tx.one("create_profile", name=name, display_name=display_name, timezone=timezone, now=now)
        if row is None:
            raise ConflictError(f"profile {name!r} already exists")
        return rows.profile(row)

    def get_profile(self, name: str) -> Profile:
        with self._read() as tx:
            row = tx.one("get_profile", name=name)
        if row is None:
            raise NotFoundError(
                f"no profile {name!r}; create it with `tickloop operator init --profile NAME`"
            )
        return rows.profile(row)

    def list_profiles(self) -> list[Profile]:
        with self._read() as tx:
            return [rows.profile(r) for r in tx.rows("list_profiles")]

    # -- goal models --------------------------------------------------------------------------------

    def add_goal_model(
        self, profile: str, *, title: str, now: datetime, body: str = "", data: dict[str, Any] | None = None
    ) -> GoalModel:
        with self._write_one() as tx:
            row = tx.one(
                "add_goal_model",
                profile=profile,
                title=title,
                body=body,
                data=dumps("data", data or {}),
                now=now,
            )
        assert row is not None  # an INSERT ... RETURNING returns its row
        return rows.goal(row)

    def activate_goal_model(self, profile: str, version: int, *, now: datetime) -> GoalModel:
        with self._write() as tx:
            current = tx.one("get_goal_model", profile=profile, version=version)
            if current is None:
                raise NotFoundError(f"no goal model version {version} in profile {profile!r}")
            if current["status"] == "active":
                return rows.goal(current)
            tx.run("retire_active_goal", profile=profile, version=version)
            row = tx.one("activate_goal", profile=profile, version=version, now=now)
        if row is None:
            raise ConflictError(f"goal model version {version} changed while being activated; retry")
        return rows.goal(row)

    def get_goal_model(self, profile: str, version: int) -> GoalModel:
        with self._read() as tx:
            row = tx.one("get_goal_model", profile=profile, version=version)
        if row is None:
            raise NotFoundError(f"no goal model version {version} in profile {profile!r}")
        return rows.goal(row)

    def active_goal_model(self, profile: str) -> GoalModel | None:
        with self._read() as tx:
            row = tx.one("active_goal_model", profile=profile)
        return None if row is None else rows.goal(row)

    def list_goal_models(self, profile: str) -> list[GoalModel]:
        with self._read() as tx:
            return [rows.goal(r) for r in tx.rows("list_goal_models", profile=profile)]

    # -- board --------------------------------------------------------------------------------------

    def add_task(
        self, profile: str, title: str, *, now: datetime, priority: int = 0, notes: str = ""
    ) -> Task:
        with self._write_one() as tx:
            row = tx.one("add_task", profile=profile, title=title, priority=priority, notes=notes, now=now)
        assert row is not None
        return rows.task(row)

    def get_task(self, profile: str, task_id: int) -> Task:
        with self._read() as tx:
            row = tx.one("get_task", profile=profile, id=task_id)
        if row is None:
            raise NotFoundError(f"no task {task_id} in profile {profile!r}")
        return rows.task(row)

    def list_tasks(self, profile: str) -> list[Task]:
        with self._read() as tx:
            return [rows.task(r) for r in tx.rows("list_tasks", profile=profile)]

    def set_task_priority(self, profile: str, task_id: int, priority: int, *, now: datetime) -> Task:
        with self._write_one() as tx:
            row = tx.one("set_task_priority", profile=profile, id=task_id, priority=priority, now=now)
        if row is None:
            raise NotFoundError(f"no task {task_id} in profile {profile!r}")
        return rows.task(row)

    def set_task_status(
        self,
        profile: str,
        task_id: int,
        status: TaskStatus,
        *,
        now: datetime,
        expected: TaskStatus | None = None,
    ) -> Task:
        with self._write() as tx:
            prior = expected or self._task_status(tx, profile, task_id)
            row = tx.one(
                "set_task_status", profile=profile, id=task_id, status=status, expected=prior, now=now
            )
            if row is None:
                found = tx.one("get_task", profile=profile, id=task_id)
                _lost("task", task_id, profile, prior, None if found is None else found["status"])
        assert row is not None
        return rows.task(row)

    def _task_status(self, tx: Tx, profile: str, task_id: int) -> TaskStatus:
        found = tx.one("get_task", profile=profile, id=task_id)
        if found is None:
            raise NotFoundError(f"no task {task_id} in profile {profile!r}")
        return TaskStatus(found["status"])

    # -- plan ---------------------------------------------------------------------------------------

    def replace_plan(
        self, profile: str, goal_version: int, steps: Sequence[NewPlanStep], *, now: datetime
    ) -> list[PlanStep]:
        with self._write() as tx:
            if tx.one("get_goal_model", profile=profile, version=goal_version) is None:
                raise NotFoundError(f"no goal model version {goal_version} in profile {profile!r}")
            tx.run("delete_pending_steps", profile=profile, goal_version=goal_version)
            top_row = tx.one("max_step_position", profile=profile, goal_version=goal_version)
            top = int(top_row["top"]) if top_row else -1
            written = []
            for offset, new in enumerate(steps, start=1):
                row = tx.one(
                    "add_step",
                    profile=profile,
                    goal_version=goal_version,
                    position=top + offset,
                    title=new.title,
                    task_id=new.task_id,
                    now=now,
                )
                assert row is not None
                written.append(rows.step(row))
        return written

    def list_plan(self, profile: str, goal_version: int) -> list[PlanStep]:
        with self._read() as tx:
            return [rows.step(r) for r in tx.rows("list_plan", profile=profile, goal_version=goal_version)]

    def current_plan_step(self, profile: str, goal_version: int) -> PlanStep | None:
        with self._read() as tx:
            row = tx.one("current_plan_step", profile=profile, goal_version=goal_version)
        return None if row is None else rows.step(row)

    def set_step_status(
        self,
        profile: str,
        step_id: int,
        status: StepStatus,
        *,
        now: datetime,
        expected: StepStatus = StepStatus.PENDING,
    ) -> PlanStep:
        with self._write_one() as tx:
            row = tx.one(
                "set_step_status", profile=profile, id=step_id, status=status, expected=expected, now=now
            )
            if row is None:
                found = tx.one("get_step", profile=profile, id=step_id)
                _lost("plan step", step_id, profile, expected, None if found is None else found["status"])
        assert row is not None
        return rows.step(row)

    # -- intents ------------------------------------------------------------------------------------

    def stage_intent(self, profile: str, intent: NewIntent, *, now: datetime) -> Intent:
        with self._write_one() as tx:
            row = tx.one(
                "stage_intent",
                profile=profile,
                action_type=intent.action_type,
                title=intent.title,
                recipient=intent.recipient,
                payload=dumps("payload", intent.payload),
                tier=intent.tier,
                dry_run=intent.dry_run,
                handoff=False,
                origin_tick=intent.origin.tick_kind,
                origin_tainted=intent.origin.tainted,
                now=now,
            )
        assert row is not None
        return rows.intent(row)

    def get_intent(self, profile: str, intent_id: int) -> Intent:
        with self._read() as tx:
            row = tx.one("get_intent", profile=profile, id=intent_id)
        if row is None:
            raise NotFoundError(f"no intent {intent_id} in profile {profile!r}")
        return rows.intent(row)

    def list_intents(
        self, profile: str, *, status: IntentStatus | None = None, limit: int = 100
    ) -> list[Intent]:
        with self._read() as tx:
            if status is None:
                found = tx.rows("list_intents", profile=profile, limit=limit)
            else:
                found = tx.rows("list_intents_by_status", profile=profile, status=status, limit=limit)
        return [rows.intent(r) for r in found]

    def record_verdict(
        self, profile: str, intent_id: int, verdict: Verdict, reasons: Sequence[str], *, now: datetime
    ) -> Intent:
        target = machine.VERDICT_STATUS[Verdict(verdict)]
        with self._write_one() as tx:
            row = tx.one(
                "record_verdict",
                profile=profile,
                id=intent_id,
                status=target,
                verdict=verdict,
                reasons=dumps("reasons", list(reasons)),
                now=now,
            )
            if row is None:
                self._intent_lost(tx, profile, intent_id, IntentStatus.PROPOSED, target)
        assert row is not None
        return rows.intent(row)

    def mark_ready(self, profile: str, intent_id: int, *, now: datetime) -> Intent:
        return self._move(profile, intent_id, IntentStatus.ALLOWED, IntentStatus.READY, now=now)

    def _move(
        self, profile: str, intent_id: int, expected: IntentStatus, target: IntentStatus, *, now: datetime
    ) -> Intent:
        machine.check_transition(expected, target)
        with self._write_one() as tx:
            row = tx.one(
                "move_intent", profile=profile, id=intent_id, status=target, expected=expected, now=now
            )
            if row is None:
                self._intent_lost(tx, profile, intent_id, expected, target)
        assert row is not None
        return rows.intent(row)

    def _intent_lost(
        self, tx: Tx, profile: str, intent_id: int, expected: IntentStatus, target: IntentStatus
    ) -> None:
        found = tx.one("get_intent", profile=profile, id=intent_id)
        if found is None:
            raise NotFoundError(f"no intent {intent_id} in profile {profile!r}")
        current = IntentStatus(found["status"])
        machine.check_transition(current, target)  # the clearer message when the move is illegal
        raise ConflictError(f"intent {intent_id} is {current}, not {expected}: another process changed it")

    def decide(
        self, profile: str, intent_id: int, kind: DecisionKind, *, by: str, now: datetime, note: str = ""
    ) -> Decision:
        kind = DecisionKind(kind)
        target = IntentStatus.APPROVED if kind is DecisionKind.APPROVE else IntentStatus.DENIED
        with self._write() as tx:
            current = tx.one("get_intent", profile=profile, id=intent_id)
            if current is None:
                raise NotFoundError(f"no intent {intent_id} in profile {profile!r}")
            check_decidable(intent_id, IntentStatus(current["status"]), target)
            made = tx.one(
                "add_decision",
                profile=profile,
                intent_id=intent_id,
                kind=kind,
                by_whom=by,
                note=note,
                now=now,
            )
            assert made is not None
            moved = tx.one(
                "decide_intent", profile=profile, id=intent_id, status=target, decision_id=made["id"], now=now
            )
            if moved is None:  # raising rolls the decision back with the transaction
                self._intent_lost(tx, profile, intent_id, IntentStatus.REQUIRES_APPROVAL, target)
        assert made is not None
        return rows.decision(made)

    def get_decision(self, profile: str, decision_id: int) -> Decision:
        with self._read() as tx:
            row = tx.one("get_decision", profile=profile, id=decision_id)
        if row is None:
            raise NotFoundError(f"no decision {decision_id} in profile {profile!r}")
        return rows.decision(row)

    def claim_intents(
        self, profile: str, *, owner: str, now: datetime, limit: int = 10, since: datetime = EPOCH
    ) -> list[Intent]:
        with self._write_one() as tx:
            found = tx.rows("claim_intents", profile=profile, owner=owner, now=now, limit=limit, since=since)
        return sorted((rows.intent(r) for r in found), key=lambda i: i.id)

    def release_claim(self, profile: str, intent_id: int, *, owner: str, now: datetime) -> Intent:
        with self._write_one() as tx:
            row = tx.one("release_claim", profile=profile, id=intent_id, owner=owner, now=now)
            if row is None:
                self._claim_lost(tx, profile, intent_id, owner, IntentStatus.CLAIMED)
        assert row is not None
        return rows.intent(row)

    def mark_sending(self, profile: str, intent_id: int, *, owner: str, now: datetime) -> Intent:
        with self._write_one() as tx:
            row = tx.one("mark_sending", profile=profile, id=intent_id, owner=owner, now=now)
            if row is None:
                self._claim_lost(tx, profile, intent_id, owner, IntentStatus.CLAIMED)
        assert row is not None
        return rows.intent(row)

    def _claim_lost(self, tx: Tx, profile: str, intent_id: int, owner: str, expected: IntentStatus) -> None:
        found = tx.one("get_intent", profile=profile, id=intent_id)
        if found is None:
            raise NotFoundError(f"no intent {intent_id} in profile {profile!r}")
        raise ConflictError(
            f"intent {intent_id} is {found['status']} (claimed by {found['claim_owner']!r}), "
            f"not {expected} by {owner!r}: the claim was lost"
        )

    def finish_intent(
        self,
        profile: str,
        intent_id: int,
        status: IntentStatus,
        *,
        owner: str,
        now: datetime,
        result: dict[str, Any] | None = None,
        handoff: bool = False,
    ) -> Intent:
        target = check_ending(status)
        froms = _FINISH_FROM[target]
        with self._write_one() as tx:
            row = tx.one(
                "finish_intent",
                profile=profile,
                id=intent_id,
                status=target,
                from_a=froms[0],
                from_b=froms[-1],
                owner=owner,
                result=None if result is None else dumps("result", result),
                handoff=handoff,
                now=now,
            )
            if row is None:  # say why: gone, not finishable, an illegal ending, or someone else's claim
                found = tx.one("get_intent", profile=profile, id=intent_id)
                if found is None:
                    raise NotFoundError(f"no intent {intent_id} in profile {profile!r}")
                prior = check_finishable(intent_id, IntentStatus(found["status"]), target)
                self._claim_lost(tx, profile, intent_id, owner, prior)
        assert row is not None
        return rows.intent(row)

    def finish_and_send(
        self, profile: str, *, ending: Ending | None, send: int | None, owner: str, now: datetime
    ) -> tuple[bool, bool]:
        params = handover_params(profile, ending, send, owner=owner, now=now)
        with self._write() as tx:  # two statements, one commit
            ended = ending is not None and tx.run("end_sending", **params) == 1
            sending = send is not None and tx.run("start_sending", **params) == 1
        return ended, sending

    def reap_stuck(self, *, cutoff: datetime, now: datetime, profile: str | None = None) -> list[int]:
        with self._write_one() as tx:
            if profile is None:
                found = tx.rows("reap_stuck", cutoff=cutoff, now=now)
            else:
                found = tx.rows("reap_stuck_profile", profile=profile, cutoff=cutoff, now=now)
        return sorted(int(r["id"]) for r in found)

    def release_stale_claims(self, profile: str, *, cutoff: datetime, now: datetime) -> list[int]:
        with self._write_one() as tx:
            found = tx.rows("release_stale_claims", profile=profile, cutoff=cutoff, now=now)
        return sorted(int(r["id"]) for r in found)

    def failed_actions(self, profile: str, *, since: datetime, limit: int = 50) -> list[Intent]:
        with self._read() as tx:
            return [
                rows.intent(r) for r in tx.rows("failed_actions", profile=profile, since=since, limit=limit)
            ]

    # -- progress -----------------------------------------------------------------------------------

    def record_progress(self, profile: str, row: NewProgress) -> ProgressRow:
        with self._write_one() as tx:
            made = tx.one(
                "record_progress",
                profile=profile,
                tick_kind=row.tick_kind,
                outcome=row.outcome,
                state_hash=row.state_hash,
                intent_id=row.intent_id,
                error=row.error,
                detail=row.detail,
                started_at=row.started_at,
                ended_at=row.ended_at,
            )
        assert made is not None
        return rows.progress(made)

    def recent_progress(
        self, profile: str, *, limit: int = 20, tick_kind: str | None = None
    ) -> list[ProgressRow]:
        with self._read() as tx:
            if tick_kind is None:
                found = tx.rows("recent_progress", profile=profile, limit=limit)
            else:
                found = tx.rows("recent_progress_kind", profile=profile, tick_kind=tick_kind, limit=limit)
        return [rows.progress(r) for r in found]

    # -- observations and memory --------------------------------------------------------------------

    def add_observation(
        self,
        profile: str,
        *,
        source: str,
        content_hash: str,
        payload: dict[str, Any],
        now: datetime,
        tainted: bool = True,
    ) -> Observation | None:
        with self._write_one() as tx:
            row = tx.one(
                "add_observation",
                profile=profile,
                source=source,
                content_hash=content_hash,
                tainted=tainted,
                payload=dumps("payload", payload),
                now=now,
            )
        return None if row is None else rows.observation(row)

    def list_observations(
        self, profile: str, *, since: datetime = EPOCH, limit: int = 100
    ) -> list[Observation]:
        with self._read() as tx:
            found = tx.rows("list_observations", profile=profile, since=since, limit=limit)
        return [rows.observation(r) for r in found]

    def add_note(
        self, profile: str, text: str, *, now: datetime, source: str = "", tainted: bool = False
    ) -> MemoryNote:
        with self._write_one() as tx:
            row = tx.one("add_note", profile=profile, text=text, source=source, tainted=tainted, now=now)
        assert row is not None
        return rows.note(row)

    def search_notes(self, profile: str, query: str, *, limit: int = 20) -> list[MemoryNote]:
        tokens = search_tokens(query)
        if not tokens:
            return []
        with self._read() as tx:
            found = tx.rows("search_notes", profile=profile, query=self._fts_query(tokens), limit=limit)
        return [rows.note(r) for r in found]

    # -- critiques, attention, notifications, monitor, state of play --------------------------------

    def add_critique(
        self, profile: str, goal_version: int, text: str, *, failure_type: str, now: datetime, keep: int = 3
    ) -> Critique:
        with self._write() as tx:
            row = tx.one(
                "add_critique",
                profile=profile,
                goal_version=goal_version,
                text=text,
                failure_type=failure_type,
                now=now,
            )
            tx.run("prune_critiques", profile=profile, goal_version=goal_version, keep=keep)
        assert row is not None
        return rows.critique(row)

    def recent_critiques(self, profile: str, goal_version: int, *, limit: int = 3) -> list[Critique]:
        with self._read() as tx:
            found = tx.rows("recent_critiques", profile=profile, goal_version=goal_version, limit=limit)
        return [rows.critique(r) for r in found]

    def spend_attention(
        self,
        profile: str,
        *,
        now: datetime,
        day: str,
        cap: int,
        min_gap: timedelta,
        budget: str = "unsolicited",
        reason: str = "",
    ) -> bool:
        with self._write() as tx:
            tx.run("ensure_budget", profile=profile, budget=budget)
            spent = tx.run(
                "spend_attention",
                profile=profile,
                budget=budget,
                day=day,
                cap=cap,
                now=now,
                gap_cutoff=now - min_gap,
            )
            if spent == 1:
                tx.rows("log_spend", profile=profile, budget=budget, reason=reason, now=now)
        return spent == 1

    def attention_spends(self, profile: str, *, since: datetime = EPOCH) -> list[AttentionSpend]:
        with self._read() as tx:
            return [rows.spend(r) for r in tx.rows("attention_spends", profile=profile, since=since)]

    def log_notification(
        self,
        profile: str,
        *,
        channel: str,
        kind: str,
        subject: str,
        now: datetime,
        body: str = "",
        intent_id: int | None = None,
    ) -> Notification:
        with self._write_one() as tx:
            row = tx.one(
                "log_notification",
                profile=profile,
                channel=channel,
                kind=kind,
                subject=subject,
                body=body,
                intent_id=intent_id,
                now=now,
            )
        assert row is not None
        return rows.notification(row)

    def list_notifications(
        self, profile: str, *, since: datetime = EPOCH, limit: int = 100
    ) -> list[Notification]:
        with self._read() as tx:
            found = tx.rows("list_notifications", profile=profile, since=since, limit=limit)
        return [rows.notification(r) for r in found]

    def get_condition(self, profile: str, name: str) -> ConditionState | None:
        with self._read() as tx:
            row = tx.one("get_condition", profile=profile, name=name)
        return None if row is None else rows.condition(row)

    def put_condition(
        self,
        profile: str,
        name: str,
        *,
        active: bool,
        now: datetime,
        since: datetime | None = None,
        last_notified_at: datetime | None = None,
    ) -> ConditionState:
        with self._write_one() as tx:
            row = tx.one(
                "put_condition",
                profile=profile,
                name=name,
                active=active,
                since=since,
                last_notified_at=last_notified_at,
                now=now,
            )
        assert row is not None
        return rows.condition(row)

    def list_conditions(self, profiles: Sequence[str] | None = None) -> list[ConditionState]:
        with self._read() as tx:
            found = tx.rows("list_conditions", profiles=_names(profiles))
        return [rows.condition(r) for r in found]

    def loop_stats(
        self, profiles: Sequence[str] | None = None, *, window: int, flagged: Flagged | None = None
    ) -> dict[str, LoopStats]:
        limits: dict[str, Any] = {"min_streak": 0, "min_board": 0, "silent_before": None}
        if flagged is not None:
            limits = {
                "min_streak": flagged.min_streak,
                "min_board": flagged.min_board,
                "silent_before": flagged.silent_before,
            }
        from tickloop.operator.conditions import LoopStats  # noqa: PLC0415

        with self._read() as tx:
            if profiles is None:
                found = tx.rows("loop_stats_all", window=window, **limits)
            else:
                found = tx.rows("loop_stats", profiles=_names(profiles), window=window, **limits)
        return {
            r["profile"]: LoopStats(
                no_progress_streak=int(r["no_progress_streak"]),
                newest_progress_at=_moment(r["newest_at"]),
                has_active_goal=bool(r["has_active_goal"]),
                board_unchanged_ticks=int(r["board_unchanged_ticks"]),
                waiting_approvals=int(r["waiting_approvals"]),
            )
            for r in found
        }

    def add_state_of_play(self, profile: str, text: str, *, now: datetime) -> StateOfPlay:
        with self._write_one() as tx:
            row = tx.one("add_state_of_play", profile=profile, text=text, now=now)
        assert row is not None
        return rows.state_of_play(row)

    def latest_state_of_play(self, profile: str) -> StateOfPlay | None:
        with self._read() as tx:
            row = tx.one("latest_state_of_play", profile=profile)
        return None if row is None else rows.state_of_play(row)

    # -- retention ----------------------------------------------------------------------------------

    def prune(self, profile: str, *, before: datetime, keep_recent: int) -> dict[str, int]:
        keep = max(0, keep_recent)
        with self._write() as tx:
            return {
                kind: tx.run(f"prune_{kind}", profile=profile, before=before, keep=keep) for kind in PRUNABLE
            }


def _moment(value: object) -> datetime | None:
    """A time from an aggregate: SQLite's stored text, or PostgreSQL's epoch seconds (converting
    10,000 server-zone datetimes costs more than the query)."""
    if value is None:
        return None
    if isinstance(value, str):
        return rows.ts(value)
    return datetime.fromtimestamp(float(value), UTC)  # type: ignore[arg-type]


def _names(profiles: Sequence[str] | None) -> str | None:
    """A set of profile names as one JSON-array parameter (None: every profile)."""
    return None if profiles is None else dumps("profiles", sorted(set(profiles)))


def _lost(kind: str, row_id: int, profile: str, expected: object, found: object) -> None:
    if found is None:
        raise NotFoundError(f"no {kind} {row_id} in profile {profile!r}")
    raise ConflictError(f"{kind} {row_id} is {found}, not {expected}: another process changed it")


def check_decidable(intent_id: int, current: IntentStatus, target: IntentStatus) -> None:
    """A blocked intent can never be approved; anything else not awaiting a decision is illegal."""
    if current is IntentStatus.BLOCKED:
        raise ConflictError(f"intent {intent_id} is blocked by the gate: it can never be approved or denied")
    if current is not IntentStatus.REQUIRES_APPROVAL:
        raise ConflictError(
            f"intent {intent_id} is {current}: only an intent at requires_approval can be approved or denied"
        )
    machine.check_transition(current, target)


def check_finishable(intent_id: int, current: IntentStatus, target: IntentStatus) -> IntentStatus:
    """``current`` if a claim at ``current`` may end as ``target``: losing the claim is a conflict
    (the reaper or a release got there first), an illegal ending is a transition error."""
    if current not in (IntentStatus.CLAIMED, IntentStatus.SENDING):
        raise ConflictError(
            f"intent {intent_id} is {current}: only a claimed or sending intent can be finished "
            "(the claim was lost, or never taken)"
        )
    machine.check_transition(current, target)
    return current


def handover_params(
    profile: str, ending: Ending | None, send: int | None, *, owner: str, now: datetime
) -> dict[str, Any]:
    """The checked parameters of ``finish_and_send``'s statements (an absent half matches no row)."""
    if ending is not None and ending.intent_id == send:
        raise ValidationError(f"intent {send} cannot end and enter `sending` in the same hand-over")
    return {
        "profile": profile,
        "owner": owner,
        "now": now,
        "end_id": None if ending is None else ending.intent_id,
        "status": None if ending is None else check_ending(ending.status),
        "result": None if ending is None or ending.result is None else dumps("result", ending.result),
        "handoff": ending is not None and ending.handoff,
        "send_id": send,
    }


def handed_over(found: Sequence[Row], ending: Ending | None, send: int | None) -> tuple[bool, bool]:
    """``(ended, sending)`` from the ids of the rows a hand-over changed."""
    changed = {int(row["id"]) for row in found}
    return ending is not None and ending.intent_id in changed, send is not None and send in changed


def check_ending(status: IntentStatus) -> IntentStatus:
    """``status`` if it is one of the ways a claim may end."""
    target = IntentStatus(status)
    if target not in machine.ENDINGS:
        allowed = ", ".join(sorted(machine.ENDINGS))
        raise ConflictError(f"an intent cannot be finished as {target}; use one of: {allowed}")
    return target
