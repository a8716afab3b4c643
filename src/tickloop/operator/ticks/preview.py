"""The executor's dry pass: a preview that changes no intent's status.

Dry-run is the default posture (seed 002, §6.8): the whole pipeline runs and the call that WOULD be
made is logged. Here a dry pass also leaves every intent where it was, so it never spends the
person's approval, never fails an intent for a setting only a real run needs, and never feeds the
drift guard. Each intent it considers gets its preview on ``result`` (``{"dry_run": true, "preview":
...}``), which the tables and the dashboard show as a dry-run outcome; a refusal says which setting a
real run would still need ("smtp.host is empty ...: a real run would fail").

Nothing is claimed: the pass reads the ready and approved intents of the window, re-checks each as a
claim would, and runs its handler with ``dry_run=True``. The reaper and the stale-claim release only
say what they WOULD do.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import msgspec

from tickloop.errors import HandlerError
from tickloop.operator.domain import Intent, IntentStatus
from tickloop.operator.handlers import HandlerContext
from tickloop.operator.runner import TickContext
from tickloop.operator.ticks import executor
from tickloop.operator.ticks.executor import Claim, ExecutorSettings, Tally

#: Intents one dry pass considers at most (per claimable status).
PREVIEW_LIMIT = 10_000


def preview_pass(
    ctx: TickContext,
    settings: ExecutorSettings,
    handlers: HandlerContext,
    since: datetime,
    until: datetime | None,
    *,
    tally: Tally,
) -> None:
    """Say what the reaper would do, then preview each ready or approved intent of the window."""
    would_reap(ctx, settings)
    for intent in candidates(ctx, since, until):
        tally.considered += 1
        claim = executor.recheck(ctx, msgspec.structs.replace(intent, claim_prior=intent.status))
        preview = _preview(ctx, handlers, claim, tally)
        ctx.store.record_preview(
            ctx.profile, intent.id, {"dry_run": True, "preview": preview}, expected=intent.status
        )


def would_reap(ctx: TickContext, settings: ExecutorSettings) -> None:
    """Log the claims a real pass would reap or release; touch none of them."""
    cutoff = ctx.clock.now() - timedelta(seconds=settings.reap_after_s)
    for status, verb in (
        (IntentStatus.SENDING, "reap stuck 'sending'"),
        (IntentStatus.CLAIMED, "release stale claim on"),
    ):
        for intent in ctx.store.list_intents(ctx.profile, status=status, limit=PREVIEW_LIMIT):
            if intent.claimed_at is not None and intent.claimed_at < cutoff:
                after = "needs_human" if status is IntentStatus.SENDING else str(intent.claim_prior)
                what = f"intent {intent.id} ({intent.action_type})"
                ctx.log(f"DRY-RUN WOULD {verb} {what} -> {after}; left {status}")


def candidates(ctx: TickContext, since: datetime, until: datetime | None) -> list[Intent]:
    """The ready and approved intents of the window, oldest first, as a real pass would claim them."""
    found = [
        intent
        for status in (IntentStatus.READY, IntentStatus.APPROVED)
        for intent in ctx.store.list_intents(ctx.profile, status=status, limit=PREVIEW_LIMIT)
        if intent.created_at >= since and (until is None or intent.created_at < until)
    ]
    return sorted(found, key=lambda intent: intent.id)


def _preview(ctx: TickContext, handlers: HandlerContext, claim: Claim, tally: Tally) -> dict[str, Any]:
    """Log and return what a real pass would do with ``claim``."""
    intent = claim.intent
    left = f"left {intent.status}"
    if claim.spec is None:
        tally.skipped += 1
        reason = executor.no_executor(intent)
        ctx.log(f"{reason}; a real run would route it to needs_human; {left}")
        return {"would": str(IntentStatus.NEEDS_HUMAN), "reason": reason}
    if claim.problem:
        tally.failed += 1
        ctx.log(
            f"DRY-RUN intent {intent.id} ({intent.action_type}) is not executable: {claim.problem}; {left}"
        )
        return {"would": str(IntentStatus.FAILED), "reason": claim.problem}
    if not claim.floor:
        tally.skipped += 1
        executor.refuse_by_floor(ctx, intent, claim.spec.tier)
        return {"would": "refuse", "reason": "tier floor: not approved+linked"}
    return _dispatch(ctx, handlers, claim, tally)


def _dispatch(ctx: TickContext, handlers: HandlerContext, claim: Claim, tally: Tally) -> dict[str, Any]:
    intent, spec = claim.intent, claim.spec
    assert spec is not None  # a claim that runs has a handler
    tier, left = spec.tier.value, f"left {intent.status}"
    ctx.log(f"dispatch intent {intent.id} action_type={intent.action_type!r} tier={tier!r} dry=true")
    try:
        done = spec.handler(executor.request_for(intent, ctx.clock.now(), dry=True), handlers)
    except HandlerError as exc:
        tally.failed += 1
        ctx.log(
            f"DRY-RUN intent {intent.id} ({intent.action_type}): {exc.message}: a real run would fail; {left}"
        )
        return {"would": str(IntentStatus.FAILED), "reason": exc.message}
    except Exception as exc:  # noqa: BLE001  (a dry handler touches nothing: report it, change nothing)
        tally.failed += 1
        error = f"{type(exc).__name__}: {exc}"[:300]
        ctx.log(f"DRY-RUN intent {intent.id} ({intent.action_type}): {error}: a real run would fail; {left}")
        return {"would": str(IntentStatus.FAILED), "reason": error}
    ctx.log(executor.call_line(intent, done))
    status = str(executor.STATUS_OF[done.status])
    tally.executed += 1
    tally.handoff += done.handoff
    ctx.log(f"intent {intent.id} -> would be {status} ({tier}, dry-run); {left}")
    return {"would": status, **executor.plain_result(done)}
