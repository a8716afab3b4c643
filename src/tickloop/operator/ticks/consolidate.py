"""The nightly consolidation: three phases, each failing on its own.

- ``state_of_play``: the summary the next morning's first fast tick reads first;
- ``goal_refresh``: a refreshed goal model, written as a DRAFT (never activated: that is the
  person's call, ``tickloop operator goal activate``);
- ``prune``: retention of ephemeral rows older than ``RETAIN`` within the store's floors (the
  ``KEEP_RECENT`` newest of each kind, and anything an open intent references).

The first two share one model call (made once, on first need); if it fails, both record that and
pruning still runs. A phase that raises is named in the row's error and the outcome is ``failed``;
the phases that ran are in its detail.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from tickloop.operator.context import ContextPacket
from tickloop.operator.domain import GoalModel, Outcome
from tickloop.operator.runner import TickContext, TickResult
from tickloop.operator.schemas import ConsolidationOut
from tickloop.operator.ticks._ask import Asked, ask

#: Ephemeral rows older than this are pruned (within the floors).
RETAIN = timedelta(days=30)
#: The floor: never fewer than this many of the newest rows of each kind.
KEEP_RECENT = 500


class _Answer:
    """The consolidation answer, asked for once and only when a phase needs it."""

    def __init__(self, ctx: TickContext, goal: GoalModel | None) -> None:
        self.ctx, self.goal = ctx, goal
        self.asked: Asked[ConsolidationOut] | None = None

    def get(self) -> ConsolidationOut:
        if self.goal is None:
            raise LookupError("no active goal model to consolidate against")
        if self.asked is None:
            self.asked = ask(self.ctx, "consolidate", _packet(self.ctx, self.goal), ConsolidationOut)
        if self.asked.value is None:
            raise ValueError(self.asked.error)
        return self.asked.value


def run(ctx: TickContext) -> TickResult:
    goal = ctx.store.active_goal_model(ctx.profile)
    answer = _Answer(ctx, goal)
    phases: list[tuple[str, Callable[[], str]]] = [
        ("state_of_play", lambda: state_of_play(ctx, answer)),
        ("goal_refresh", lambda: goal_refresh(ctx, answer)),
        ("prune", lambda: prune(ctx)),
    ]
    done, errors = [], []
    for name, phase in phases:
        try:
            done.append(f"{name}: {phase()}")
        except Exception as exc:  # noqa: BLE001  (each phase fails alone; the row names it)
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
            ctx.log(f"consolidate: phase {errors[-1]}")
    extra = dict(answer.asked.extra) if answer.asked is not None else {}
    outcome = Outcome.FAILED if errors else Outcome.DONE
    return TickResult(outcome, detail="; ".join(done), error="; ".join(errors), extra=extra)


def state_of_play(ctx: TickContext, answer: _Answer) -> str:
    made = ctx.store.add_state_of_play(ctx.profile, answer.get().state_of_play, now=ctx.clock.now())
    return f"written #{made.id}"


def goal_refresh(ctx: TickContext, answer: _Answer) -> str:
    body = answer.get().goal_refresh.strip()
    goal = answer.goal
    assert goal is not None  # answer.get() refuses without one
    if not body or body == goal.body.strip():
        return "unchanged"
    draft = ctx.store.add_goal_model(
        ctx.profile, title=goal.title, body=body, data={"refreshed_from": goal.version}, now=ctx.clock.now()
    )
    return f"draft v{draft.version} (not activated)"


def prune(ctx: TickContext) -> str:
    counts = ctx.store.prune(ctx.profile, before=ctx.clock.now() - RETAIN, keep_recent=KEEP_RECENT)
    return " ".join(f"{kind}={n}" for kind, n in counts.items())


def _packet(ctx: TickContext, goal: GoalModel) -> ContextPacket:
    progress = ctx.store.recent_progress(ctx.profile, limit=60)
    state = ctx.store.latest_state_of_play(ctx.profile)
    return ContextPacket(
        goal={"version": goal.version, "title": goal.title, "body": goal.body},
        tick="consolidate",
        state_of_play=None if state is None else state.text,
        board=[
            {"id": t.id, "title": t.title, "priority": t.priority, "status": str(t.status)}
            for t in ctx.store.list_tasks(ctx.profile)
        ],
        recent_progress=[
            {"kind": r.tick_kind, "outcome": str(r.outcome), "at": r.ended_at.isoformat(), "error": r.error}
            for r in reversed(progress)
        ],
    )
