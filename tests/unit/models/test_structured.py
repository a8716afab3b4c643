"""Structured model output fails closed: a valid answer decodes, anything else is a ValidationError."""

from __future__ import annotations

import json
from typing import Annotated, Literal

import msgspec
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tickloop.errors import ValidationError
from tickloop.models import ChatMessage, OfflineModel, complete_structured, decode_structured, schema_for


class Target(msgspec.Struct, forbid_unknown_fields=True):
    """Where an action goes."""

    recipient: str


class Intent(msgspec.Struct, forbid_unknown_fields=True):
    """An action intent, shaped like the operator's."""

    type: Literal["note", "draft", "email"]
    title: Annotated[str, msgspec.Meta(min_length=1)]
    priority: Annotated[int, msgspec.Meta(ge=0, le=3)]
    target: Target | None


VALID = '{"type": "note", "title": "write it down", "priority": 1, "target": null}'


def test_schema_has_an_object_root_with_its_definitions() -> None:
    """The schema sent as response_format is the struct's object itself, with nested defs kept."""
    schema = schema_for(Intent)
    assert schema["type"] == "object"
    assert schema["title"] == "Intent"
    assert set(schema["required"]) == {"type", "title", "priority", "target"}
    assert schema["additionalProperties"] is False
    assert "Target" in schema["$defs"]


def test_a_valid_answer_decodes() -> None:
    """A schema-valid answer becomes the typed value."""
    assert decode_structured(VALID, Intent) == Intent("note", "write it down", 1, None)
    assert decode_structured(VALID.encode(), Intent).priority == 1


def test_one_fence_around_the_whole_answer_is_unwrapped() -> None:
    """An answer that is exactly one ```json fenced block is read as its content."""
    assert decode_structured(f"```json\n{VALID}\n```\n", Intent).title == "write it down"
    assert decode_structured(f"```\n{VALID}\n```", Intent).title == "write it down"


@pytest.mark.parametrize(
    "answer",
    [
        f"Sure! Here it is:\n```json\n{VALID}\n```",
        f"```json\n{VALID}\n```\nHope this helps",
        f"```json\n{VALID}\n```\n```json\n{VALID}\n```",
        f"The intent is {VALID}",
        f"{VALID} {VALID}",
        VALID[:-1],
        "",
    ],
)
def test_nothing_is_guessed_from_prose_or_partial_json(answer: str) -> None:
    """JSON embedded in prose, two answers or a truncated one are refused, not extracted."""
    with pytest.raises(ValidationError):
        decode_structured(answer, Intent)


@pytest.mark.parametrize(
    ("answer", "path"),
    [
        ('{"type": "spend", "title": "x", "priority": 1, "target": null}', "$.type"),
        ('{"type": "note", "title": "", "priority": 1, "target": null}', "$.title"),
        ('{"type": "note", "title": "x", "priority": 9, "target": null}', "$.priority"),
        ('{"type": "note", "title": "x", "priority": 1, "target": {"recipient": 5}}', "$.target.recipient"),
        ('{"type": "note", "title": "x", "priority": 1, "target": null, "extra": 1}', "extra"),
        ('{"type": "note", "title": "x", "priority": 1}', "target"),
    ],
)
def test_a_wrong_answer_names_the_path(answer: str, path: str) -> None:
    """A schema violation says which field was wrong (msgspec's `at $.field`)."""
    with pytest.raises(ValidationError, match="does not match Intent") as caught:
        decode_structured(answer, Intent)
    assert path in str(caught.value)


def test_invalid_utf8_and_lone_surrogates_are_validation_errors() -> None:
    """Undecodable bytes or unencodable text are refused as ValidationError, not UnicodeError."""
    with pytest.raises(ValidationError, match="UTF-8"):
        decode_structured(b'{"title": "\xff"}', Intent)
    with pytest.raises(ValidationError, match="UTF-8"):
        decode_structured('{"title": "\ud800"}', Intent)


def test_deep_nesting_is_a_validation_error() -> None:
    """A pathologically nested answer is refused without a crash."""
    with pytest.raises(ValidationError):
        decode_structured("[" * 100_000 + "]" * 100_000, Intent)


json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _no_constant(name: str) -> object:
    raise ValueError(name)  # NaN and Infinity are not JSON


def _expected(answer: str | bytes) -> Intent | None:
    """An oracle written apart from msgspec: the Intent a schema-valid answer means, else None."""
    try:
        value = json.loads(answer, parse_constant=_no_constant)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or a constant
        return None
    return _intent_of(value)


def _intent_of(value: object) -> Intent | None:
    if not isinstance(value, dict) or set(value) != {"type", "title", "priority", "target"}:
        return None
    kind, title, priority, target = value["type"], value["title"], value["priority"], value["target"]
    if kind not in ("note", "draft", "email") or not isinstance(title, str) or not title:
        return None
    if isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 3:
        return None
    if target is None:
        return Intent(kind, title, priority, None)
    if (
        not isinstance(target, dict)
        or set(target) != {"recipient"}
        or not isinstance(target["recipient"], str)
    ):
        return None
    return Intent(kind, title, priority, Target(target["recipient"]))


@given(st.text() | st.binary() | json_like.map(lambda v: msgspec.json.encode(v).decode()))
def test_any_answer_is_a_value_or_a_validation_error(answer: str | bytes) -> None:
    """For ANY model output, decoding returns exactly the Intent the answer means, or raises a
    ValidationError naming Intent when the answer means none: never anything else."""
    assume("```" not in (answer if isinstance(answer, str) else answer.decode("utf-8", "replace")))
    expected = _expected(answer)
    if expected is None:
        with pytest.raises(ValidationError, match="Intent"):
            decode_structured(answer, Intent)
    else:
        assert decode_structured(answer, Intent) == expected


@given(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["note", "draft", "email", "spend", 1]),
            "title": st.text(max_size=5) | st.integers(),
            "priority": st.integers(-2, 5) | st.text(max_size=2),
            "target": st.none() | st.fixed_dictionaries({"recipient": st.text(max_size=3) | st.none()}),
        }
    )
)
def test_near_miss_objects_are_values_or_validation_errors(candidate: dict[str, object]) -> None:
    """Objects that are almost an Intent decode, to exactly their fields, only when every field is valid."""
    text = msgspec.json.encode(candidate).decode()
    expected = _intent_of(candidate)
    if expected is None:
        with pytest.raises(ValidationError, match="does not match Intent"):
            decode_structured(text, Intent)
    else:
        assert decode_structured(text, Intent) == expected


async def test_complete_structured_sends_the_schema_and_validates() -> None:
    """complete_structured passes the struct's schema to the model and returns the validated value."""
    seen: list[dict[str, object]] = []

    def reply(_messages: object, schema: dict[str, object]) -> str:
        seen.append(schema)
        return VALID

    model = OfflineModel(json_reply=reply)  # type: ignore[arg-type]
    value, completion = await complete_structured(model, [ChatMessage("user", "act")], Intent)
    assert value == Intent("note", "write it down", 1, None)
    assert completion.text == VALID
    assert seen == [schema_for(Intent)]


async def test_complete_structured_fails_closed() -> None:
    """An answer that is not an Intent raises ValidationError instead of returning a guess."""
    model = OfflineModel(json_reply=lambda _m, _s: '{"type": "note"}')
    with pytest.raises(ValidationError, match="Intent"):
        await complete_structured(model, [ChatMessage("user", "act")], Intent)
