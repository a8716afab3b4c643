"""The fast tick (the doer): re-ground, advance one step, ask for ONE intent, drift guard, gate.

1. Re-ground: the active goal model is read afresh (none: ``refused``, "will not act on trajectory
   alone", and no model call), then a fresh, size-bounded context packet: the latest state of play,
   the current plan step, recent progress, new observations with their taint, the tried-and-failed
   keys and the goal's last three critiques ("do not repeat these").
2. Wait, or advance one step. While any intent a fast tick staged for the active goal waits at
   ``requires_approval`` (a gate stop), every later fast tick is a ``noop`` "waiting for the person",
   with or without a plan step, and asks no model: one gate stop is one intent and one notice
   candidate, however many ticks pass before the person decides. Otherwise the first pending plan
   step is the current one; with no plan the model derives one action and the row says
   ``replan_needed=true``.
3. One action intent: the model writes one member of ``ActionAnswer`` (``oneOf`` keyed on
   ``actionType``: a registered handler type, or ``none``; each type with only its own fields),
   flattened into ``ActionIntentOut``; anything else is a ``failed`` row and no intent (fail
   closed). ``none`` is the model saying there is nothing to do now: a ``noop`` row with its
   rationale, nothing staged.
4. Drift guard: an exact-ish repeat of a tried-and-failed action is recorded as a blocked intent
   (outcome ``blocked``) and never executed, unless the kernel sanctioned a recovery retry
   (``options["sanctioned_retry"]``).
5. Gate: the handler's tier, the taint of the packet and ``[gate]`` give the stamp. Allowed: the
   intent goes to ``ready`` and the step is marked done (outcome ``staged``). Otherwise the tick stops
   (``gate_stop``) and offers the person a notice candidate (``tickloop.operator.candidates``).

``after`` writes the self-critique of a failed, blocked or gate-stopped tick: none when the model
call got no answer at all, and within what is left of the tick's model budget (1.5 x ``timeoutS``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from tickloop.config import section
from tickloop.errors import ValidationError
from tickloop.operator import candidates, drift, gate, staging
from tickloop.operator.context import ContextPacket
from tickloop.operator.domain import (
    GoalModel,
    Intent,
    IntentStatus,
    Outcome,
    PlanStep,
    StepStatus,
    Verdict,
)
from tickloop.operator.runner import TickContext, TickResult
from tickloop.operator.schemas import (
    NOTHING_TO_DO,
    ActionAnswer,
    ActionIntentOut,
    CritiqueOut,
    action_schema,
    check_critique,
    check_intent,
    to_intent,
)
from tickloop.operator.ticks._ask import MODEL_FAILED, ask

REFUSAL = "fast tick will not act on trajectory alone: there is no active goal model"
#: How far back the drift guard looks for tried-and-failed actions.
TRIED_WINDOW = timedelta(days=7)
#: With no earlier fast tick, observations this recent count as new.
NEW_WINDOW = timedelta(days=1)
#: The row's detail while a gate stop of the active goal waits for the person.
WAITING = "waiting for the person's decision"
CRITIQUE_PREFACE = "Critiques of earlier ticks for this goal are in the packet: do not repeat these."
_STOP_OUTCOMES = frozenset({Outcome.FAILED, Outcome.GATE_STOP, Outcome.BLOCKED})
#: A fast tick waits on its model for at most this many times the endpoint's ``timeoutS`` in all.
TICK_BUDGET_FACTOR = 1.5
_ANSWER: Any = ActionAnswer  # a union of Structs: decoded by its ``actionType`` tag


def run(ctx: TickContext) -> TickResult:
    goal = ctx.store.active_goal_model(ctx.profile)
    if goal is None:
        return TickResult(Outcome.REFUSED, detail="no active goal model", error=REFUSAL)
    step = ctx.store.current_plan_step(ctx.profile, goal.version)
    step, waiting = settle_step(ctx, goal, step)
    if waiting is not None:
        return TickResult(Outcome.NOOP, detail=f"{WAITING} on intent {waiting}")
    packet, tried, tainted = build_packet(ctx, goal, step)
    preface = CRITIQUE_PREFACE if packet.critiques else ""
    asked = ask(ctx, "fast", packet, _ANSWER, preface, schema=action_schema())
    notes = _notes(step)
    if asked.value is None:
        return TickResult(Outcome.FAILED, detail=notes, error=asked.error, extra=asked.extra)
    try:
        out = check_intent(to_intent(asked.value))
    except ValidationError as exc:
        error = f"invalid model output (nothing was guessed): {exc.message}"
        return TickResult(Outcome.FAILED, detail=notes, error=error, extra=asked.extra)
    if out.action_type == NOTHING_TO_DO:
        said = f": {out.rationale or out.title}".rstrip(": ")
        return TickResult(Outcome.NOOP, detail=f"{notes} nothing to do now{said}", extra=asked.extra)
    fed = [o["id"] for o in packet.observations]  # recorded with the intent: the dashboard's "Fed by"
    result = _decide_or_refuse(
        ctx, out, step, tried=tried, tainted=tainted, goal_version=goal.version, fed_by=fed
    )
    detail = f"{notes} {result.detail}".strip()
    return TickResult(result.outcome, detail, result.error, result.intent_id, asked.extra)


#: What the newest intent of a step says about the step: the person approved it (or the executor
#: already took it) -> done; denied -> skipped. Any other status leaves the step to be worked on.
_STEP_AFTER = {
    IntentStatus.APPROVED: StepStatus.DONE,
    IntentStatus.CLAIMED: StepStatus.DONE,
    IntentStatus.SENDING: StepStatus.DONE,
    IntentStatus.SENT: StepStatus.DONE,
    IntentStatus.COMPLETED: StepStatus.DONE,
    IntentStatus.DENIED: StepStatus.SKIPPED,
}
#: How many of the newest intents are searched for a step's own. While a step waits, the fast tick
#: stages nothing else, so a step's intent is among the newest unless a person stages hundreds by hand.
_RECENT_INTENTS = 200


def settle_step(
    ctx: TickContext, goal: GoalModel, step: PlanStep | None
) -> tuple[PlanStep | None, int | None]:
    """Wait while the person decides: return the id of an intent that waits at ``requires_approval``.

    A gate-stopped step is never proposed again: once its newest intent is decided, the step is done
    (approved) or skipped (denied) and the next pending step is current. Beyond the steps, any open
    gate stop of this goal's fast ticks (a step's or, with no plan, one derived from the goal) holds
    every later fast tick until the person decides it."""
    store, profile, now = ctx.store, ctx.profile, ctx.clock.now()
    recent = store.list_intents(profile, limit=_RECENT_INTENTS)  # newest first; one read per tick
    while step is not None:
        # The step's most recently changed intent says where it stands: a person's retry of its
        # failed intent is newer than the drift guard's blocked repeats of it.
        mine = (i for i in recent if i.payload.get("step_id") == step.id)
        newest = max(mine, key=lambda i: (i.updated_at, i.id), default=None)
        if newest is not None and newest.status is IntentStatus.REQUIRES_APPROVAL:
            return step, newest.id
        settled = None if newest is None else _STEP_AFTER.get(newest.status)
        if settled is None:
            break
        store.set_step_status(profile, step.id, settled, now=now)
        step = store.current_plan_step(profile, goal.version)
    steps = {s.id for s in store.list_plan(profile, goal.version)}
    open_stop = next((i for i in recent if _holds(i, goal, steps)), None)
    return step, None if open_stop is None else open_stop.id


def _holds(intent: Intent, goal: GoalModel, steps: set[int]) -> bool:
    """A gate stop of this goal's fast ticks that still waits for the person."""
    if intent.status is not IntentStatus.REQUIRES_APPROVAL or intent.origin.tick_kind != staging.ORIGIN_FAST:
        return False
    version, step_id = intent.payload.get("goal_version"), intent.payload.get("step_id")
    return version == goal.version or (version is None and step_id in steps)


def build_packet(
    ctx: TickContext, goal: GoalModel, step: PlanStep | None
) -> tuple[ContextPacket, list[str], bool]:
    """The packet, the tried-and-failed keys, and whether any tainted observation is in it."""
    store, profile, now = ctx.store, ctx.profile, ctx.clock.now()
    progress = store.recent_progress(profile, limit=10)
    observations = store.list_observations(profile, since=_new_since(ctx, now), limit=40)
    failed = store.failed_actions(profile, since=now - TRIED_WINDOW, limit=40)
    tried = [drift.normalise(i.action_type, i.title, i.recipient) for i in failed]
    critiques = store.recent_critiques(profile, goal.version, limit=3)
    state = store.latest_state_of_play(profile)
    packet = ContextPacket(
        goal={"version": goal.version, "title": goal.title, "body": goal.body},
        tick="fast",
        current_step=None if step is None else {"id": step.id, "title": step.title, "task_id": step.task_id},
        replan_needed=step is None,
        state_of_play=None if state is None else state.text,
        board=[
            {"id": t.id, "title": t.title, "priority": t.priority, "status": str(t.status)}
            for t in store.list_tasks(profile)[:60]
        ],
        # Oldest first: the packet keeps the newest (last) entries when it must trim.
        recent_progress=[_progress(r) for r in reversed(progress)],
        observations=[
            {
                "id": o.id,
                "source": o.source,
                "tainted": o.tainted,
                "at": o.observed_at.isoformat(),
                "payload": o.payload,
            }
            for o in reversed(observations)
        ],
        tried_and_failed=list(reversed(tried)),
        critiques=[
            {"critique": c.text, "failure_type": c.failure_type, "note": "do not repeat these"}
            for c in reversed(critiques)
        ],
    )
    # Conservative: any tainted observation offered to the packet taints the action, even one
    # the size budget later trims away.
    return packet, tried, any(o.tainted for o in observations)


def decide(
    ctx: TickContext,
    out: ActionIntentOut,
    step: PlanStep | None,
    *,
    tried: list[str],
    tainted: bool,
    goal_version: int | None = None,
    fed_by: list[int] | None = None,
) -> TickResult:
    """Drift guard, then the gate, through the one staging path; the intent is recorded on every path."""
    store, profile, now = ctx.store, ctx.profile, ctx.clock.now()
    draft = staging.Draft(
        action_type=out.action_type,
        title=out.title,
        recipient=out.recipient,
        payload=_payload(out, step, goal_version, fed_by or []),
        origin=staging.ORIGIN_FAST,
        tainted=tainted,
    )
    settings = section(ctx.settings, "gate", gate.GateSettings)
    key = drift.normalise(out.action_type, out.title, out.recipient)
    sanctioned = bool(ctx.options.get("sanctioned_retry", False))
    retry = _sanctioned_retry(ctx, key) if key in tried else None
    if drift.is_repeat(key, tried, sanctioned_retry=sanctioned or retry is not None):
        blocked = (Verdict.BLOCKED, [f"drift.repeat: {key!r} already failed"])
        made = staging.stage(store, profile, draft, settings, now=now, preset=blocked).intent
        return TickResult(Outcome.BLOCKED, detail=f"drift guard: repeat of {key!r}", intent_id=made.id)
    made, stamp = staging.stage(store, profile, draft, settings, now=now)
    exempt = "" if retry is None else f" drift.sanctioned_retry: decision {retry}"
    if stamp.verdict is Verdict.ALLOWED:
        if step is not None:
            store.set_step_status(profile, step.id, StepStatus.DONE, now=now)
        detail = f"intent={made.id} {out.action_type}{exempt}"
        return TickResult(Outcome.STAGED, detail=detail, intent_id=made.id)
    text = f"{out.action_type} {out.title!r}: {stamp.verdict}; " + "; ".join(stamp.reasons)
    notice = candidates.offer(store, profile, candidates.Candidate("fast.gate_stop", text, made.id), now=now)
    return TickResult(
        Outcome.GATE_STOP,
        detail=f"intent={made.id} {stamp.verdict} notice_candidate={notice.id}{exempt}",
        error="; ".join(stamp.reasons),
        intent_id=made.id,
    )


def _sanctioned_retry(ctx: TickContext, key: str) -> int | None:
    """The decision id of a person's retry of a failed action with this key: the kernel-sanctioned
    recovery retry the drift guard exempts (None: no such retry in the guard's window)."""
    since = ctx.clock.now() - TRIED_WINDOW
    for intent, decision_id in ctx.store.sanctioned_retries(ctx.profile, since=since):
        if drift.normalise(intent.action_type, intent.title, intent.recipient) == key:
            return decision_id
    return None


def _decide_or_refuse(
    ctx: TickContext,
    out: ActionIntentOut,
    step: PlanStep | None,
    *,
    tried: list[str],
    tainted: bool,
    goal_version: int,
    fed_by: list[int],
) -> TickResult:
    try:
        return decide(ctx, out, step, tried=tried, tainted=tainted, goal_version=goal_version, fed_by=fed_by)
    except ValidationError as exc:  # the one staging path refused it: nothing was stored
        return TickResult(
            Outcome.FAILED, detail="", error=f"refused at staging (nothing was staged): {exc.message}"
        )


def after(ctx: TickContext, result: TickResult) -> None:
    """After a failed, blocked or gate-stopped tick: ONE self-critique for the active goal.

    The outcome label is already on the row; the model is shown it and asked only what to do
    differently. An invalid answer stores nothing. The store keeps the newest three per goal.

    No critique when the action call got no answer at all (a dead server, a timeout, an HTTP error):
    there is no choice of the model's to critique, and a second call would only wait as long again.
    The whole tick waits on its model for at most ``TICK_BUDGET_FACTOR`` x the endpoint's
    ``timeoutS``: the critique gets what is left of that, never a full ``timeoutS`` of its own."""
    if result.outcome not in _STOP_OUTCOMES or ctx.options.get("critique") is False:
        return  # ``critique=False``: ``tickloop operator eval`` scores the action call alone
    if result.error.startswith(MODEL_FAILED):
        ctx.log("fast: no self-critique: the model call failed, so there is no answer to critique")
        return
    budget = _critique_budget(ctx)
    if budget is not None and budget <= 0:
        ctx.log(f"fast: no self-critique: the tick's model budget ({_budget_text(ctx)}) is spent")
        return
    goal = ctx.store.active_goal_model(ctx.profile)
    if goal is None:
        return
    step = ctx.store.current_plan_step(ctx.profile, goal.version)
    packet = ContextPacket(
        goal={"version": goal.version, "title": goal.title, "body": goal.body},
        tick="critique",
        current_step=None if step is None else {"id": step.id, "title": step.title},
        recent_progress=[{"outcome": str(result.outcome), "detail": result.detail, "error": result.error}],
        outcome=str(result.outcome),
    )
    asked = ask(ctx, "critique", packet, CritiqueOut, budget_s=budget)
    if asked.value is None:
        ctx.log(f"fast: no self-critique stored: {asked.error}")
        return
    try:
        critique = check_critique(asked.value)
    except Exception as exc:  # noqa: BLE001  (a ValidationError: too many sentences; store nothing)
        ctx.log(f"fast: no self-critique stored: {exc}")
        return
    ctx.store.add_critique(
        ctx.profile,
        goal.version,
        critique.critique,
        failure_type=critique.failure_type,
        now=ctx.clock.now(),
        keep=3,
    )


def _critique_budget(ctx: TickContext) -> float | None:
    """Seconds the critique may still wait: the tick's budget less what the action call took."""
    timeout = getattr(ctx.model(), "timeout_s", None)
    if not isinstance(timeout, int | float):
        return None  # the offline model answers at once
    return TICK_BUDGET_FACTOR * timeout - ctx.model_seconds


def _budget_text(ctx: TickContext) -> str:
    timeout = getattr(ctx.model(), "timeout_s", 0)
    return f"{TICK_BUDGET_FACTOR:g} x timeoutS = {TICK_BUDGET_FACTOR * timeout:g} s"


def _payload(
    out: ActionIntentOut, step: PlanStep | None, goal_version: int | None, fed_by: list[int]
) -> dict[str, Any]:
    payload: dict[str, Any] = {"body": out.body, "rationale": out.rationale}
    if fed_by:
        payload["fed_by"] = fed_by[-20:]  # the newest observations in the packet, oldest first
    if goal_version is not None:
        payload["goal_version"] = goal_version
    if out.amount is not None:
        payload["amount"] = out.amount
    if out.vendor:
        payload["vendor"] = out.vendor
    if step is not None:
        payload["step_id"] = step.id
    return payload


def _new_since(ctx: TickContext, now: datetime) -> datetime:
    """Observations are new since the previous fast tick began (or within a day, if none ran)."""
    last = ctx.store.recent_progress(ctx.profile, limit=1, tick_kind="fast")
    return last[0].started_at if last else now - NEW_WINDOW


def _progress(row: Any) -> dict[str, Any]:
    return {
        "kind": row.tick_kind,
        "outcome": str(row.outcome),
        "at": row.ended_at.isoformat(),
        "error": row.error,
    }


def _notes(step: PlanStep | None) -> str:
    return "replan_needed=true" if step is None else f"step={step.id}"
