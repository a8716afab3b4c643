"""The library functions behind `tickloop operator init` and `goal set`."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tickloop.errors import ValidationError
from tickloop.operator.domain import GoalStatus
from tickloop.operator.service import InitSpec, current_plan, init_profile, read_init_file, set_goal
from tickloop.operator.store import Store

NOW = datetime(2026, 7, 7, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[goal\n", "not valid TOML"),
        ("[goal]\nbody = 'x'\n", "title must be a non-empty string"),
        ("[goal]\ntitle = 'x'\ncolour = 'red'\n", "unknown keys ['colour']"),
        ("goal = 3\n", "goal must be a table"),
        ("[profile]\ntimezone = 3\n[goal]\ntitle = 'x'\n", "timezone must be a string"),
    ],
)
def test_bad_init_files_say_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    """A malformed init file is refused with the file name and what to fix."""
    path = tmp_path / "init.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValidationError, match=r"init\.toml") as caught:
        read_init_file(path)
    assert message in str(caught.value)


def test_init_file_with_invalid_utf8_is_refused(tmp_path: Path) -> None:
    """An init file that is not UTF-8 is refused, not half-read."""
    path = tmp_path / "init.toml"
    path.write_bytes(b"[goal]\ntitle = '\xff'\n")
    with pytest.raises(ValidationError, match="cannot read"):
        read_init_file(path)


def test_init_makes_an_active_goal(operator_store: Store) -> None:
    """`init` leaves exactly one active goal model, so the first tick has something to re-ground on."""
    profile, goal = init_profile(operator_store, "me", InitSpec("Ship"), now=NOW)
    assert (profile.name, goal.status, goal.version) == ("me", GoalStatus.ACTIVE, 1)
    assert current_plan(operator_store, "me") == (goal, [])


def test_goal_set_is_a_draft_unless_activated(operator_store: Store) -> None:
    """A new goal version never replaces the active one unless asked to."""
    init_profile(operator_store, "me", InitSpec("Ship"), now=NOW)
    draft = set_goal(operator_store, "me", title="Next", body="", now=NOW, activate=False)
    assert draft.status is GoalStatus.DRAFT
    active = operator_store.active_goal_model("me")
    assert active is not None
    assert active.version == 1
    assert (
        set_goal(operator_store, "me", title="Now", body="", now=NOW, activate=True).status
        is GoalStatus.ACTIVE
    )


@pytest.mark.parametrize("title", ["", "   "])
def test_empty_goal_titles_are_refused(operator_store: Store, title: str) -> None:
    """A goal model must say what the goal is."""
    with pytest.raises(ValidationError, match="goal title"):
        init_profile(operator_store, "me", InitSpec(title), now=NOW)
