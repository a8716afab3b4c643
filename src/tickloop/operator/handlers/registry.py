"""Action type -> (tier, handler). An action type not listed here has no executor: a human decides.

Each row names its handler as ``module:function``, imported when the handler is first used, so the
staging path and the ticks that only ask for a tier never import every handler (the workspace
handler's subprocess machinery, the mail handler's SMTP path).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType

import msgspec

from tickloop.operator.domain import Tier
from tickloop.operator.handlers.base import Handler

_HERE = "tickloop.operator.handlers"


class HandlerSpec(msgspec.Struct, frozen=True):
    """One row of the autonomy ladder."""

    tier: Tier
    #: the handler, or ``"module:function"`` naming it (imported on first use)
    target: Handler | str

    @property
    def handler(self) -> Handler:
        """The handler itself."""
        if not isinstance(self.target, str):
            return self.target
        module, _, name = self.target.partition(":")
        found: Handler = getattr(importlib.import_module(module), name)
        return found


HANDLERS: Mapping[str, HandlerSpec] = MappingProxyType(
    {
        "note": HandlerSpec(Tier.REVERSIBLE, f"{_HERE}.notes:note"),
        "wiki_write": HandlerSpec(Tier.REVERSIBLE, f"{_HERE}.notes:wiki_write"),
        "draft_prep": HandlerSpec(Tier.REVERSIBLE, f"{_HERE}.notes:draft_prep"),
        "research": HandlerSpec(Tier.REVERSIBLE, f"{_HERE}.notes:research"),
        "workspace_task": HandlerSpec(Tier.REVERSIBLE, f"{_HERE}.workspace:workspace_task"),
        "email": HandlerSpec(Tier.EXTERNAL, f"{_HERE}.mail:email"),
        "message": HandlerSpec(Tier.EXTERNAL, f"{_HERE}.message:message"),
        "spend": HandlerSpec(Tier.SPEND, f"{_HERE}.message:spend"),
    }
)


def handler_for(action_type: str) -> HandlerSpec | None:
    """The ladder row for ``action_type``; None means no executor: the intent waits for a human."""
    return HANDLERS.get(action_type)
