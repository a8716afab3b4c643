"""Profiles, their goal models and the self-critiques kept per goal."""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any

from tickloop.operator.domain import (
    Critique,
    GoalModel,
    Profile,
)


class ProfileInterface(ABC):
    """The operations on profiles, goal models and critiques."""

    @abstractmethod
    def create_profile(
        self, name: str, *, now: datetime, display_name: str = "", timezone: str = "UTC"
    ) -> Profile:
        """Create a profile; ``ConflictError`` if the name is taken."""

    @abstractmethod
    def get_profile(self, name: str) -> Profile:
        """The profile, or ``NotFoundError``."""

    @abstractmethod
    def update_profile(
        self, name: str, *, display_name: str | None = None, timezone: str | None = None
    ) -> Profile:
        """Change a profile's display name and/or timezone (None: unchanged); ``NotFoundError``."""

    @abstractmethod
    def list_profiles(self) -> list[Profile]:
        """Every profile, by name."""

    @abstractmethod
    def add_goal_model(
        self, profile: str, *, title: str, now: datetime, body: str = "", data: dict[str, Any] | None = None
    ) -> GoalModel:
        """Write the next version as a draft (never auto-activated)."""

    @abstractmethod
    def activate_goal_model(self, profile: str, version: int, *, now: datetime) -> GoalModel:
        """Make ``version`` the one active goal model; the previous active one is retired."""

    @abstractmethod
    def get_goal_model(self, profile: str, version: int) -> GoalModel:
        """One version, or ``NotFoundError``."""

    @abstractmethod
    def active_goal_model(self, profile: str) -> GoalModel | None:
        """The active goal model, or None: a tick without one must refuse to act."""

    @abstractmethod
    def list_goal_models(self, profile: str) -> list[GoalModel]:
        """Every version, oldest first."""

    @abstractmethod
    def add_critique(
        self, profile: str, goal_version: int, text: str, *, failure_type: str, now: datetime, keep: int = 3
    ) -> Critique:
        """Add a self-critique and prune the goal's critiques to the newest ``keep``."""

    @abstractmethod
    def recent_critiques(self, profile: str, goal_version: int, *, limit: int = 3) -> list[Critique]:
        """The goal's newest critiques first."""
