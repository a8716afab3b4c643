"""Tier 2 ``message`` (the notify path) and tier 3 ``spend`` (never executed: a hand-off)."""

from __future__ import annotations

from collections.abc import Sequence

from tickloop.errors import DeliveryError, HandlerError
from tickloop.notify.base import Channel, DeliveryResult, one_line, send_all
from tickloop.operator.handlers.base import (
    HandlerContext,
    HandlerRequest,
    HandlerResult,
    HandlerStatus,
    result,
    text_field,
)


def message(request: HandlerRequest, context: HandlerContext) -> HandlerResult:
    """Send title and ``payload.body`` through the channel named by the recipient, or through all."""
    channels = _channels(request, context.channels)
    body = text_field(request, "body", default="")
    subject = one_line(request.title, 200)
    names = ",".join(channel.name for channel in channels)
    args = f"channels=[{', '.join(c.describe() for c in channels)}], subject={subject!r}"
    if request.dry_run:
        return result(request, HandlerStatus.SENT, "notify", names, args)
    results = _delivered_somewhere(request, send_all(channels, subject, body))
    return result(request, HandlerStatus.SENT, "notify", names, args, deliveries=_plain(results))


def spend(request: HandlerRequest, context: HandlerContext) -> HandlerResult:
    """Never buys: tells the person to purchase manually, then completes with the hand-off flag."""
    channels = _channels(request, context.channels, by_recipient=False)
    facts = _spend_facts(request)
    summary = ", ".join(f"{key}={value!r}" for key, value in facts.items())
    verb = "WOULD notify" if request.dry_run else "notified"
    description = f"{verb} the person to purchase manually: {summary}"
    if not request.dry_run:
        body = "The operator will NOT auto-purchase. Buy it yourself if you still want it.\n\n"
        body += "\n".join(f"{key}: {value}" for key, value in facts.items())
        results = _delivered_somewhere(
            request, send_all(channels, f"Purchase manually: {facts['title']}", body)
        )
        return _handoff(request, description, deliveries=_plain(results))
    return _handoff(request, description)


def _handoff(request: HandlerRequest, description: str, **details: object) -> HandlerResult:
    return HandlerResult(
        status=HandlerStatus.COMPLETED,
        call="notify+handoff",
        target="the person",
        description=one_line(description, 1000),
        dry_run=request.dry_run,
        handoff=True,
        details=details,
    )


def _spend_facts(request: HandlerRequest) -> dict[str, str]:
    return {
        "title": one_line(request.title, 200),
        "amount": _fact(request, "amount"),
        "vendor": _fact(request, "vendor"),
        "intent": str(request.intent_id),
    }


def _fact(request: HandlerRequest, key: str) -> str:
    value = request.payload.get(key)
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        return "(not stated)"
    currency = request.payload.get("currency") if key == "amount" else None
    text = f"{value} {currency}" if isinstance(currency, str) and currency else str(value)
    return one_line(text, 100)


def _channels(
    request: HandlerRequest, channels: Sequence[Channel], *, by_recipient: bool = True
) -> list[Channel]:
    if not channels:
        raise HandlerError(
            f"intent {request.intent_id} ({request.action_type}): no notify channels are configured"
        )
    if not by_recipient or not request.recipient:
        return list(channels)
    chosen = [channel for channel in channels if channel.name == request.recipient]
    if not chosen:
        known = ", ".join(channel.name for channel in channels)
        raise HandlerError(
            f"intent {request.intent_id} (message): no notify channel named {request.recipient[:40]!r} "
            f"(configured: {known})"
        )
    return chosen


def _delivered_somewhere(request: HandlerRequest, results: list[DeliveryResult]) -> list[DeliveryResult]:
    if not any(item.ok for item in results):
        reasons = "; ".join(f"{item.channel}: {item.reason}" for item in results)
        raise DeliveryError(
            f"intent {request.intent_id} ({request.action_type}): no channel delivered: {reasons}"
        )
    return results


def _plain(results: list[DeliveryResult]) -> list[dict[str, object]]:
    return [{"channel": r.channel, "ok": r.ok, "reason": r.reason, "detail": r.detail} for r in results]
