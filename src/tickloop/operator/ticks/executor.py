"""The executor tick: the only process that acts, and only through the enumerated handlers.

One pass (seed 002, §6.7, §6.8, Figure 8):

1. The reaper routes claims stuck in ``sending`` past ``reapAfterS`` to ``needs_human``. A dead
   claimer leaves the outcome unknown, so they are never retried; a fresh claim is a live tick.
2. Ready and approved intents of the window (today and yesterday, profile-local; ``--day`` picks
   one day) are claimed by compare-and-set, a batch at a time; a concurrent executor gets others.
3. Each claim is re-checked: still executable (verdict consistent with the prior status, and an
   approved intent has a linked ``approve`` decision), then the **tier floor**: an external or spend
   handler fires only if the prior status was ``approved`` with a valid linked decision, whatever
   the gate said. A refusal is logged, audited in the notification log and released.
4. The handler runs inside the side-effect zone (``sending``), entered by a commit before it starts;
   its ending is committed after it returns. ``HandlerError`` (refused before anything happened)
   ends ``failed``; any other exception ends ``needs_human``, never retried. One intent's ending and
   the next one's ``sending`` share one commit (``Store.finish_and_send``): one commit per intent,
   and never more than one intent of this process in ``sending``.

Dry-run is on unless ``TICKLOOP_DRY_RUN`` is exactly ``0``; ``--dry-run`` forces it. Dry, the whole
pipeline runs and the handlers return the call they WOULD make.

Settings (``[executor]``)::

    [executor]
    reapAfterS = 900      # a claim in `sending` longer than this is routed to needs_human
    batch = 10            # intents claimed per compare-and-set
    windowDays = 2        # today and yesterday (profile-local)
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any
from zoneinfo import ZoneInfo

import msgspec

from tickloop.config import secret, section
from tickloop.errors import ConflictError, HandlerError, NotFoundError
from tickloop.notify import NotifySettings, SmtpSettings, build_channels
from tickloop.operator.domain import Decision, DecisionKind, Intent, IntentStatus, Outcome, Tier, Verdict
from tickloop.operator.handlers import (
    HandlerContext,
    HandlerRequest,
    HandlerResult,
    HandlerSettings,
    HandlerSpec,
    HandlerStatus,
    dry_run_from_env,
    handler_for,
)
from tickloop.operator.runner import TickContext, TickResult
from tickloop.operator.store.base import Ending

#: the WOULD line sits under the text of the line above it (after ``[timestamp] ``).
WOULD_INDENT = " " * 29
#: Decisions that let an external or spend handler fire: an approval, or a person's retry of it.
SANCTIONING = frozenset({DecisionKind.APPROVE, DecisionKind.RETRY})
STATUS_OF = {
    HandlerStatus.SENT: IntentStatus.SENT,
    HandlerStatus.COMPLETED: IntentStatus.COMPLETED,
    HandlerStatus.FAILED: IntentStatus.FAILED,
}


class ExecutorSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """The ``[executor]`` section."""

    #: seconds a claim may stay in ``sending`` before the reaper routes it to needs_human
    reap_after_s: Annotated[float, msgspec.Meta(ge=0, le=7 * 86400)] = 900.0
    #: intents claimed per compare-and-set
    batch: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 10
    #: profile-local days considered, ending today (2: today and yesterday)
    window_days: Annotated[int, msgspec.Meta(ge=1, le=31)] = 2


class Tally(msgspec.Struct):
    """The pass's counts, for the summary line and the progress row."""

    considered: int = 0
    executed: int = 0
    skipped: int = 0
    failed: int = 0
    handoff: int = 0
    reaped: int = 0
    #: claims given back at the end of the pass (refused, unknown type, outside the window)
    held: list[Intent] = msgspec.field(default_factory=list)

    def summary(self, dry: bool) -> str:  # noqa: FBT001
        return (
            f"considered={self.considered} executed={self.executed} skipped={self.skipped} "
            f"failed={self.failed} handoff={self.handoff} dry={_flag(dry)}"
        )


def run(ctx: TickContext) -> TickResult:
    """One executor pass; the row is ``done`` if anything executed, else ``noop``."""
    settings = section(ctx.settings, "executor", ExecutorSettings)
    dry = bool(ctx.options.get("dry_run")) or dry_run_from_env(ctx.env)
    handlers = handler_context(ctx)  # configuration errors fail the tick before anything is claimed
    tally = execute_pass(ctx, settings, handlers, dry=dry)
    outcome = Outcome.DONE if tally.executed else Outcome.NOOP
    return TickResult(outcome, detail=f"{tally.summary(dry)} reaped={tally.reaped}")


def execute_pass(
    ctx: TickContext, settings: ExecutorSettings, handlers: HandlerContext, *, dry: bool
) -> Tally:
    """Reap, then claim and dispatch until the window is empty; log the summary line."""
    tally = Tally()
    since, until = window(ctx, settings)
    if dry:  # a preview: reads, logs what a real run WOULD do, changes no intent's status
        from tickloop.operator.ticks.preview import preview_pass  # noqa: PLC0415  (it reuses the re-checks)

        preview_pass(ctx, settings, handlers, since, until, tally=tally)
        ctx.log(f"tick done: {tally.summary(dry)}")
        return tally
    reap(ctx, settings, tally)
    try:
        _claim_all(ctx, settings, handlers, since, until, dry=dry, tally=tally)
    finally:
        # Refused and unknown intents stay claimed until the pass ends, so it never re-claims them.
        for intent in tally.held:
            _release(ctx, intent)
    ctx.log(f"tick done: {tally.summary(dry)}")
    return tally


def reap(ctx: TickContext, settings: ExecutorSettings, tally: Tally) -> None:
    """Route claims stuck in ``sending`` to needs_human, one log line each."""
    now = ctx.clock.now()
    cutoff = now - timedelta(seconds=settings.reap_after_s)
    for intent_id in ctx.store.reap_stuck(cutoff=cutoff, now=now, profile=ctx.profile):
        tally.reaped += 1
        kind = ctx.store.get_intent(ctx.profile, intent_id).action_type
        ctx.log(f"REAPED stuck 'sending' intent {intent_id} ({kind}) -> needs_human")
    # A claimer killed before `sending` left no side effect: its intents go back for the next pass.
    for intent_id in ctx.store.release_stale_claims(ctx.profile, cutoff=cutoff, now=now):
        back = ctx.store.get_intent(ctx.profile, intent_id)
        ctx.log(f"RELEASED stale claim on intent {intent_id} ({back.action_type}) -> {back.status}")


def window(ctx: TickContext, settings: ExecutorSettings) -> tuple[datetime, datetime | None]:
    """``(since, until)`` in UTC: the profile-local days considered; ``until`` None means open."""
    zone = ctx.store.get_profile(ctx.profile).zone()
    day = ctx.options.get("day")
    if isinstance(day, date):
        return _midnight(day, zone), _midnight(day + timedelta(days=1), zone)
    today = ctx.clock.now().astimezone(zone).date()
    return _midnight(today - timedelta(days=settings.window_days - 1), zone), None


def _midnight(day: date, zone: ZoneInfo) -> datetime:
    return datetime.combine(day, time(), zone).astimezone(UTC)


def handler_context(ctx: TickContext) -> HandlerContext:
    """Handler settings, SMTP, notify channels, memory search and secrets, from config and the store."""

    def lookup(name: str) -> str | None:
        return secret(name, ctx.settings, ctx.env)

    def search(query: str) -> list[str]:
        return [note.text for note in ctx.store.search_notes(ctx.profile, query)]

    smtp = section(ctx.settings, "smtp", SmtpSettings)
    notify = section(ctx.settings, "notify", NotifySettings)
    return HandlerContext(
        settings=section(ctx.settings, "handlers", HandlerSettings),
        smtp=smtp,
        channels=build_channels(notify, smtp=smtp, secret=lookup, clock=ctx.clock),
        search=search,
        secret=lookup,
        environ=lambda: ctx.env,
    )


def _claim_all(
    ctx: TickContext,
    settings: ExecutorSettings,
    handlers: HandlerContext,
    since: datetime,
    until: datetime | None,
    *,
    dry: bool,
    tally: Tally,
) -> None:
    while batch := ctx.store.claim_intents(
        ctx.profile, owner=ctx.owner, now=ctx.clock.now(), limit=settings.batch, since=since
    ):
        late = [intent for intent in batch if until is not None and intent.created_at >= until]
        tally.held += late
        claims = [recheck(ctx, intent) for intent in batch if until is None or intent.created_at < until]
        _run(ctx, handlers, claims, dry=dry, tally=tally)
        if late:  # claims come oldest first: the rest of the queue is past the chosen day
            return


class Claim(msgspec.Struct, frozen=True):
    """A claimed intent as re-checked at claim time: its handler and whether it may run."""

    intent: Intent
    #: None: no handler for the action type
    spec: HandlerSpec | None
    #: why it is no longer executable ("": it is)
    problem: str = ""
    #: the tier floor lets its handler fire
    floor: bool = False
    #: the id of the person's retry decision, when this claim is a kernel-sanctioned recovery retry
    retry: int | None = None

    @property
    def runs(self) -> bool:
        return self.spec is not None and not self.problem and self.floor


class _Done(msgspec.Struct, frozen=True):
    """A handler's outcome: written with the next intent's ``sending``, then ``line`` is logged."""

    ending: Ending
    line: str


def recheck(ctx: TickContext, intent: Intent) -> Claim:
    """Claim-time check of a fresh claim (its row as the claim returned it, and its decision)."""
    spec = handler_for(intent.action_type)
    if spec is None:
        return Claim(intent, None)
    decision = _decision(ctx, intent)
    problem = not_executable(intent, decision)
    retry = decision.id if decision is not None and decision.kind is DecisionKind.RETRY else None
    return Claim(intent, spec, problem, tier_floor_passes(spec.tier, intent, decision), retry)


def _run(ctx: TickContext, handlers: HandlerContext, claims: list[Claim], *, dry: bool, tally: Tally) -> None:
    """Each claim in turn. A handler's ending is committed together with the next intent's
    ``sending`` (one commit per intent, not two); anything else writes it first, so the log keeps
    its order and no ending waits on another intent's store calls."""
    done: _Done | None = None
    for claim in claims:
        tally.considered += 1
        if claim.runs:
            done = _dispatch(ctx, handlers, claim, done, dry=dry, tally=tally)
            continue
        _hand_over(ctx, done, None, tally)
        done = None
        _decline(ctx, claim, tally)
    _hand_over(ctx, done, None, tally)


def _decline(ctx: TickContext, claim: Claim, tally: Tally) -> None:
    intent = claim.intent
    if claim.spec is None:
        # Once, with a reason: an approval the machine cannot carry out is the person's to reconcile.
        reason = no_executor(intent)
        _finish(ctx, intent, IntentStatus.NEEDS_HUMAN, {"reason": reason}, tally=tally)
        ctx.log(f"{reason}; intent {intent.id} -> needs_human")
        tally.skipped += 1
    elif claim.problem:
        _finish(ctx, intent, IntentStatus.FAILED, {"refused": claim.problem}, tally=tally)
        ctx.log(f"REFUSED intent {intent.id} ({intent.action_type}): not executable: {claim.problem}")
        tally.failed += 1
    else:
        refuse_by_floor(ctx, intent, claim.spec.tier)
        tally.skipped += 1
        tally.held.append(intent)


def no_executor(intent: Intent) -> str:
    """Why an intent of an unregistered type cannot be carried out."""
    return f"no executor for action_type={intent.action_type!r} (intent {intent.id})"


def _decision(ctx: TickContext, intent: Intent) -> Decision | None:
    if intent.decision_id is None:
        return None
    try:
        return ctx.store.get_decision(ctx.profile, intent.decision_id)
    except NotFoundError:
        return None


def not_executable(intent: Intent, decision: Decision | None) -> str:
    """Why the kernel predicate no longer holds for a claim (empty: it does), re-checked at claim time."""
    prior = intent.claim_prior
    if prior is IntentStatus.READY and intent.verdict is not Verdict.ALLOWED:
        return f"ready but the gate's verdict is {intent.verdict}"
    if prior is IntentStatus.APPROVED:
        if intent.verdict is not Verdict.REQUIRES_APPROVAL:
            return f"approved but the gate's verdict is {intent.verdict}"
        if not _valid_approval(intent, decision):
            return "approved without a linked approve decision"
    if prior not in (IntentStatus.READY, IntentStatus.APPROVED):
        return f"claimed from {prior}, which is not executable"
    return ""


def _valid_approval(intent: Intent, decision: Decision | None) -> bool:
    return (
        decision is not None
        and decision.kind in SANCTIONING
        and decision.intent_id == intent.id
        and decision.profile == intent.profile
        and intent.decision_id == decision.id
    )


def tier_floor_passes(tier: Tier, intent: Intent, decision: Decision | None) -> bool:
    """The floor, independent of the gate: an external or spend handler needs the claim's prior
    status to be ``approved`` with a valid approve decision linked; a reversible one needs neither."""
    if tier is Tier.REVERSIBLE:
        return True
    return intent.claim_prior is IntentStatus.APPROVED and _valid_approval(intent, decision)


def refuse_by_floor(ctx: TickContext, intent: Intent, tier: Tier) -> None:
    pre = intent.claim_prior.value if intent.claim_prior else "unknown"
    line = (
        f"REFUSED {tier.value} intent {intent.id} ({intent.action_type}): not approved+linked "
        f"(pre={pre}); left pending"
    )
    ctx.log(line)
    ctx.store.log_notification(
        ctx.profile,
        channel="executor",
        kind="tier_floor_refused",
        subject=line,
        now=ctx.clock.now(),
        intent_id=intent.id,
    )


def _dispatch(
    ctx: TickContext,
    handlers: HandlerContext,
    claim: Claim,
    done: _Done | None,
    *,
    dry: bool,
    tally: Tally,
) -> _Done | None:
    """Enter ``sending`` (ending ``done`` in the same commit), run the handler; its outcome, unwritten."""
    intent, spec = claim.intent, claim.spec
    assert spec is not None  # a claim that runs has a handler
    sending = _hand_over(ctx, done, intent, tally)
    ctx.log(
        f"dispatch intent {intent.id} action_type={intent.action_type!r} tier={spec.tier.value!r} "
        f"dry={_flag(dry)}"
    )
    if not sending:
        ctx.log(f"intent {intent.id}: claim lost before sending; skipped")
        tally.skipped += 1
        return None
    if claim.retry is not None:
        ctx.log(f"intent {intent.id}: kernel-sanctioned recovery retry (decision {claim.retry})")
    request = request_for(intent, ctx.clock.now(), dry=dry)
    tier = spec.tier.value
    # The side-effect zone: from here on any surprise leaves the outcome unknown.
    try:
        result = spec.handler(request, handlers)
    except HandlerError as exc:
        line = f"intent {intent.id} -> failed ({tier}): {exc.message}"
        return _Done(Ending(intent.id, IntentStatus.FAILED, {"refused": exc.message}), line)
    except Exception as exc:  # noqa: BLE001  (unknown outcome: a person reconciles it, never a retry)
        error = f"{type(exc).__name__}: {exc}"
        line = f"intent {intent.id} -> needs_human ({tier}): {error[:300]}"
        return _Done(Ending(intent.id, IntentStatus.NEEDS_HUMAN, {"error": error[:2000]}), line)
    ctx.log(call_line(intent, result))
    status = STATUS_OF[result.status]
    suffix = ", dry-run" if result.dry_run else ""
    line = f"intent {intent.id} -> {status.value} ({tier}{suffix})"
    return _Done(Ending(intent.id, status, plain_result(result), result.handoff), line)


def request_for(intent: Intent, now: datetime, *, dry: bool) -> HandlerRequest:
    """The handler's view of ``intent``."""
    return HandlerRequest(
        intent_id=intent.id,
        action_type=intent.action_type,
        title=intent.title,
        now=now,
        recipient=intent.recipient or None,
        payload=intent.payload,
        dry_run=dry,
    )


def _hand_over(ctx: TickContext, done: _Done | None, send: Intent | None, tally: Tally) -> bool:
    """Commit ``done``'s ending and ``send``'s ``sending`` at once, then log the ending; True if
    ``send`` is now in the side-effect zone."""
    if done is None and send is None:
        return False
    ended, sending = ctx.store.finish_and_send(
        ctx.profile,
        ending=None if done is None else done.ending,
        send=None if send is None else send.id,
        owner=ctx.owner,
        now=ctx.clock.now(),
    )
    if done is not None:
        if not ended:
            ctx.log(f"intent {done.ending.intent_id}: no longer ours to finish (reaped?); skipped")
            tally.skipped += 1
        elif done.ending.status in (IntentStatus.FAILED, IntentStatus.NEEDS_HUMAN):
            ctx.log(done.line)
            tally.failed += 1
        else:
            ctx.log(done.line)
            tally.executed += 1
            tally.handoff += done.ending.handoff
    return sending


def call_line(intent: Intent, done: HandlerResult) -> str:
    prefix = "DRY-RUN " if done.dry_run else ""
    head = f"{prefix}{intent.action_type}->{done.call}"
    if done.handoff:
        return f"{head}: {done.description}"
    return f"{head} {done.target}:\n{WOULD_INDENT}{done.description}"


def plain_result(done: HandlerResult) -> dict[str, Any]:
    return {
        "call": done.call,
        "target": done.target,
        "description": done.description,
        "dry_run": done.dry_run,
        "details": dict(done.details),
    }


def _finish(
    ctx: TickContext, intent: Intent, status: IntentStatus, result: dict[str, Any], *, tally: Tally
) -> None:
    """End a claim that never entered ``sending``; skipped if another process got there first."""
    try:
        ctx.store.finish_intent(
            ctx.profile, intent.id, status, owner=ctx.owner, now=ctx.clock.now(), result=result
        )
    except ConflictError:
        ctx.log(f"intent {intent.id}: no longer ours to finish (reaped?); skipped")
        tally.skipped += 1


def _release(ctx: TickContext, intent: Intent) -> None:
    try:
        ctx.store.release_claim(ctx.profile, intent.id, owner=ctx.owner, now=ctx.clock.now())
    except ConflictError:
        ctx.log(f"intent {intent.id}: claim was already gone when releasing it")


def _flag(value: bool) -> str:  # noqa: FBT001
    return "true" if value else "false"
