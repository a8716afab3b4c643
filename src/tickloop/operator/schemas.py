"""What the operator asks a model for, as schemas. Model output is untrusted input: it is decoded
against these types and anything else fails closed (the tick records a failed row; nothing is guessed).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

import msgspec

from tickloop.errors import ValidationError

#: The fixed taxonomy a self-critique picks one failure type from (eight terms).
FAILURE_TYPES = (
    "wrong_step",  # worked on something other than the current plan step
    "repeated_failure",  # tried again what already failed
    "missing_information",  # acted without a fact it needed
    "tool_error",  # the handler or a tool failed
    "gate_refusal",  # proposed something the gate would not allow
    "goal_drift",  # pursued the trajectory rather than the goal model
    "overreach",  # proposed more than one step, or an outsized action
    "malformed_output",  # answered outside the schema
)
FailureType = Literal[
    "wrong_step",
    "repeated_failure",
    "missing_information",
    "tool_error",
    "gate_refusal",
    "goal_drift",
    "overreach",
    "malformed_output",
]

_STRUCT = {"frozen": True, "forbid_unknown_fields": True, "rename": "camel", "kw_only": True}
ActionType = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_]{0,39}$")]
Title = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Text = Annotated[str, msgspec.Meta(max_length=20_000)]


class ActionIntentOut(msgspec.Struct, **_STRUCT):
    """The fast tick's answer: exactly one action that advances the current step."""

    action_type: ActionType
    title: Title
    recipient: Annotated[str, msgspec.Meta(max_length=320)] = ""
    body: Text = ""
    #: for spend: the amount in the vendor's currency, and the vendor
    amount: Annotated[float, msgspec.Meta(ge=0)] | None = None
    vendor: Annotated[str, msgspec.Meta(max_length=200)] = ""
    rationale: Annotated[str, msgspec.Meta(max_length=2_000)] = ""


class PlanStepOut(msgspec.Struct, **_STRUCT):
    """One step of the forward plan, optionally linked to a board task."""

    title: Title
    task_id: int | None = None


class ReviewOut(msgspec.Struct, **_STRUCT):
    """The slow tick's answer: the re-prioritised board, the ordered plan, and what it noticed."""

    priorities: dict[str, Annotated[int, msgspec.Meta(ge=0, le=100)]] = msgspec.field(default_factory=dict)
    plan: Annotated[list[PlanStepOut], msgspec.Meta(max_length=20)] = msgspec.field(default_factory=list)
    drift: Annotated[list[Title], msgspec.Meta(max_length=10)] = msgspec.field(default_factory=list)
    behind: Annotated[list[Title], msgspec.Meta(max_length=10)] = msgspec.field(default_factory=list)


class ConsolidationOut(msgspec.Struct, **_STRUCT):
    """The nightly answer: the state of play, and a refreshed goal model (kept as a draft)."""

    state_of_play: Annotated[str, msgspec.Meta(min_length=1, max_length=4_000)]
    goal_refresh: Annotated[str, msgspec.Meta(max_length=8_000)] = ""


class CritiqueOut(msgspec.Struct, **_STRUCT):
    """One short self-critique after a failed or gate-stopped tick. It never grades the outcome."""

    critique: Annotated[str, msgspec.Meta(min_length=1, max_length=600)]
    failure_type: FailureType


_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")


def check_critique(value: CritiqueOut) -> CritiqueOut:
    """A critique is one to three sentences; more is a standing lecture, not a critique."""
    sentences = len(_SENTENCE_END.findall(value.critique.strip())) or 1
    if sentences > 3:
        raise ValidationError(f"critique has {sentences} sentences; at most 3 are allowed")
    return value


def json_schema(kind: type[msgspec.Struct]) -> dict[str, object]:
    """The JSON schema sent as ``response_format`` (servers that support it constrain by grammar)."""
    schema = msgspec.json.schema(kind)
    return dict(schema)
