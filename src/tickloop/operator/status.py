"""A one-screen overview of one profile's operator: what ``tickloop operator status`` shows."""

from __future__ import annotations

from datetime import datetime, time

import msgspec

from tickloop.operator.conditions import Condition
from tickloop.operator.domain import IntentStatus, ProgressRow, TickKind
from tickloop.operator.store.base import Store


class Overview(msgspec.Struct, frozen=True):
    """Everything the status screen shows, read in one pass."""

    profile: str
    goal: str | None  #: "v3: Ship the thesis", or None without an active goal model
    current_step: str | None
    last_ticks: dict[str, ProgressRow | None]  #: kind -> newest row
    waiting_approval: list[tuple[int, str, str]]  #: (id, action type, title)
    conditions: dict[str, bool]  #: monitor condition -> active
    attention_today: int


def overview(store: Store, profile: str, *, now: datetime) -> Overview:
    """Read the overview of ``profile`` at ``now``."""
    person = store.get_profile(profile)
    goal = store.active_goal_model(profile)
    step = store.current_plan_step(profile, goal.version) if goal else None
    kinds = [k.value for k in TickKind if k is not TickKind.MONITOR]
    last = {kind: next(iter(store.recent_progress(profile, limit=1, tick_kind=kind)), None) for kind in kinds}
    waiting = store.list_intents(profile, status=IntentStatus.REQUIRES_APPROVAL, limit=50)
    conditions = {}
    for condition in Condition:
        state = store.get_condition(profile, condition.value)
        conditions[condition.value] = bool(state and state.active)
    zone = person.zone()
    midnight = datetime.combine(now.astimezone(zone).date(), time(), zone)
    return Overview(
        profile=profile,
        goal=f"v{goal.version}: {goal.title}" if goal else None,
        current_step=step.title if step else None,
        last_ticks=last,
        waiting_approval=[(i.id, i.action_type, i.title) for i in waiting],
        conditions=conditions,
        attention_today=len(store.attention_spends(profile, since=midnight)),
    )
