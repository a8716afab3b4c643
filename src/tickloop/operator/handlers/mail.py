"""Tier 2 ``email``: one validated recipient, an allowlisted sender, through the one SMTP path."""

from __future__ import annotations

from tickloop.notify.smtp import check_credentials, deliver, prepare
from tickloop.operator.handlers.base import (
    HandlerContext,
    HandlerRequest,
    HandlerResult,
    HandlerStatus,
    result,
    text_field,
)


def email(request: HandlerRequest, context: HandlerContext) -> HandlerResult:
    """Send ``payload.body`` to ``request.recipient``; subject ``payload.subject`` or the title."""
    sender = request.payload.get("from")
    mail = prepare(
        context.smtp,
        sender=None if sender is None else text_field(request, "from", limit=254),
        recipient=request.recipient,
        subject=text_field(request, "subject", default=request.title, limit=1000),
        body=text_field(request, "body"),
    )
    args = mail.describe(context.smtp).removeprefix("smtp.send_message(").removesuffix(")")
    if request.dry_run:
        check_credentials(context.smtp, context.secret)
        return result(request, HandlerStatus.SENT, "smtp.send_message", mail.recipient, args)
    message_id = deliver(context.smtp, mail, context.secret)
    return result(
        request, HandlerStatus.SENT, "smtp.send_message", mail.recipient, args, message_id=message_id
    )
