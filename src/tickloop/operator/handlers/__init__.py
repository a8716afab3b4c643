"""Side-effect handlers of the executor, one per action type, grouped by capability tier.

A handler takes a plain ``HandlerRequest`` and a ``HandlerContext`` (settings plus injected search,
channels and secrets) and returns a plain ``HandlerResult``. It never touches the store: claims, the
tier floor, the reaper and the log lines belong to the executor. In dry-run a handler runs its whole
validation pipeline and returns the call it WOULD make, making none (no file, socket or process).
"""

from __future__ import annotations

from tickloop.operator.domain import Tier
from tickloop.operator.handlers.base import (
    DRY_RUN_ENV,
    Handler,
    HandlerContext,
    HandlerRequest,
    HandlerResult,
    HandlerStatus,
    Search,
    dry_run_from_env,
)
from tickloop.operator.handlers.registry import HANDLERS, HandlerSpec, handler_for
from tickloop.operator.handlers.settings import HandlerSettings, WorkspaceSettings, parse_handler_settings

__all__ = [
    "DRY_RUN_ENV",
    "HANDLERS",
    "Handler",
    "HandlerContext",
    "HandlerRequest",
    "HandlerResult",
    "HandlerSettings",
    "HandlerSpec",
    "HandlerStatus",
    "Search",
    "Tier",
    "WorkspaceSettings",
    "dry_run_from_env",
    "handler_for",
    "parse_handler_settings",
]
