"""The values a handler takes and returns, and what it may use. Handlers never touch the store."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

import msgspec

from tickloop.errors import HandlerError
from tickloop.notify.base import Channel
from tickloop.notify.smtp import SecretLookup, SmtpSettings
from tickloop.operator.handlers.settings import HandlerSettings

#: The store's full-text search over the operator's own memory: query -> matching snippets.
Search = Callable[[str], list[str]]
#: The one variable that arms the executor, and the one value that does.
DRY_RUN_ENV = "TICKLOOP_DRY_RUN"


class HandlerStatus(StrEnum):
    """What a handler reports back to the executor."""

    #: the action was performed (or, dry, would have been)
    SENT = "sent"
    #: nothing was performed and nothing will be: the spend hand-off
    COMPLETED = "completed"
    #: the action ran and failed with a known outcome (a build that exited non-zero or timed out)
    FAILED = "failed"


class HandlerRequest(msgspec.Struct, frozen=True):
    """One intent, as a plain value."""

    intent_id: int
    action_type: str
    title: str
    #: timezone-aware; names files and stamps records
    now: datetime
    recipient: str | None = None
    payload: Mapping[str, Any] = msgspec.field(default_factory=dict)
    #: on unless the executor was armed (``TICKLOOP_DRY_RUN=0``)
    dry_run: bool = True


class HandlerResult(msgspec.Struct, frozen=True):
    """What happened, or what would have happened, as one value the executor logs and stores."""

    status: HandlerStatus
    #: the operation, for ``DRY-RUN note->files_write``: ``files_write``, ``smtp.send_message``, ...
    call: str
    #: what it was aimed at: a path, an address, channel names
    target: str
    #: one line: ``WOULD call files_write({...})`` when dry, ``called files_write({...})`` otherwise
    description: str
    dry_run: bool
    #: the spend tier: completed without acting, so it is never mistaken for a purchase
    handoff: bool = False
    details: Mapping[str, Any] = msgspec.field(default_factory=dict)


def _environ() -> Mapping[str, str]:
    return os.environ


class HandlerContext(msgspec.Struct, frozen=True):
    """Settings and injected capabilities. The lead wires these from config and the store."""

    settings: HandlerSettings = msgspec.field(default_factory=HandlerSettings)
    smtp: SmtpSettings = msgspec.field(default_factory=SmtpSettings)
    #: the notify path for ``message`` and the spend hand-off
    channels: Sequence[Channel] = ()
    #: the store's full-text search, for ``research``
    search: Search | None = None
    #: secrets by variable name (``lambda name: config.secret(name, settings)``)
    secret: SecretLookup = os.environ.get
    #: the parent environment that ``workspace_task`` filters through its allowlist
    environ: Callable[[], Mapping[str, str]] = _environ


#: A handler: a plain request in, a plain result out. Raises HandlerError when it refuses (nothing
#: done) and DeliveryError when an attempted send failed (outcome unknown: needs a human).
Handler = Callable[[HandlerRequest, HandlerContext], HandlerResult]


def dry_run_from_env(env: Mapping[str, str] | None = None) -> bool:
    """Dry unless ``TICKLOOP_DRY_RUN`` is exactly ``"0"``: unset, ``false``, ``"0 "``, ``"00"`` are dry."""
    env = os.environ if env is None else env
    return env.get(DRY_RUN_ENV) != "0"


def result(
    request: HandlerRequest, status: HandlerStatus, call: str, target: str, args: str, **extra: Any
) -> HandlerResult:
    """Build a result whose description is ``WOULD call`` or ``called`` followed by ``call(args)``."""
    verb = "WOULD call" if request.dry_run else "called"
    return HandlerResult(
        status=status,
        call=call,
        target=target,
        description=" ".join(f"{verb} {call}({args})".split()),
        dry_run=request.dry_run,
        details=extra,
    )


def text_field(request: HandlerRequest, key: str, *, default: str | None = None, limit: int = 100_000) -> str:
    """``payload[key]`` as text of at most ``limit`` characters; a refusal names intent, action and key."""
    value = request.payload.get(key, default)
    if not isinstance(value, str) or len(value) > limit:
        raise HandlerError(
            f"intent {request.intent_id} ({request.action_type}): payload.{key} must be text of at most "
            f"{limit} characters, got {type(value).__name__}"
        )
    return value
