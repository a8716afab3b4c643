"""What the operator asks a model for, as schemas. Model output is untrusted input: it is decoded
against these types and anything else fails closed (the tick records a failed row; nothing is guessed).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

import msgspec

from tickloop.errors import ValidationError
from tickloop.operator.handlers.registry import HANDLERS

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

#: The fast tick's "nothing to do now": recorded as a ``noop`` row with its rationale, never staged.
#: Asking the person something is a ``message`` intent (external: the gate holds it for approval).
NOTHING_TO_DO = "none"
#: Handler types a model's answer cannot carry a runnable payload for: ``workspace_task`` needs an
#: ``argv`` that ``ActionIntentOut`` has no field for, so such an intent could never run. A person
#: stages one with ``tickloop operator intents add``.
NOT_PROPOSABLE = frozenset({"workspace_task"})
#: What a model may propose: the registered handler types (less ``NOT_PROPOSABLE``), and ``none``. The
#: schema's ``enum`` is how a grammar-constrained server steers the model to an action that can run.
ACTION_TYPES: tuple[str, ...] = (*(kind for kind in HANDLERS if kind not in NOT_PROPOSABLE), NOTHING_TO_DO)
ActionType = Annotated[
    str,
    msgspec.Meta(
        pattern="^(?:" + "|".join(re.escape(kind) for kind in ACTION_TYPES) + ")$",
        extra_json_schema={"enum": list(ACTION_TYPES)},
        description="a registered handler type, or none (nothing to do now)",
    ),
]
#: Who an action is for, in the shapes the handlers validate: empty (note, research, ...), one email
#: address (email; ``validate_recipient`` checks it fully), or a notify channel's name (message) or a
#: person's handle (draft_prep). Spaces, quotes and a second address cannot be written.
#: Plain groups only: llama-cpp-python's pattern converter refuses ``(?:`` and then drops the whole
#: grammar for plain JSON, silently (SmolLM2 then wrote keys the schema forbids). No ``\.`` either:
#: the converter copies it into a GBNF literal, where it is not an escape, and llama.cpp's parser
#: fails (the server then crashed with SIGSEGV); ``[.]`` says the same.
RECIPIENT_PATTERN = (
    r"^([A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}([.][A-Za-z0-9-]{1,63}){1,8}|[A-Za-z0-9_.-]{1,64})?$"
)
Recipient = Annotated[str, msgspec.Meta(pattern=RECIPIENT_PATTERN, max_length=320)]
Title = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Text = Annotated[str, msgspec.Meta(max_length=20_000)]
#: Money in the vendor's currency: never negative, never absurd (the spend hand-off names it).
Amount = Annotated[float, msgspec.Meta(ge=0, le=1_000_000_000)]


class ActionIntentOut(msgspec.Struct, **_STRUCT):
    """The fast tick's answer: exactly one action that advances the current step (or ``none``).

    Required: the type, the title, the recipient and the body (empty where the type needs none);
    the tick stages exactly these, and a missing one is refused rather than defaulted."""

    action_type: ActionType
    title: Title
    recipient: Recipient
    body: Text
    #: for spend: the amount in the vendor's currency, and the vendor
    amount: Amount | None = None
    vendor: Annotated[str, msgspec.Meta(max_length=200)] = ""
    rationale: Annotated[str, msgspec.Meta(max_length=2_000)] = ""


def check_intent(value: ActionIntentOut) -> ActionIntentOut:
    """What the schema cannot say across fields: an email names one address, a message or spend a
    title; a spend states its amount. Fails closed (``ValidationError``), nothing is guessed."""
    kind = value.action_type
    if kind == "email" and "@" not in value.recipient:
        raise ValidationError(f"an email needs one recipient address, got {value.recipient[:64]!r}")
    if kind == "spend" and value.amount is None:
        raise ValidationError("a spend needs its amount")
    return value


class PlanStepOut(msgspec.Struct, **_STRUCT):
    """One step of the forward plan, optionally linked to a board task."""

    title: Title
    #: the board task this step advances; null for a step of its own
    task_id: int | None


class ReviewOut(msgspec.Struct, **_STRUCT):
    """The slow tick's answer: the re-prioritised board, the ordered plan, and what it noticed. Every
    field is required (an empty list says "none"); a plan left empty while tasks are open fails the
    review (``tickloop.operator.ticks.slow``)."""

    priorities: dict[str, Annotated[int, msgspec.Meta(ge=0, le=100)]]
    plan: Annotated[list[PlanStepOut], msgspec.Meta(max_length=20)]
    drift: Annotated[list[Title], msgspec.Meta(max_length=10)]
    behind: Annotated[list[Title], msgspec.Meta(max_length=10)]


class ConsolidationOut(msgspec.Struct, **_STRUCT):
    """The nightly answer: the state of play, and a refreshed goal model (kept as a draft)."""

    state_of_play: Annotated[str, msgspec.Meta(min_length=1, max_length=4_000)]
    goal_refresh: Annotated[str, msgspec.Meta(max_length=8_000)]


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
