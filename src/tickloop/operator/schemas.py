"""What the operator asks a model for, as schemas. Model output is untrusted input: it is decoded
against these types and anything else fails closed (the tick records a failed row; nothing is guessed).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Annotated, Any, Literal

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
#: The sizing rule of every bound below: an answer at its longest, keys and punctuation included, is
#: at most ``CHARS_PER_TOKEN`` characters per token of its tick's answer cap
#: (``tickloop.operator.ticks._ask.MAX_TOKENS``), so a bounded answer ends before the cap cuts it off.
#: 2 is conservative: SmolLM2's tokenizer averages about 4 characters per token on English text.
CHARS_PER_TOKEN = 2
Title = Annotated[str, msgspec.Meta(min_length=1, max_length=96)]
#: an action's title (an email's subject): a little longer than a plan step's
ActionTitle = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
Body = Annotated[str, msgspec.Meta(max_length=480)]
Rationale = Annotated[str, msgspec.Meta(max_length=160)]
#: one email address: the shape ``validate_recipient`` then checks fully
EmailAddress = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}([.][A-Za-z0-9-]{1,63}){1,8}$", max_length=96
    ),
]
#: a notify channel's name (message) or a person's handle (draft_prep), or empty
Handle = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_.-]{0,64}$", max_length=64)]
Recipient = Annotated[str, msgspec.Meta(pattern=RECIPIENT_PATTERN, max_length=320)]
Text = Annotated[str, msgspec.Meta(max_length=20_000)]
#: Money in the vendor's currency: never negative, never absurd (the spend hand-off names it).
Amount = Annotated[float, msgspec.Meta(ge=0, le=1_000_000_000)]


class ActionIntentOut(msgspec.Struct, **_STRUCT):
    """The fast tick's answer as the tick stages it: one action that advances the current step (or
    ``none``), whatever its type. The model writes one member of ``ActionAnswer`` (``oneOf`` keyed on
    ``actionType``); ``to_intent`` flattens it into this, with "" (or None) where the type has no field."""

    action_type: ActionType
    title: ActionTitle
    recipient: Recipient
    body: Text
    #: for spend: the amount in the vendor's currency, and the vendor
    amount: Amount | None = None
    vendor: Annotated[str, msgspec.Meta(max_length=200)] = ""
    rationale: Annotated[str, msgspec.Meta(max_length=2_000)] = ""


_TAGGED = {**_STRUCT, "tag_field": "actionType"}


class NoteOut(msgspec.Struct, tag="note", **_TAGGED):
    """Write a note: a title and a body. No recipient, amount or vendor can be written."""

    title: ActionTitle
    body: Body
    rationale: Rationale = ""


class WikiWriteOut(msgspec.Struct, tag="wiki_write", **_TAGGED):
    """Write a wiki page."""

    title: ActionTitle
    body: Body
    rationale: Rationale = ""


class DraftPrepOut(msgspec.Struct, tag="draft_prep", **_TAGGED):
    """Draft a message or document, never sent; ``recipient``: who it is for (a handle, or empty)."""

    title: ActionTitle
    recipient: Handle
    body: Body
    rationale: Rationale = ""


class ResearchOut(msgspec.Struct, tag="research", **_TAGGED):
    """Search the operator's own memory for ``title``."""

    title: ActionTitle
    rationale: Rationale = ""


class EmailOut(msgspec.Struct, tag="email", **_TAGGED):
    """Send one email: one address, a subject (``title``) and a body."""

    title: ActionTitle
    recipient: EmailAddress
    body: Body
    rationale: Rationale = ""


class MessageOut(msgspec.Struct, tag="message", **_TAGGED):
    """Notify the person; ``recipient``: a notify channel's name, or empty for every channel."""

    title: ActionTitle
    recipient: Handle
    body: Body
    rationale: Rationale = ""


class SpendOut(msgspec.Struct, tag="spend", **_TAGGED):
    """A purchase the person makes by hand: what (``title``), from whom and for how much."""

    title: ActionTitle
    vendor: Annotated[str, msgspec.Meta(min_length=1, max_length=96)]
    amount: Amount
    rationale: Rationale = ""


class NothingOut(msgspec.Struct, tag="none", **_TAGGED):
    """Nothing to do now, and why."""

    rationale: Annotated[str, msgspec.Meta(min_length=1, max_length=160)]


#: What the fast tick's model writes: exactly one of these, chosen by ``actionType``.
ActionAnswer = (
    NoteOut | WikiWriteOut | DraftPrepOut | ResearchOut | EmailOut | MessageOut | SpendOut | NothingOut
)
#: action type -> the member of ``ActionAnswer`` that carries it
ANSWER_TYPES: dict[str, type[msgspec.Struct]] = {
    str(kind.__struct_config__.tag): kind for kind in ActionAnswer.__args__
}


def to_intent(answer: ActionAnswer) -> ActionIntentOut:
    """The answer flattened for staging: fields the type does not have are "" (amount: None)."""
    fields = msgspec.structs.asdict(answer)
    kind = str(type(answer).__struct_config__.tag)
    title = fields.get("title") or NOTHING_TO_DO
    return ActionIntentOut(
        action_type=kind,
        title=title,
        recipient=fields.get("recipient", ""),
        body=fields.get("body", ""),
        amount=fields.get("amount"),
        vendor=fields.get("vendor", ""),
        rationale=fields.get("rationale", ""),
    )


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
    """One step of the forward plan, linked to an open board task or to none (null). The schema sent
    makes ``taskId`` an enum of the board's open task ids (``review_schema``)."""

    title: Title
    #: the board task this step advances; null for a step of its own
    task_id: int | None


class PriorityOut(msgspec.Struct, **_STRUCT):
    """One task's new priority (0..100); ``taskId`` is one of the board's open task ids."""

    task_id: int
    priority: Annotated[int, msgspec.Meta(ge=0, le=100)]


#: at most this many plan steps, priorities and drift / behind titles in one review
MAX_PLAN_STEPS = 12
MAX_PRIORITIES = 20
MAX_FLAGS = 4


class ReviewOut(msgspec.Struct, **_STRUCT):
    """The slow tick's answer: the re-prioritised board, the ordered plan, and what it noticed. Every
    field is required (an empty list says "none"); a plan left empty while tasks are open fails the
    review (``tickloop.operator.ticks.slow``). Arrays with a bound everywhere: no open map the model
    could fill until the token cap cuts it off."""

    priorities: Annotated[list[PriorityOut], msgspec.Meta(max_length=MAX_PRIORITIES)]
    plan: Annotated[list[PlanStepOut], msgspec.Meta(max_length=MAX_PLAN_STEPS)]
    drift: Annotated[list[Title], msgspec.Meta(max_length=MAX_FLAGS)]
    behind: Annotated[list[Title], msgspec.Meta(max_length=MAX_FLAGS)]


def check_review(value: ReviewOut, open_ids: Collection[int]) -> ReviewOut:
    """What the schema's enums say, checked on the answer (a server may not have enforced them):
    every ``taskId`` is an open task of the board, and no task is prioritised twice."""
    seen: set[int] = set()
    for item in value.priorities:
        if item.task_id not in open_ids:
            raise ValidationError(f"priorities names task {item.task_id}, not an open task of the board")
        if item.task_id in seen:
            raise ValidationError(f"priorities names task {item.task_id} twice")
        seen.add(item.task_id)
    for step in value.plan:
        if step.task_id is not None and step.task_id not in open_ids:
            raise ValidationError(
                f"plan step {step.title[:40]!r} names task {step.task_id}, not an open task"
            )
    return value


class ConsolidationOut(msgspec.Struct, **_STRUCT):
    """The nightly answer: the state of play, and a refreshed goal model (kept as a draft)."""

    state_of_play: Annotated[str, msgspec.Meta(min_length=1, max_length=1_200)]
    #: "" (or the goal's own text) leaves the goal model unchanged
    goal_refresh: Annotated[str, msgspec.Meta(max_length=1_600)]


class CritiqueOut(msgspec.Struct, **_STRUCT):
    """One short self-critique after a failed or gate-stopped tick. It never grades the outcome."""

    critique: Annotated[str, msgspec.Meta(min_length=1, max_length=300)]
    failure_type: FailureType


_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")


def check_critique(value: CritiqueOut) -> CritiqueOut:
    """A critique is one to three sentences; more is a standing lecture, not a critique."""
    sentences = len(_SENTENCE_END.findall(value.critique.strip())) or 1
    if sentences > 3:
        raise ValidationError(f"critique has {sentences} sentences; at most 3 are allowed")
    return value


def json_schema(kind: type[msgspec.Struct]) -> dict[str, object]:
    """msgspec's JSON schema of ``kind`` (a ``$ref`` into ``$defs``)."""
    schema = msgspec.json.schema(kind)
    return dict(schema)


def inline_schema(kind: Any, title: str) -> dict[str, Any]:
    """The JSON schema of ``kind`` with every ``$ref`` replaced by what it names (the schemas are not
    recursive), ``anyOf`` of a tagged union as ``oneOf`` (its members are disjoint by their tag), and
    ``title`` at the root: one self-contained object every grammar converter reads the same way."""
    raw = msgspec.json.schema(kind)
    defs: Mapping[str, Any] = raw.get("$defs", {})

    def resolve(value: Any) -> Any:
        if isinstance(value, list):
            return [resolve(item) for item in value]
        if not isinstance(value, dict):
            return value
        ref = value.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return resolve({**defs[ref[8:]], **{k: v for k, v in value.items() if k != "$ref"}})
        out = {k: resolve(v) for k, v in value.items() if k not in ("$defs", "discriminator")}
        if "anyOf" in out and "discriminator" in value:
            out["oneOf"] = out.pop("anyOf")
        return out

    root = resolve({k: v for k, v in raw.items() if k != "$defs"})
    return {"title": title, **{k: v for k, v in root.items() if k != "title"}}


def action_schema() -> dict[str, Any]:
    """What the fast tick sends: ``oneOf`` the action types, each with only its own fields."""
    return inline_schema(ActionAnswer, "ActionIntentOut")


def review_schema(open_ids: Sequence[int]) -> dict[str, Any]:
    """What the slow tick sends: ``ReviewOut`` with every ``taskId`` an enum of ``open_ids`` (a plan
    step's also null); with no open task, no priority can be written and a step links to none."""
    schema = inline_schema(ReviewOut, "ReviewOut")
    properties = schema["properties"]
    step = properties["plan"]["items"]["properties"]
    priority = properties["priorities"]["items"]["properties"]
    ids = sorted(set(open_ids))
    if ids:
        priority["taskId"] = {"enum": ids}
        step["taskId"] = {"anyOf": [{"enum": ids}, {"type": "null"}]}
        properties["priorities"]["maxItems"] = min(MAX_PRIORITIES, len(ids))
    else:
        step["taskId"] = {"type": "null"}
        properties["priorities"]["maxItems"] = 0
    return schema
