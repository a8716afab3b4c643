"""The board (tasks) and the plan (steps toward the active goal model)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from tickloop.errors import NotFoundError
from tickloop.operator.domain import NewPlanStep, PlanStep, StepStatus, Task, TaskStatus
from tickloop.operator.store import _rows as rows
from tickloop.operator.store._sql import Tx
from tickloop.operator.store.sqlops.base import SqlBase, lost


class BoardOps(SqlBase):
    """Tasks and plan steps."""

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
                lost("task", task_id, profile, prior, None if found is None else found["status"])
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
                lost("plan step", step_id, profile, expected, None if found is None else found["status"])
        assert row is not None
        return rows.step(row)
