"""Profiles, goal models and the critiques of a goal model."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tickloop.errors import ConflictError, NotFoundError
from tickloop.operator.domain import Critique, GoalModel, Profile
from tickloop.operator.store import _rows as rows
from tickloop.operator.store._rows import dumps
from tickloop.operator.store.sqlops.base import SqlBase


class ProfileOps(SqlBase):
    """Profiles, goal models, critiques."""

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

    def update_profile(
        self, name: str, *, display_name: str | None = None, timezone: str | None = None
    ) -> Profile:
        with self._write_one() as tx:
            row = tx.one("update_profile", name=name, display_name=display_name, timezone=timezone)
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

    # -- critiques ---------------------------------------------------------------------------------

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
