"""Action type -> (tier, handler). An action type not listed here has no executor: a human decides."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import msgspec

from tickloop.operator.domain import Tier
from tickloop.operator.handlers.base import Handler
from tickloop.operator.handlers.mail import email
from tickloop.operator.handlers.message import message, spend
from tickloop.operator.handlers.notes import draft_prep, note, research, wiki_write
from tickloop.operator.handlers.workspace import workspace_task


class HandlerSpec(msgspec.Struct, frozen=True):
    """One row of the autonomy ladder."""

    tier: Tier
    handler: Handler


HANDLERS: Mapping[str, HandlerSpec] = MappingProxyType(
    {
        "note": HandlerSpec(Tier.REVERSIBLE, note),
        "wiki_write": HandlerSpec(Tier.REVERSIBLE, wiki_write),
        "draft_prep": HandlerSpec(Tier.REVERSIBLE, draft_prep),
        "research": HandlerSpec(Tier.REVERSIBLE, research),
        "workspace_task": HandlerSpec(Tier.REVERSIBLE, workspace_task),
        "email": HandlerSpec(Tier.EXTERNAL, email),
        "message": HandlerSpec(Tier.EXTERNAL, message),
        "spend": HandlerSpec(Tier.SPEND, spend),
    }
)


def handler_for(action_type: str) -> HandlerSpec | None:
    """The ladder row for ``action_type``; None means no executor: the intent waits for a human."""
    return HANDLERS.get(action_type)
