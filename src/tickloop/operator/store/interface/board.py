"""The board (tasks, its canonical hash) and each goal's plan."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime

import msgspec

from tickloop.operator.domain import (
    NewPlanStep,
    PlanStep,
    StepStatus,
    Task,
    TaskStatus,
)
from tickloop.sha256 import sha256


class BoardInterface(ABC):
    """The operations on the board and the plan."""

    @abstractmethod
    def add_task(
        self, profile: str, title: str, *, now: datetime, priority: int = 0, notes: str = ""
    ) -> Task:
        """Add a task to the board as ``todo``."""

    @abstractmethod
    def get_task(self, profile: str, task_id: int) -> Task:
        """One task, or ``NotFoundError``."""

    @abstractmethod
    def list_tasks(self, profile: str) -> list[Task]:
        """The board: highest priority first, then oldest."""

    @abstractmethod
    def set_task_priority(self, profile: str, task_id: int, priority: int, *, now: datetime) -> Task:
        """Set a task's priority (the slow tick's re-prioritisation); ``NotFoundError`` if unknown."""

    @abstractmethod
    def set_task_status(
        self,
        profile: str,
        task_id: int,
        status: TaskStatus,
        *,
        now: datetime,
        expected: TaskStatus | None = None,
    ) -> Task:
        """Compare-and-set a task's status (``expected`` defaults to the status read just before)."""

    def board_hash(self, profile: str) -> str:
        """``sha256:`` + hex SHA-256 of the board's canonical JSON: the list of ``[id, title,
        priority, status]`` rows sorted by id, compact separators, UTF-8, no ASCII escaping. This
        form is part of the documented contract (a golden vector pins it): an unchanged hash
        means an unchanged board, across ticks, backends and versions."""
        rows = [[t.id, t.title, t.priority, str(t.status)] for t in self.list_tasks(profile)]
        # Byte for byte ``json.dumps(rows, separators=(",", ":"), ensure_ascii=False)`` in UTF-8 for
        # stored text (valid UTF-8), without importing json on every tick (a test pins the sameness).
        return "sha256:" + sha256(msgspec.json.encode(sorted(rows))).hexdigest()

    @abstractmethod
    def replace_plan(
        self, profile: str, goal_version: int, steps: Sequence[NewPlanStep], *, now: datetime
    ) -> list[PlanStep]:
        """Replace the goal's pending steps with ``steps`` (in order, after any finished ones)."""

    @abstractmethod
    def list_plan(self, profile: str, goal_version: int) -> list[PlanStep]:
        """The goal's steps in order."""

    @abstractmethod
    def current_plan_step(self, profile: str, goal_version: int) -> PlanStep | None:
        """The first pending step: the one the fast tick advances."""

    @abstractmethod
    def set_step_status(
        self,
        profile: str,
        step_id: int,
        status: StepStatus,
        *,
        now: datetime,
        expected: StepStatus = StepStatus.PENDING,
    ) -> PlanStep:
        """Compare-and-set a step's status."""
