"""What the ``tickloop operator`` commands do, callable from Python too (the CLI only parses and renders)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from tickloop.errors import ConflictError, TransitionError, ValidationError
from tickloop.operator.domain import (
    Decision,
    DecisionKind,
    GoalModel,
    Intent,
    PlanStep,
    Profile,
    Task,
    TaskStatus,
    check_timezone,
)
from tickloop.operator.store import Store, open_store

if TYPE_CHECKING:  # staging pulls in the handlers; only the faces that stage import it
    from pathlib import Path  # (and a one-shot tick never imports pathlib: tickloop.dirs says why)

    from tickloop.config import Settings
    from tickloop.operator.gate import GateSettings
    from tickloop.operator.staging import Draft, Staged


def open_configured_store(*, migrate: bool = True, create: bool = False) -> Store:
    """The store named by ``TICKLOOP_STORE`` or ``[store] url`` (never by argv: a URL can hold a password).

    Only ``operator init`` and ``operator migrate`` pass ``create=True``: any other command on a
    missing SQLite file fails naming it instead of leaving a new, empty store behind.
    """
    from tickloop.config import load_settings  # noqa: PLC0415  (msgspec only when a command runs)

    return open_store(load_settings().store.url, migrate=migrate, create=create)


class InitSpec(msgspec.Struct, frozen=True):
    """A profile and its first goal model, from flags or a TOML file."""

    goal_title: str
    goal_body: str = ""
    goal_data: dict[str, Any] = msgspec.field(default_factory=dict)
    display_name: str = ""
    timezone: str = "UTC"


def read_init_file(path: Path) -> InitSpec:
    """Parse ``[profile] display_name, timezone`` and ``[goal] title, body, [goal.data]`` from TOML."""
    import tomllib  # noqa: PLC0415  (only `operator init --from` reads TOML; ticks import this module)

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"cannot read {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValidationError(f"{path} is not valid TOML: {exc}") from None
    profile, goal = _table(data, "profile", path), _table(data, "goal", path)
    unknown = (set(profile) - {"display_name", "timezone"}) | (set(goal) - {"title", "body", "data"})
    if unknown:
        raise ValidationError(f"{path}: unknown keys {sorted(unknown)}; see `tickloop operator init --help`")
    title = goal.get("title")
    if not isinstance(title, str) or not title.strip():
        raise ValidationError(f"{path}: [goal] title must be a non-empty string")
    return InitSpec(
        goal_title=title,
        goal_body=_string(goal, "body", path, ""),
        goal_data=_table(goal, "data", path),
        display_name=_string(profile, "display_name", path, ""),
        timezone=_string(profile, "timezone", path, "UTC"),
    )


def _table(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ValidationError(f"{path}: {key} must be a table")
    return value


def _string(data: dict[str, Any], key: str, path: Path, default: str) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise ValidationError(f"{path}: {key} must be a string")
    return value


def init_profile(store: Store, name: str, spec: InitSpec, *, now: datetime) -> tuple[Profile, GoalModel]:
    """Create the profile and its first goal model, active at once."""
    if not name.strip():
        raise ValidationError("profile name must not be empty")
    if not spec.goal_title.strip():
        raise ValidationError("goal title must not be empty: pass --goal TITLE or a [goal] title")
    check_timezone(spec.timezone)
    profile = store.create_profile(name, display_name=spec.display_name, timezone=spec.timezone, now=now)
    goal = store.add_goal_model(
        name, title=spec.goal_title, body=spec.goal_body, data=spec.goal_data, now=now
    )
    return profile, store.activate_goal_model(name, goal.version, now=now)


def set_profile(
    store: Store, name: str, *, now: datetime, timezone: str | None = None, display_name: str | None = None
) -> tuple[Profile, list[str]]:
    """Change a profile's timezone and/or display name, checked first; each change is recorded in
    the notification log (``operator/profile_changed``), as every change the person makes is."""
    before = store.get_profile(name)
    if timezone is not None:
        check_timezone(timezone)
    after = store.update_profile(name, timezone=timezone, display_name=display_name)
    changes = [
        f"{field}: {getattr(before, field)!r} -> {getattr(after, field)!r}"
        for field in ("timezone", "display_name")
        if getattr(before, field) != getattr(after, field)
    ]
    for change in changes:
        store.log_notification(name, channel="operator", kind="profile_changed", subject=change, now=now)
    return after, changes


def set_goal(
    store: Store, profile: str, *, title: str, body: str, now: datetime, activate: bool
) -> GoalModel:
    """Write a new goal model version (a draft unless ``activate``)."""
    store.get_profile(profile)
    if not title.strip():
        raise ValidationError("goal title must not be empty")
    goal = store.add_goal_model(profile, title=title, body=body, now=now)
    return store.activate_goal_model(profile, goal.version, now=now) if activate else goal


def current_plan(store: Store, profile: str) -> tuple[GoalModel | None, list[PlanStep]]:
    """The active goal model and its plan (empty without an active goal)."""
    goal = store.active_goal_model(profile)
    return goal, [] if goal is None else store.list_plan(profile, goal.version)


# -- what every face does the same way (the CLI, the MCP face) ------------------------------------------

#: A task action any face offers -> (the status it sets, the status the task must be in; None: any).
TASK_ACTIONS: dict[str, tuple[TaskStatus, TaskStatus | None]] = {
    "block": (TaskStatus.BLOCKED, None),
    "unblock": (TaskStatus.TODO, TaskStatus.BLOCKED),
    "done": (TaskStatus.DONE, None),
}


def add_task(
    store: Store, profile: str, title: str, *, now: datetime, priority: int = 0, notes: str = ""
) -> Task:
    """Add a task to the board (``todo``); an empty title is refused."""
    if not title.strip():
        raise ValidationError("task title must not be empty")
    return store.add_task(profile, title, priority=priority, notes=notes, now=now)


def change_task(store: Store, profile: str, task_id: int, action: str, *, now: datetime) -> Task:
    """Apply one of ``TASK_ACTIONS`` (block, unblock, done) to a task, compare-and-set."""
    if action not in TASK_ACTIONS:
        raise ValidationError(f"task action {action!r} is not one of {sorted(TASK_ACTIONS)}")
    status, expected = TASK_ACTIONS[action]
    if expected is not None:
        current = store.get_task(profile, task_id).status
        if current is not expected:
            raise ConflictError(f"task {task_id} is {current}: only a {expected} task can be {action}ed")
    return store.set_task_status(profile, task_id, status, now=now, expected=expected)


def reconcile_intent(
    store: Store, profile: str, intent_id: int, kind: DecisionKind, *, by: str, note: str, now: datetime
) -> tuple[Decision, Intent]:
    """The person's way back from a dead end, recorded as a decision: ``retry`` hands a failed or
    needs_human intent back to the executor (a kernel-sanctioned recovery retry, which the drift
    guard exempts); ``done_by_hand`` and ``did_not_happen`` reconcile a needs_human one.

    A retry needs a note saying what changed (the setting fixed, the reason it is safe to repeat)."""
    if kind is DecisionKind.RETRY and not note.strip():
        raise ValidationError("a retry needs a note (--note) saying what changed since it failed")
    try:
        return store.reconcile(profile, intent_id, kind, by=by, note=note, now=now)
    except TransitionError as exc:
        raise ConflictError(f"intent {intent_id}: {exc.message}") from None


def gate_settings(settings: Settings | None = None) -> GateSettings:
    """The gate's rules from ``[gate]`` (read from the config now unless ``settings`` is given)."""
    from tickloop.config import load_settings, section  # noqa: PLC0415
    from tickloop.operator.gate import GateSettings  # noqa: PLC0415

    return section(load_settings() if settings is None else settings, "gate", GateSettings)


def parse_payload(text: str, *, where: str = "payload") -> dict[str, Any]:
    """A JSON object from text (an intent's payload), or a ``ValidationError`` naming ``where``."""
    import json  # noqa: PLC0415  (an observe tick that finds nothing never loads json)

    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValidationError(f"{where} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValidationError(f"{where} must be a JSON object")
    return data


def stage_draft(
    store: Store,
    profile: str,
    draft: Draft,
    *,
    now: datetime,
    settings: GateSettings | None = None,
    auto_allow: frozenset[str] = frozenset(),
) -> Staged:
    """Stage ``draft`` through the one staging path, judged by the configured gate
    (``auto_allow``: the types an MCP intent may be allowed for without the person)."""
    from tickloop.operator import staging  # noqa: PLC0415

    if not draft.action_type.strip() or not draft.title.strip():
        raise ValidationError("an intent's type and title must not be empty")
    chosen = gate_settings() if settings is None else settings
    return staging.stage(store, profile, draft, chosen, now=now, auto_allow=auto_allow)


def plain(value: Any) -> Any:
    """Records, enums and datetimes as JSON-ready values (datetimes as UTC ISO text, milliseconds, ``Z``).

    msgspec converts in C, leaving datetimes in place; they are then found and msgspec's encoder
    writes them all at once, cut to the store's form (``2026-07-07T09:00:39.000Z``, where msgspec
    alone writes ``...39Z``). For a record, or a list of records of one kind (what the faces send),
    its type says where the times are, so only the fields that can hold one are visited; anything
    else is walked. Struct fields keep their Python names: no record the faces show renames them."""
    found: list[tuple[Any, Any, datetime]] = []
    out = msgspec.to_builtins(value, builtin_types=(datetime,), str_keys=True)
    if isinstance(out, datetime):
        return _iso_all([out])[0]
    kind = _record_kind(value)
    if kind is None:
        out = _collect(out, found)
    else:
        out = [out] if isinstance(value, msgspec.Struct) else list(out)
        plan = _plan(kind)
        for row in out:
            _apply(row, plan, found)
        out = out[0] if isinstance(value, msgspec.Struct) else out
    for (holder, key, _), text in zip(found, _iso_all([t for _, _, t in found]), strict=True):
        holder[key] = text
    return out


def _record_kind(value: Any) -> type[msgspec.Struct] | None:
    """The Struct class of ``value``, or of every item of a list or tuple of one Struct class."""
    if isinstance(value, msgspec.Struct):
        return type(value)
    if type(value) in (list, tuple) and value and isinstance(value[0], msgspec.Struct):
        kind = type(value[0])
        if all(type(item) is kind for item in value):
            return kind
    return None


#: how a field is visited: it holds a time (or None), or anything else that may hold one (walked)
_TIME, _WALK = "time", "walk"
_Found = list[tuple[Any, Any, datetime]]
_PLANS: dict[type, tuple[tuple[str, str], ...]] = {}


def _plan(kind: type[msgspec.Struct]) -> tuple[tuple[str, str], ...]:
    """``(field, how)`` for each field of ``kind`` that may hold a time; scalar fields are left out."""
    found = _PLANS.get(kind)
    if found is None:
        import msgspec.inspect as mi  # noqa: PLC0415  (only the faces that send records need it)

        info = mi.type_info(kind)
        assert isinstance(info, mi.StructType)
        scalar = (mi.StrType, mi.IntType, mi.FloatType, mi.BoolType, mi.NoneType, mi.EnumType, mi.LiteralType)
        plan = []
        for field in info.fields:
            options = field.type.types if isinstance(field.type, mi.UnionType) else (field.type,)
            if all(isinstance(t, scalar) for t in options):
                continue
            time = all(isinstance(t, mi.DateTimeType | mi.NoneType) for t in options)
            plan.append((field.encode_name, _TIME if time else _WALK))
        found = _PLANS[kind] = tuple(plan)
    return found


def _apply(
    row: dict[str, Any], plan: tuple[tuple[str, str], ...], found: list[tuple[Any, Any, datetime]]
) -> None:
    for key, how in plan:
        item = row[key]
        if isinstance(item, datetime):
            found.append((row, key, item))
        elif how is _WALK and type(item) in _CONTAINERS:
            row[key] = _collect(item, found)


def _collect(value: Any, found: list[tuple[Any, Any, datetime]]) -> Any:
    """``value`` with tuples made lists; every datetime in it noted as ``(container, key, time)``."""
    kind = type(value)
    if kind is tuple:  # msgspec keeps tuples; JSON has only lists
        value, kind = list(value), list
    if kind is dict:
        for key, item in value.items():
            if type(item) in _CONTAINERS:
                value[key] = _collect(item, found)
            elif isinstance(item, datetime):
                found.append((value, key, item))
    elif kind is list:
        for index, item in enumerate(value):
            if type(item) in _CONTAINERS:
                value[index] = _collect(item, found)
            elif isinstance(item, datetime):
                found.append((value, index, item))
    return value


_CONTAINERS = frozenset({dict, list, tuple})
_TIMES = msgspec.json.Decoder(list[str])


def _iso_all(times: list[datetime]) -> list[str]:
    """Each time as ``_rows.iso`` writes it (UTC, milliseconds, ``Z``), encoded in one C call."""
    from tickloop.operator.store._rows import iso  # noqa: PLC0415  (its check of naive times)

    utc = [t if t.tzinfo is UTC else datetime.fromisoformat(iso(t)) for t in times]
    texts = _TIMES.decode(msgspec.json.encode(utc))
    return [t[:19] + (t[19:23] if t[19] == "." else ".000") + "Z" for t in texts]
