"""What each handler needs of an intent, checked when the intent is staged, not when it executes.

The one staging path (``tickloop.operator.staging``) runs :func:`check_draft` before anything is
stored, so the fast tick, ``intents add`` and MCP's ``stage_intent`` all refuse the same input with
the same message, and no intent reaches the person's approval queue only to fail after approval.
The handlers keep their own checks (defence in depth); these are the ones a face can act on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tickloop.errors import RecipientError, ValidationError

#: ``(recipient, payload) -> None``; raises ``ValidationError`` naming the field.
Check = Callable[[str, Mapping[str, Any]], None]
#: Text fields and their limits in characters (the handlers' ``text_field`` limits).
_TEXT_LIMITS = {"body": 100_000, "subject": 1000, "from": 254, "query": 500, "cwd": 1024, "shell": 4096}


def _texts(payload: Mapping[str, Any], action_type: str) -> None:
    for key, limit in _TEXT_LIMITS.items():
        value = payload.get(key)
        if value is not None and (not isinstance(value, str) or len(value) > limit):
            raise ValidationError(f"{action_type}: payload.{key} must be text of at most {limit} characters")


def _plain(action_type: str) -> Check:
    def check(_recipient: str, payload: Mapping[str, Any]) -> None:
        _texts(payload, action_type)

    return check


def _email(recipient: str, payload: Mapping[str, Any]) -> None:
    from tickloop.notify.address import validate_recipient  # noqa: PLC0415  (email_validator, on this path only)

    try:
        validate_recipient(recipient, where="email: recipient")
    except RecipientError as exc:
        raise ValidationError(f"{exc.message}; an email goes to exactly one address") from None
    _texts(payload, "email")
    body = payload.get("body")
    if not isinstance(body, str) or not body.strip():
        raise ValidationError("email: payload.body is required: the text of the mail")


def _workspace(_recipient: str, payload: Mapping[str, Any]) -> None:
    _texts(payload, "workspace_task")
    argv = payload.get("argv")
    if argv is not None and (
        not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv)
    ):
        raise ValidationError("workspace_task: payload.argv must be a non-empty list of strings")


def _spend(_recipient: str, payload: Mapping[str, Any]) -> None:
    _texts(payload, "spend")
    amount = payload.get("amount")
    if amount is not None and (isinstance(amount, bool) or not isinstance(amount, int | float) or amount < 0):
        raise ValidationError("spend: payload.amount must be a number of at least 0")


#: Every registered action type -> its staging check (a test keeps this equal to the registry).
CHECKS: Mapping[str, Check] = {
    "note": _plain("note"),
    "wiki_write": _plain("wiki_write"),
    "draft_prep": _plain("draft_prep"),
    "research": _plain("research"),
    "workspace_task": _workspace,
    "email": _email,
    "message": _plain("message"),
    "spend": _spend,
}


def check_draft(action_type: str, recipient: str, payload: Mapping[str, Any]) -> None:
    """Refuse an unregistered type (naming the valid ones) or a payload its handler cannot take."""
    check = CHECKS.get(action_type)
    if check is None:
        valid = ", ".join(CHECKS)
        raise ValidationError(f"unknown action type {action_type!r}: use one of {valid}")
    check(recipient, payload)
