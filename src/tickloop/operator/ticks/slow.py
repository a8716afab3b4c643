"""The slow tick (the daily reviewer): re-prioritise the board, flag drift, write the forward plan.

1. Reconcile the plan with the board first: a pending step whose task became blocked is flipped to
   ``blocked`` (never ``done``: that would silently skip work that never happened); a pending step
   whose task is done is marked ``done``.
2. Ask the model for a ``ReviewOut`` against the goal model, the board, three days of progress and
   recent observations. Invalid output: a ``failed`` row and nothing changed.
3. The schema sent names the board's open task ids as an enum (``review_schema``), and the answer
   is checked against it (``check_review``): a priority or a plan step naming any other task fails
   the review (model output is untrusted: nothing is guessed, nothing is applied).
   Apply it: the priorities, then the ordered plan (``replace_plan``). Drift and what is falling
   behind become notice candidates for the person.
   A review that leaves no plan step while open tasks remain did not do its job: a ``failed`` row
   ("no plan for N open tasks") and nothing applied, never ``done`` with ``plan_steps=0``.
"""

from __future__ import annotations

from datetime import timedelta

from tickloop.errors import ValidationError
from tickloop.operator import candidates
from tickloop.operator.context import ContextPacket
from tickloop.operator.domain import GoalModel, NewPlanStep, Outcome, StepStatus, Task, TaskStatus
from tickloop.operator.runner import TickContext, TickResult
from tickloop.operator.schemas import ReviewOut, check_review, review_schema
from tickloop.operator.ticks._ask import ask

REFUSAL = "slow tick will not review on trajectory alone: there is no active goal model"
PROGRESS_WINDOW = timedelta(days=3)
_CLOSED = frozenset({TaskStatus.BLOCKED, TaskStatus.DONE})


def run(ctx: TickContext) -> TickResult:
    goal = ctx.store.active_goal_model(ctx.profile)
    if goal is None:
        return TickResult(Outcome.REFUSED, detail="no active goal model", error=REFUSAL)
    flipped = reconcile(ctx, goal)
    tasks = {t.id: t for t in ctx.store.list_tasks(ctx.profile)}
    open_ids = [t.id for t in tasks.values() if t.status not in _CLOSED]
    packet = _packet(ctx, goal, list(tasks.values()))
    asked = ask(ctx, "slow", packet, ReviewOut, schema=review_schema(open_ids))
    if asked.value is None:
        return TickResult(Outcome.FAILED, detail=flipped, error=asked.error, extra=asked.extra)
    try:
        review = check_review(asked.value, open_ids)
    except ValidationError as exc:
        error = f"invalid model output (nothing was guessed): {exc.message}"
        return TickResult(Outcome.FAILED, detail=flipped, error=error, extra=asked.extra)
    steps = [NewPlanStep(s.title, s.task_id) for s in review.plan]
    open_tasks = len(open_ids)
    if open_tasks and not steps:
        error = (
            f"the review wrote no plan for {open_tasks} open task{'s' if open_tasks != 1 else ''};"
            " nothing was applied"
        )
        return TickResult(Outcome.FAILED, detail=flipped, error=error, extra=asked.extra)
    changed = _reprioritise(ctx, tasks, review)
    ctx.store.replace_plan(ctx.profile, goal.version, steps, now=ctx.clock.now())
    offered = _offer(ctx, "slow.drift", "Drifting from the goal", review.drift)
    offered += _offer(ctx, "slow.behind", "Falling behind", review.behind)
    detail = (
        f"{flipped} reprioritised={changed} plan_steps={len(steps)}"
        f" drift={len(review.drift)} behind={len(review.behind)} notice_candidates={offered}"
    )
    return TickResult(Outcome.DONE, detail=detail, extra=asked.extra)


def reconcile(ctx: TickContext, goal: GoalModel) -> str:
    """Flip pending steps whose task is blocked to blocked, and those whose task is done to done."""
    status = {t.id: t.status for t in ctx.store.list_tasks(ctx.profile)}
    target = {TaskStatus.BLOCKED: StepStatus.BLOCKED, TaskStatus.DONE: StepStatus.DONE}
    counts = {StepStatus.BLOCKED: 0, StepStatus.DONE: 0}
    for step in ctx.store.list_plan(ctx.profile, goal.version):
        task_status = status.get(step.task_id) if step.task_id is not None else None
        if step.status is StepStatus.PENDING and task_status in target:
            new = target[task_status]
            ctx.store.set_step_status(ctx.profile, step.id, new, now=ctx.clock.now())
            counts[new] += 1
    return f"steps_blocked={counts[StepStatus.BLOCKED]} steps_done={counts[StepStatus.DONE]}"


def _packet(ctx: TickContext, goal: GoalModel, tasks: list[Task]) -> ContextPacket:
    now = ctx.clock.now()
    progress = [
        r for r in ctx.store.recent_progress(ctx.profile, limit=60) if r.ended_at >= now - PROGRESS_WINDOW
    ]
    observations = ctx.store.list_observations(ctx.profile, since=now - timedelta(days=1), limit=40)
    state = ctx.store.latest_state_of_play(ctx.profile)
    return ContextPacket(
        goal={"version": goal.version, "title": goal.title, "body": goal.body},
        tick="slow",
        state_of_play=None if state is None else state.text,
        board=[
            {"id": t.id, "title": t.title, "priority": t.priority, "status": str(t.status)} for t in tasks
        ],
        recent_progress=[
            {"kind": r.tick_kind, "outcome": str(r.outcome), "at": r.ended_at.isoformat(), "error": r.error}
            for r in reversed(progress)
        ],
        observations=[
            {"source": o.source, "tainted": o.tainted, "payload": o.payload} for o in reversed(observations)
        ],
    )


def _reprioritise(ctx: TickContext, tasks: dict[int, Task], review: ReviewOut) -> int:
    changed = 0
    for item in review.priorities:
        task = tasks[item.task_id]  # check_review: an open task of the board
        if task.priority != item.priority:
            ctx.store.set_task_priority(ctx.profile, task.id, item.priority, now=ctx.clock.now())
            changed += 1
    return changed


def _offer(ctx: TickContext, topic: str, heading: str, items: list[str]) -> int:
    if not items:
        return 0
    text = f"{heading}: " + "; ".join(items)
    candidates.offer(ctx.store, ctx.profile, candidates.Candidate(topic, text), now=ctx.clock.now())
    return 1
