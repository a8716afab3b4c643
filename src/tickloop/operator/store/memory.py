"""The in-memory backend: the default test fixture, and a store for demos (``memory://``).

It keeps the same rules as the SQL backends (the contract suite checks that): every write holds
one lock, checks the prior state, and checks every text the way the SQL backends bind it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from msgspec.structs import replace

from tickloop.errors import ConflictError, NotFoundError
from tickloop.operator import intents as machine
from tickloop.operator.conditions import Flagged, LoopStats
from tickloop.operator.domain import (
    PROGRESS_OUTCOMES,
    AttentionSpend,
    ConditionState,
    Critique,
    Decision,
    DecisionKind,
    GoalModel,
    GoalStatus,
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
    TickKind,
    Verdict,
    check_text,
)
from tickloop.operator.store._rows import dumps
from tickloop.operator.store.base import EPOCH, OPEN_INTENT_STATUSES, Ending, Store, search_tokens
from tickloop.operator.store.sqlops.intents import (
    check_decidable,
    check_ending,
    check_finishable,
    handover_params,
)


def _checked(**fields: Any) -> None:
    for name, value in fields.items():
        if isinstance(value, str):
            check_text(name, value)


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)


class MemoryStore(Store):
    """All state in Python objects, guarded by one lock. Lost when the process ends."""

    def __init__(self, url: str = "memory://") -> None:
        self.url = url
        self._lock = threading.RLock()
        self._ids = 0
        self.profiles: dict[str, Profile] = {}
        self.goals: dict[tuple[str, int], GoalModel] = {}
        self.tasks: dict[int, Task] = {}
        self.steps: dict[int, PlanStep] = {}
        self.intents: dict[int, Intent] = {}
        self.decisions: dict[int, Decision] = {}
        self.progress: dict[str, list[ProgressRow]] = {}
        self.observations: dict[int, Observation] = {}
        self.notes: dict[int, MemoryNote] = {}
        self.critiques: dict[int, Critique] = {}
        self.budgets: dict[tuple[str, str], tuple[str, int, datetime | None]] = {}
        self.spends: list[AttentionSpend] = []
        self.notifications: list[Notification] = []
        self.conditions: dict[tuple[str, str], ConditionState] = {}
        self.states: list[StateOfPlay] = []
        self.locks: dict[tuple[str, str], tuple[str, datetime]] = {}

    def close(self) -> None:
        """Nothing to release."""

    def migrate(self, *, target: int | None = None) -> list[int]:  # noqa: ARG002  (no schema to migrate)
        return []

    def schema_version(self) -> int:
        return 0

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    def _profile(self, name: str) -> None:
        if name not in self.profiles:
            raise NotFoundError(
                f"profile {name!r} (or a row this refers to) does not exist; "
                "create the profile with `tickloop operator init`"
            )

    # -- profiles -----------------------------------------------------------------------------------

    def create_profile(
        self, name: str, *, now: datetime, display_name: str = "", timezone: str = "UTC"
    ) -> Profile:
        _checked(name=name, display_name=display_name, timezone=timezone)
        with self._lock:
            if name in self.profiles:
                raise ConflictError(f"profile {name!r} already exists")
            self.profiles[name] = Profile(name, display_name, timezone, _utc(now))
            return self.profiles[name]

    def get_profile(self, name: str) -> Profile:
        _checked(name=name)
        if name not in self.profiles:
            raise NotFoundError(
                f"no profile {name!r}; create it with `tickloop operator init --profile NAME`"
            )
        return self.profiles[name]

    def list_profiles(self) -> list[Profile]:
        return sorted(self.profiles.values(), key=lambda p: p.name)

    # -- goal models --------------------------------------------------------------------------------

    def add_goal_model(
        self, profile: str, *, title: str, now: datetime, body: str = "", data: dict[str, Any] | None = None
    ) -> GoalModel:
        _checked(profile=profile, title=title, body=body, data=dumps("data", data or {}))
        with self._lock:
            self._profile(profile)
            version = 1 + max((v for p, v in self.goals if p == profile), default=0)
            made = GoalModel(
                profile, version, GoalStatus.DRAFT, title, body, dict(data or {}), _utc(now), None
            )
            self.goals[(profile, version)] = made
            return made

    def activate_goal_model(self, profile: str, version: int, *, now: datetime) -> GoalModel:
        with self._lock:
            target = self.get_goal_model(profile, version)
            if target.status is GoalStatus.ACTIVE:
                return target
            for key, goal in self.goals.items():
                if key[0] == profile and goal.status is GoalStatus.ACTIVE:
                    self.goals[key] = replace(goal, status=GoalStatus.RETIRED)
            made = replace(target, status=GoalStatus.ACTIVE, activated_at=_utc(now))
            self.goals[(profile, version)] = made
            return made

    def get_goal_model(self, profile: str, version: int) -> GoalModel:
        _checked(profile=profile)
        if (profile, version) not in self.goals:
            raise NotFoundError(f"no goal model version {version} in profile {profile!r}")
        return self.goals[(profile, version)]

    def active_goal_model(self, profile: str) -> GoalModel | None:
        with self._lock:
            found = [g for g in self.goals.values() if g.profile == profile and g.status is GoalStatus.ACTIVE]
        return found[0] if found else None

    def list_goal_models(self, profile: str) -> list[GoalModel]:
        with self._lock:
            return sorted((g for g in self.goals.values() if g.profile == profile), key=lambda g: g.version)

    # -- board --------------------------------------------------------------------------------------

    def add_task(
        self, profile: str, title: str, *, now: datetime, priority: int = 0, notes: str = ""
    ) -> Task:
        _checked(profile=profile, title=title, notes=notes)
        with self._lock:
            self._profile(profile)
            made = Task(
                self._next_id(), profile, title, priority, TaskStatus.TODO, notes, _utc(now), _utc(now)
            )
            self.tasks[made.id] = made
            return made

    def get_task(self, profile: str, task_id: int) -> Task:
        found = self.tasks.get(task_id)
        if found is None or found.profile != profile:
            raise NotFoundError(f"no task {task_id} in profile {profile!r}")
        return found

    def list_tasks(self, profile: str) -> list[Task]:
        with self._lock:
            mine = [t for t in self.tasks.values() if t.profile == profile]
        return sorted(mine, key=lambda t: (-t.priority, t.id))

    def set_task_priority(self, profile: str, task_id: int, priority: int, *, now: datetime) -> Task:
        with self._lock:
            made = replace(self.get_task(profile, task_id), priority=priority, updated_at=_utc(now))
            self.tasks[task_id] = made
            return made

    def set_task_status(
        self,
        profile: str,
        task_id: int,
        status: TaskStatus,
        *,
        now: datetime,
        expected: TaskStatus | None = None,
    ) -> Task:
        with self._lock:
            current = self.get_task(profile, task_id)
            prior = expected or current.status
            if current.status != prior:
                raise ConflictError(
                    f"task {task_id} is {current.status}, not {prior}: another process changed it"
                )
            made = replace(current, status=TaskStatus(status), updated_at=_utc(now))
            self.tasks[task_id] = made
            return made

    # -- plan ---------------------------------------------------------------------------------------

    def replace_plan(
        self, profile: str, goal_version: int, steps: Sequence[NewPlanStep], *, now: datetime
    ) -> list[PlanStep]:
        _checked(**{f"steps[{i}].title": s.title for i, s in enumerate(steps)})
        with self._lock:
            self.get_goal_model(profile, goal_version)
            for task_id in (s.task_id for s in steps if s.task_id is not None):
                self.get_task(profile, task_id)
            kept = self.list_plan(profile, goal_version)
            for old in kept:
                if old.status is StepStatus.PENDING:
                    del self.steps[old.id]
            top = max((s.position for s in kept), default=-1)
            written = []
            for offset, new in enumerate(steps, start=1):
                made = PlanStep(
                    self._next_id(), profile, goal_version, top + offset, new.title, new.task_id,
                    StepStatus.PENDING, _utc(now),
                )  # fmt: skip
                self.steps[made.id] = made
                written.append(made)
            return written

    def list_plan(self, profile: str, goal_version: int) -> list[PlanStep]:
        with self._lock:
            mine = [s for s in self.steps.values() if s.profile == profile and s.goal_version == goal_version]
        return sorted(mine, key=lambda s: s.position)

    def current_plan_step(self, profile: str, goal_version: int) -> PlanStep | None:
        pending = [s for s in self.list_plan(profile, goal_version) if s.status is StepStatus.PENDING]
        return pending[0] if pending else None

    def set_step_status(
        self,
        profile: str,
        step_id: int,
        status: StepStatus,
        *,
        now: datetime,
        expected: StepStatus = StepStatus.PENDING,
    ) -> PlanStep:
        with self._lock:
            found = self.steps.get(step_id)
            if found is None or found.profile != profile:
                raise NotFoundError(f"no plan step {step_id} in profile {profile!r}")
            if found.status != expected:
                raise ConflictError(
                    f"plan step {step_id} is {found.status}, not {expected}: another process changed it"
                )
            made = replace(found, status=StepStatus(status), updated_at=_utc(now))
            self.steps[step_id] = made
            return made

    # -- intents ------------------------------------------------------------------------------------

    def stage_intent(self, profile: str, intent: NewIntent, *, now: datetime) -> Intent:
        payload = dumps("payload", intent.payload)
        _checked(
            profile=profile, action_type=intent.action_type, title=intent.title,
            recipient=intent.recipient, origin_tick=intent.origin.tick_kind,
        )  # fmt: skip
        with self._lock:
            self._profile(profile)
            made = Intent(
                id=self._next_id(), profile=profile, action_type=intent.action_type, title=intent.title,
                recipient=intent.recipient, payload=_round_trip(payload), tier=intent.tier,
                status=IntentStatus.PROPOSED, verdict=None, verdict_reasons=(), decision_id=None,
                claim_owner=None, claimed_at=None, claim_prior=None, dry_run=intent.dry_run, result=None,
                handoff=False, origin=intent.origin, created_at=_utc(now), updated_at=_utc(now),
            )  # fmt: skip
            self.intents[made.id] = made
            return made

    def get_intent(self, profile: str, intent_id: int) -> Intent:
        found = self.intents.get(intent_id)
        if found is None or found.profile != profile:
            raise NotFoundError(f"no intent {intent_id} in profile {profile!r}")
        return found

    def list_intents(
        self, profile: str, *, status: IntentStatus | None = None, limit: int = 100
    ) -> list[Intent]:
        with self._lock:
            mine = [
                i
                for i in self.intents.values()
                if i.profile == profile and (status is None or i.status == status)
            ]
        return sorted(mine, key=lambda i: -i.id)[:limit]

    def _swap(self, current: Intent, expected: IntentStatus, **changes: Any) -> Intent:
        if current.status != expected:
            machine.check_transition(current.status, changes["status"])
            raise ConflictError(
                f"intent {current.id} is {current.status}, not {expected}: another process changed it"
            )
        made = replace(current, **changes)
        self.intents[current.id] = made
        return made

    def record_verdict(
        self, profile: str, intent_id: int, verdict: Verdict, reasons: Sequence[str], *, now: datetime
    ) -> Intent:
        target = machine.VERDICT_STATUS[Verdict(verdict)]
        _checked(**{f"reasons[{i}]": r for i, r in enumerate(reasons)})
        with self._lock:
            current = self.get_intent(profile, intent_id)
            return self._swap(
                current, IntentStatus.PROPOSED, status=target, verdict=Verdict(verdict),
                verdict_reasons=tuple(reasons), updated_at=_utc(now),
            )  # fmt: skip

    def mark_ready(self, profile: str, intent_id: int, *, now: datetime) -> Intent:
        with self._lock:
            current = self.get_intent(profile, intent_id)
            return self._swap(current, IntentStatus.ALLOWED, status=IntentStatus.READY, updated_at=_utc(now))

    def decide(
        self, profile: str, intent_id: int, kind: DecisionKind, *, by: str, now: datetime, note: str = ""
    ) -> Decision:
        kind = DecisionKind(kind)
        target = IntentStatus.APPROVED if kind is DecisionKind.APPROVE else IntentStatus.DENIED
        _checked(by=by, note=note)
        with self._lock:
            current = self.get_intent(profile, intent_id)
            check_decidable(intent_id, current.status, target)
            made = Decision(self._next_id(), profile, intent_id, kind, by, note, _utc(now))
            self._swap(
                current,
                IntentStatus.REQUIRES_APPROVAL,
                status=target,
                decision_id=made.id,
                updated_at=_utc(now),
            )
            self.decisions[made.id] = made
            return made

    def get_decision(self, profile: str, decision_id: int) -> Decision:
        found = self.decisions.get(decision_id)
        if found is None or found.profile != profile:
            raise NotFoundError(f"no decision {decision_id} in profile {profile!r}")
        return found

    def claim_intents(
        self, profile: str, *, owner: str, now: datetime, limit: int = 10, since: datetime = EPOCH
    ) -> list[Intent]:
        _checked(owner=owner)
        with self._lock:
            ready = sorted(
                (i for i in self.intents.values()
                 if i.profile == profile and i.status in machine.CLAIMABLE and i.created_at >= since),
                key=lambda i: i.id,
            )[:limit]  # fmt: skip
            return [
                self._swap(i, i.status, status=IntentStatus.CLAIMED, claim_prior=i.status, claim_owner=owner,
                           claimed_at=_utc(now), updated_at=_utc(now))
                for i in ready
            ]  # fmt: skip

    def _owned(self, profile: str, intent_id: int, owner: str, expected: IntentStatus) -> Intent:
        current = self.get_intent(profile, intent_id)
        if current.status != expected or current.claim_owner != owner:
            raise ConflictError(
                f"intent {intent_id} is {current.status} (claimed by {current.claim_owner!r}), "
                f"not {expected} by {owner!r}: the claim was lost"
            )
        return current

    def release_claim(self, profile: str, intent_id: int, *, owner: str, now: datetime) -> Intent:
        with self._lock:
            current = self._owned(profile, intent_id, owner, IntentStatus.CLAIMED)
            return self._swap(
                current, IntentStatus.CLAIMED, status=current.claim_prior, claim_prior=None, claim_owner=None,
                claimed_at=None, updated_at=_utc(now),
            )  # fmt: skip

    def mark_sending(self, profile: str, intent_id: int, *, owner: str, now: datetime) -> Intent:
        with self._lock:
            current = self._owned(profile, intent_id, owner, IntentStatus.CLAIMED)
            return self._swap(
                current, IntentStatus.CLAIMED, status=IntentStatus.SENDING, updated_at=_utc(now)
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
        stored = None if result is None else _round_trip(dumps("result", result))
        with self._lock:
            prior = check_finishable(intent_id, self.get_intent(profile, intent_id).status, target)
            current = self._owned(profile, intent_id, owner, prior)
            return self._swap(
                current, prior, status=target, result=stored, handoff=handoff, updated_at=_utc(now)
            )

    def finish_and_send(
        self, profile: str, *, ending: Ending | None, send: int | None, owner: str, now: datetime
    ) -> tuple[bool, bool]:
        params = handover_params(profile, ending, send, owner=owner, now=now)
        _checked(owner=owner)
        with self._lock:
            ended = self._take(profile, params["end_id"], owner, IntentStatus.SENDING)
            if ended is not None:
                stored = None if params["result"] is None else _round_trip(params["result"])
                self._swap(
                    ended, IntentStatus.SENDING, status=params["status"], result=stored,
                    handoff=params["handoff"], updated_at=_utc(now),
                )  # fmt: skip
            sending = self._take(profile, send, owner, IntentStatus.CLAIMED)
            if sending is not None:
                self._swap(sending, IntentStatus.CLAIMED, status=IntentStatus.SENDING, updated_at=_utc(now))
            return ended is not None, sending is not None

    def _take(self, profile: str, intent_id: int | None, owner: str, expected: IntentStatus) -> Intent | None:
        """The intent if ``owner`` holds it at ``expected`` in ``profile``; else None (not won)."""
        found = None if intent_id is None else self.intents.get(intent_id)
        if found is None or (found.profile, found.status, found.claim_owner) != (profile, expected, owner):
            return None
        return found

    def reap_stuck(self, *, cutoff: datetime, now: datetime, profile: str | None = None) -> list[int]:
        with self._lock:
            stuck = [
                i for i in self.intents.values()
                if i.status is IntentStatus.SENDING and i.claimed_at is not None and i.claimed_at < cutoff
                and (profile is None or i.profile == profile)
            ]  # fmt: skip
            for i in stuck:
                self._swap(i, IntentStatus.SENDING, status=IntentStatus.NEEDS_HUMAN, updated_at=_utc(now))
            return sorted(i.id for i in stuck)

    def release_stale_claims(self, profile: str, *, cutoff: datetime, now: datetime) -> list[int]:
        with self._lock:
            stale = [
                i for i in self.intents.values()
                if i.profile == profile and i.status is IntentStatus.CLAIMED
                and i.claimed_at is not None and i.claimed_at < cutoff
            ]  # fmt: skip
            for i in stale:
                self._swap(
                    i, IntentStatus.CLAIMED, status=i.claim_prior, claim_prior=None, claim_owner=None,
                    claimed_at=None, updated_at=_utc(now),
                )  # fmt: skip
            return sorted(i.id for i in stale)

    def failed_actions(self, profile: str, *, since: datetime, limit: int = 50) -> list[Intent]:
        failed = {IntentStatus.FAILED, IntentStatus.NEEDS_HUMAN, IntentStatus.DENIED, IntentStatus.BLOCKED}
        with self._lock:
            found = [
                i for i in self.intents.values()
                if i.profile == profile and i.status in failed and i.updated_at >= since
            ]  # fmt: skip
        return sorted(found, key=lambda i: -i.id)[:limit]

    # -- progress -----------------------------------------------------------------------------------

    def record_progress(self, profile: str, row: NewProgress) -> ProgressRow:
        _checked(tick_kind=row.tick_kind, state_hash=row.state_hash, error=row.error, detail=row.detail)
        with self._lock:
            self._profile(profile)
            if row.intent_id is not None:
                self.get_intent(profile, row.intent_id)
            made = ProgressRow(
                self._next_id(), profile, row.tick_kind, row.outcome, row.state_hash, row.intent_id,
                row.error, row.detail, _utc(row.started_at), _utc(row.ended_at),
            )  # fmt: skip
            self.progress.setdefault(profile, []).append(made)
            return made

    def recent_progress(
        self, profile: str, *, limit: int = 20, tick_kind: str | None = None
    ) -> list[ProgressRow]:
        with self._lock:
            rows = self.progress.get(profile, [])
            found: list[ProgressRow] = []
            for row in reversed(rows):
                if len(found) >= limit:
                    break
                if tick_kind is None or row.tick_kind == tick_kind:
                    found.append(row)
            return found

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
        stored = _round_trip(dumps("payload", payload))
        _checked(source=source, content_hash=content_hash)
        with self._lock:
            self._profile(profile)
            if any(
                o.profile == profile and o.content_hash == content_hash for o in self.observations.values()
            ):
                return None
            made = Observation(self._next_id(), profile, source, content_hash, tainted, stored, _utc(now))
            self.observations[made.id] = made
            return made

    def list_observations(
        self, profile: str, *, since: datetime = EPOCH, limit: int = 100
    ) -> list[Observation]:
        with self._lock:
            found = [o for o in self.observations.values() if o.profile == profile and o.observed_at >= since]
        return sorted(found, key=lambda o: (o.observed_at, o.id), reverse=True)[:limit]

    def add_note(
        self, profile: str, text: str, *, now: datetime, source: str = "", tainted: bool = False
    ) -> MemoryNote:
        _checked(text=text, source=source)
        with self._lock:
            self._profile(profile)
            made = MemoryNote(self._next_id(), profile, text, source, tainted, _utc(now))
            self.notes[made.id] = made
            return made

    def search_notes(self, profile: str, query: str, *, limit: int = 20) -> list[MemoryNote]:
        wanted = set(search_tokens(query))
        if not wanted:
            return []
        with self._lock:
            found = [
                n
                for n in self.notes.values()
                if n.profile == profile and wanted <= set(search_tokens(n.text))
            ]
        return sorted(found, key=lambda n: -n.id)[:limit]

    # -- critiques, attention, notifications, monitor, state of play --------------------------------

    def add_critique(
        self, profile: str, goal_version: int, text: str, *, failure_type: str, now: datetime, keep: int = 3
    ) -> Critique:
        _checked(text=text, failure_type=failure_type)
        with self._lock:
            self._profile(profile)
            made = Critique(self._next_id(), profile, goal_version, text, failure_type, _utc(now))
            self.critiques[made.id] = made
            for old in self.recent_critiques(profile, goal_version, limit=1_000_000)[keep:]:
                del self.critiques[old.id]
            return made

    def recent_critiques(self, profile: str, goal_version: int, *, limit: int = 3) -> list[Critique]:
        with self._lock:
            mine = [
                c for c in self.critiques.values() if c.profile == profile and c.goal_version == goal_version
            ]
        return sorted(mine, key=lambda c: -c.id)[:limit]

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
        _checked(day=day, budget=budget, reason=reason)
        with self._lock:
            self._profile(profile)
            last_day, used, last_at = self.budgets.get((profile, budget), ("", 0, None))
            used_today = used if last_day == day else 0
            if used_today >= cap or (last_at is not None and last_at > now - min_gap):
                return False
            self.budgets[(profile, budget)] = (day, used_today + 1, _utc(now))
            self.spends.append(AttentionSpend(self._next_id(), profile, budget, reason, _utc(now)))
            return True

    def attention_spends(self, profile: str, *, since: datetime = EPOCH) -> list[AttentionSpend]:
        with self._lock:
            return [s for s in self.spends if s.profile == profile and s.spent_at >= since]

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
        _checked(channel=channel, kind=kind, subject=subject, body=body)
        with self._lock:
            self._profile(profile)
            made = Notification(self._next_id(), profile, channel, kind, subject, body, intent_id, _utc(now))
            self.notifications.append(made)
            return made

    def list_notifications(
        self, profile: str, *, since: datetime = EPOCH, limit: int = 100
    ) -> list[Notification]:
        with self._lock:
            found = [n for n in self.notifications if n.profile == profile and n.sent_at >= since]
        return sorted(found, key=lambda n: -n.id)[:limit]

    def get_condition(self, profile: str, name: str) -> ConditionState | None:
        return self.conditions.get((profile, name))

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
        _checked(name=name)
        with self._lock:
            self._profile(profile)
            made = ConditionState(
                profile, name, active, None if since is None else _utc(since),
                None if last_notified_at is None else _utc(last_notified_at), _utc(now),
            )  # fmt: skip
            self.conditions[(profile, name)] = made
            return made

    def list_conditions(self, profiles: Sequence[str] | None = None) -> list[ConditionState]:
        with self._lock:
            wanted = None if profiles is None else set(profiles)
            found = [c for c in self.conditions.values() if wanted is None or c.profile in wanted]
        return sorted(found, key=lambda c: (c.profile, c.name))

    def loop_stats(
        self, profiles: Sequence[str] | None = None, *, window: int, flagged: Flagged | None = None
    ) -> dict[str, LoopStats]:
        with self._lock:
            names = sorted(self.profiles if profiles is None else set(profiles) & set(self.profiles))
            found = {name: self._loop_stats(name, window) for name in names}
            if flagged is None:
                return found
            active = {c.profile for c in self.conditions.values() if c.active}
            return {name: stats for name, stats in found.items() if _flagged(name, stats, flagged, active)}

    def _loop_stats(self, name: str, window: int) -> LoopStats:
        rows = self.progress.get(name, [])
        fast = [r for r in reversed(rows) if r.tick_kind == TickKind.FAST][:window]
        streak = next((i for i, r in enumerate(fast) if r.outcome in PROGRESS_OUTCOMES), len(fast))
        recent = rows[::-1][:window]
        head = recent[0].state_hash if recent else ""
        frozen = next((i for i, r in enumerate(recent) if r.state_hash != head), len(recent))
        return LoopStats(
            no_progress_streak=streak,
            newest_progress_at=rows[-1].ended_at if rows else None,
            has_active_goal=any(
                g.profile == name and g.status is GoalStatus.ACTIVE for g in self.goals.values()
            ),
            board_unchanged_ticks=frozen,
            waiting_approvals=sum(
                1 for i in self.intents.values()
                if i.profile == name and i.status is IntentStatus.REQUIRES_APPROVAL
            ),
        )  # fmt: skip

    def add_state_of_play(self, profile: str, text: str, *, now: datetime) -> StateOfPlay:
        _checked(text=text)
        with self._lock:
            self._profile(profile)
            made = StateOfPlay(self._next_id(), profile, text, _utc(now))
            self.states.append(made)
            return made

    def latest_state_of_play(self, profile: str) -> StateOfPlay | None:
        with self._lock:
            mine = [s for s in self.states if s.profile == profile]
        return mine[-1] if mine else None

    # -- retention ----------------------------------------------------------------------------------

    def prune(self, profile: str, *, before: datetime, keep_recent: int) -> dict[str, int]:
        keep = max(0, keep_recent)
        with self._lock:
            open_ids = {
                i.id
                for i in self.intents.values()
                if i.profile == profile and i.status in OPEN_INTENT_STATUSES
            }

            def goes(row_id: int, at: datetime, newest: set[int], intent_id: int | None = None) -> bool:
                return (
                    at < before and row_id not in newest and (intent_id is None or intent_id not in open_ids)
                )

            progress = self.progress.get(profile, [])
            floor = {r.id for kind in {r.tick_kind for r in progress} for r in _newest(progress, keep, kind)}
            kept = [r for r in progress if not goes(r.id, r.started_at, floor, r.intent_id)]
            counts = {"progress": len(progress) - len(kept)}
            self.progress[profile] = kept
            mine = [o for o in self.observations.values() if o.profile == profile]
            floor = {o.id for o in sorted(mine, key=lambda o: -o.id)[:keep]}
            gone = [o.id for o in mine if goes(o.id, o.observed_at, floor)]
            for row_id in gone:
                del self.observations[row_id]
            counts["observations"] = len(gone)
            counts["notifications"] = self._prune_list(self.notifications, profile, keep, goes)
            counts["states_of_play"] = self._prune_list(self.states, profile, keep, goes)
            return counts

    @staticmethod
    def _prune_list(items: list[Any], profile: str, keep: int, goes: Any) -> int:
        mine = [x for x in items if x.profile == profile]
        floor = {x.id for x in sorted(mine, key=lambda x: -x.id)[:keep]}
        gone = {
            x.id
            for x in mine
            if goes(x.id, getattr(x, "sent_at", None) or x.created_at, floor, getattr(x, "intent_id", None))
        }
        items[:] = [x for x in items if not (x.profile == profile and x.id in gone)]
        return len(gone)

    # -- tick locks ---------------------------------------------------------------------------------

    @contextmanager
    def tick_lock(
        self,
        profile: str,
        tick_kind: str,
        *,
        owner: str,
        now: datetime,
        lease: timedelta = timedelta(hours=1),
    ) -> Iterator[bool]:
        key = (profile, tick_kind)
        with self._lock:
            holder = self.locks.get(key)
            held = holder is None or holder[1] <= now
            if held:
                self.locks[key] = (owner, now + lease)
        try:
            yield held
        finally:
            if held:
                with self._lock:
                    if self.locks.get(key, ("", now))[0] == owner:
                        del self.locks[key]


def _flagged(name: str, stats: LoopStats, flagged: Flagged, active: set[str]) -> bool:
    newest = stats.newest_progress_at
    return (
        stats.no_progress_streak >= flagged.min_streak
        or stats.board_unchanged_ticks >= flagged.min_board
        or (newest is not None and newest <= flagged.silent_before)
        or not stats.has_active_goal
        or name in active
    )


def _newest(rows: list[ProgressRow], keep: int, kind: str) -> list[ProgressRow]:
    return sorted((r for r in rows if r.tick_kind == kind), key=lambda r: -r.id)[:keep]


def _round_trip(text: str) -> Any:
    """What the SQL backends would give back for this JSON text (a copy the caller can't mutate)."""
    return json.loads(text)
