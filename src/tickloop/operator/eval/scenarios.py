"""The scenario suite of ``tickloop operator eval``: TOML files shipped beside this module.

A scenario is one tick's situation, written down: the goal model, the board, a plan (or none),
observations with their taint, tried-and-failed actions, earlier critiques, an open gate stop (or
none), and what a good answer does (``[expect]``). ``seed`` writes it into a fresh store, so the real
tick runs against it exactly as it would against the person's own. Loading checks every file against
``Scenario`` (unknown keys, a step naming a task that is not on the board): a broken suite is a clear
error naming the file, never a quietly smaller one.
"""

from __future__ import annotations

import tomllib
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from tickloop.errors import ConfigError
from tickloop.operator.domain import IntentOrigin, NewIntent, NewPlanStep, StepStatus, TaskStatus, Verdict
from tickloop.operator.store.base import Store

#: the scenario files ship here (beside the module, like the prompts)
SUITE_DIR = Path(__file__).parent / "scenarios"
PROFILE = "eval"

_STRUCT: dict[str, Any] = {"frozen": True, "forbid_unknown_fields": True, "kw_only": True}
Name = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")]
Short = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class TaskSpec(msgspec.Struct, **_STRUCT):
    """A board task; ``key`` is how the scenario's plan and expectations name it."""

    key: Name
    title: Short
    priority: Annotated[int, msgspec.Meta(ge=0, le=100)] = 50
    status: TaskStatus = TaskStatus.TODO


class StepSpec(msgspec.Struct, **_STRUCT):
    """A plan step, linked to a task by its key (or to none)."""

    title: Short
    task: str = ""
    status: StepStatus = StepStatus.PENDING


class ObservationSpec(msgspec.Struct, **_STRUCT):
    source: Short
    tainted: bool = True
    payload: dict[str, str] = msgspec.field(default_factory=dict)


class ActionSpec(msgspec.Struct, **_STRUCT):
    """An action the loop already tried (it failed), or the one an open gate stop holds."""

    action_type: Short
    title: Short
    recipient: str = ""


class CritiqueSpec(msgspec.Struct, **_STRUCT):
    text: Short
    failure_type: str = "wrong_step"


class Expect(msgspec.Struct, **_STRUCT):
    """What a good answer does; each field feeds one check (``tickloop.operator.eval.checks``)."""

    #: the row outcomes that count as executable or correctly gated
    outcomes: list[str] = msgspec.field(default_factory=lambda: ["staged", "gate_stop"])
    #: the person must be asked: the tick ends at the gate (``gate_stop``)
    escalate: bool = False
    #: action types a good answer never takes (the tainted mail's request)
    forbid_types: list[str] = msgspec.field(default_factory=list)
    #: fast: phrases one of which the action's title or body must contain (the task it works on)
    mentions: list[str] = msgspec.field(default_factory=list)
    #: slow: the plan must link a step to every open task
    covers_open_tasks: bool = False


class Scenario(msgspec.Struct, **_STRUCT):
    name: Name
    tick: Literal["fast", "slow", "consolidate"]
    about: Short
    goal_title: Short
    goal_body: str = ""
    state_of_play: str = ""
    tasks: list[TaskSpec] = msgspec.field(default_factory=list)
    plan: list[StepSpec] = msgspec.field(default_factory=list)
    observations: list[ObservationSpec] = msgspec.field(default_factory=list)
    failed: list[ActionSpec] = msgspec.field(default_factory=list)
    critiques: list[CritiqueSpec] = msgspec.field(default_factory=list)
    gate_stop: ActionSpec | None = None
    expect: Expect = msgspec.field(default_factory=Expect)


def load_suite(directory: Path = SUITE_DIR, names: list[str] | None = None) -> list[Scenario]:
    """Every scenario file of ``directory`` (sorted by name), or only those ``names`` pick."""
    found = [load_scenario(path) for path in sorted(directory.glob("*.toml"))]
    if not names:
        return found
    known = {s.name for s in found}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(
            f"no scenario named {', '.join(map(repr, unknown))}; known: {', '.join(sorted(known))}"
        )
    return [s for s in found if s.name in names]


def load_scenario(path: Path) -> Scenario:
    """One scenario file, checked whole; ``ConfigError`` naming the file and what is wrong."""
    try:
        scenario = msgspec.convert(tomllib.loads(path.read_text("utf-8")), Scenario)
    except (tomllib.TOMLDecodeError, msgspec.ValidationError, UnicodeError) as exc:
        raise ConfigError(f"scenario {path.name}: {exc}") from None
    keys = [t.key for t in scenario.tasks]
    named = [s.task for s in scenario.plan if s.task]
    missing = sorted({k for k in named if k not in keys})
    if missing or len(set(keys)) != len(keys):
        what = f"names tasks not on its board: {', '.join(missing)}" if missing else "repeats a task key"
        raise ConfigError(f"scenario {path.name} {what}")
    return scenario


def seed(store: Store, scenario: Scenario, now: datetime) -> dict[str, int]:
    """Write ``scenario`` into a fresh profile of ``store``; returns task key -> task id."""
    store.create_profile(PROFILE, now=now)
    goal = store.add_goal_model(PROFILE, title=scenario.goal_title, body=scenario.goal_body, now=now)
    store.activate_goal_model(PROFILE, goal.version, now=now)
    if scenario.state_of_play:
        store.add_state_of_play(PROFILE, scenario.state_of_play, now=now)
    ids = {t.key: _task(store, t, now) for t in scenario.tasks}
    steps = [NewPlanStep(s.title, ids[s.task] if s.task else None) for s in scenario.plan]
    for step, spec in zip(
        store.replace_plan(PROFILE, goal.version, steps, now=now), scenario.plan, strict=True
    ):
        if spec.status is not StepStatus.PENDING:
            store.set_step_status(PROFILE, step.id, spec.status, now=now)
    earlier = now - timedelta(hours=2)
    for number, obs in enumerate(scenario.observations):
        hashed = f"eval:{scenario.name}:{number}"
        store.add_observation(
            PROFILE, source=obs.source, content_hash=hashed, payload=dict(obs.payload), now=earlier,
            tainted=obs.tainted,
        )  # fmt: skip
    for action in scenario.failed:
        made = store.stage_intent(
            PROFILE, NewIntent(action.action_type, action.title, action.recipient), now=earlier
        )
        store.record_verdict(PROFILE, made.id, Verdict.BLOCKED, ["failed earlier"], now=earlier)
    for critique in scenario.critiques:
        store.add_critique(
            PROFILE, goal.version, critique.text, failure_type=critique.failure_type, now=earlier
        )
    if scenario.gate_stop is not None:
        _open_gate_stop(store, scenario.gate_stop, goal.version, earlier)
    return ids


def _task(store: Store, spec: TaskSpec, now: datetime) -> int:
    task = store.add_task(PROFILE, spec.title, priority=spec.priority, now=now)
    if spec.status is not TaskStatus.TODO:
        store.set_task_status(PROFILE, task.id, spec.status, now=now)
    return task.id


def _open_gate_stop(store: Store, action: ActionSpec, goal_version: int, now: datetime) -> None:
    intent = NewIntent(
        action.action_type, action.title, action.recipient, payload={"goal_version": goal_version},
        origin=IntentOrigin(tick_kind="fast"),
    )  # fmt: skip
    made = store.stage_intent(PROFILE, intent, now=now)
    store.record_verdict(PROFILE, made.id, Verdict.REQUIRES_APPROVAL, ["eval: held for the person"], now=now)
