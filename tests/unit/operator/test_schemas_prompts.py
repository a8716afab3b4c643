"""Operator prompts are versioned files with a recorded hash; model-output schemas are strict."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

import msgspec
import pytest

from tickloop.errors import ConfigError, ValidationError
from tickloop.models.structured import schema_for
from tickloop.operator.prompts import CURRENT, load_prompt
from tickloop.operator.schemas import (
    ACTION_TYPES,
    ANSWER_TYPES,
    CHARS_PER_TOKEN,
    FAILURE_TYPES,
    MAX_PRIORITIES,
    ActionAnswer,
    ActionIntentOut,
    ConsolidationOut,
    CritiqueOut,
    ReviewOut,
    action_schema,
    check_critique,
    json_schema,
    review_schema,
    to_intent,
)
from tickloop.operator.ticks._ask import MAX_TOKENS


@pytest.mark.parametrize("name", sorted(CURRENT))
def test_each_prompt_loads_with_the_sha256_of_its_file(name: str) -> None:
    """A progress row can name exactly which prompt text produced it."""
    prompt = load_prompt(name)
    data = resources.files("tickloop.operator.prompts").joinpath(prompt.name).read_bytes()
    assert prompt.sha256 == "sha256:" + hashlib.sha256(data).hexdigest()
    assert "JSON" in prompt.text


def test_unknown_prompt_is_a_clear_error() -> None:
    """Asking for a prompt that does not exist names it and lists the known ones."""
    with pytest.raises(ConfigError, match="known: consolidate, critique, fast, slow"):
        load_prompt("../../etc/passwd")


def test_failure_taxonomy_has_eight_terms_matching_the_schema() -> None:
    """The critique's failure type comes from a fixed list of eight, and the schema enforces it."""
    assert len(FAILURE_TYPES) == len(set(FAILURE_TYPES)) == 8
    schema = json_schema(CritiqueOut)
    assert set(schema["$defs"]["CritiqueOut"]["properties"]["failureType"]["enum"]) == set(FAILURE_TYPES)  # type: ignore[index]
    with pytest.raises(msgspec.ValidationError, match="failureType"):
        msgspec.json.decode(b'{"critique": "x.", "failureType": "bad_luck"}', type=CritiqueOut)


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("Check the address first.", True),
        ("One. Two. Three.", True),
        ("One. Two. Three. Four.", False),
        ("no full stop at all", True),
    ],
)
def test_critiques_are_one_to_three_sentences(text: str, ok: bool) -> None:
    """A critique longer than three sentences is refused instead of kept as a lecture."""
    value = CritiqueOut(critique=text, failure_type="tool_error")
    if ok:
        assert check_critique(value) is value
    else:
        with pytest.raises(ValidationError, match="4 sentences"):
            check_critique(value)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"actionType": "Send Email", "title": "x"}',
        b'{"actionType": "note", "title": ""}',
        b'{"actionType": "note", "title": "x", "extra": 1}',
        b'{"actionType": "note", "title": "x", "amount": -5}',
        b'{"title": "x"}',
    ],
)
def test_action_schema_refuses_what_it_does_not_describe(raw: bytes) -> None:
    """Unknown fields, bad action types, empty titles and negative amounts are refused, not guessed."""
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(raw, type=ActionIntentOut)


def test_review_schema_bounds_the_plan() -> None:
    """A plan of more than 12 steps is refused."""
    steps = ",".join('{"title": "s", "taskId": null}' for _ in range(13))
    with pytest.raises(msgspec.ValidationError, match="plan"):
        msgspec.json.decode(('{"plan": [%s]}' % steps).encode(), type=ReviewOut)  # noqa: UP031


def longest(schema: Mapping[str, Any]) -> int:  # noqa: PLR0911  (one return per schema shape)
    """The characters of the longest JSON value ``schema`` admits, as written without escapes."""
    if "enum" in schema:
        return max(len(json.dumps(v)) for v in schema["enum"])
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return max(longest(m) for m in schema[key])
    kind = schema.get("type")
    if kind == "object":
        props = schema["properties"]
        return 2 + sum(len(json.dumps(k)) + 1 + longest(v) + 1 for k, v in props.items())
    if kind == "array":
        return 2 + schema["maxItems"] * (longest(schema["items"]) + 1)
    if kind == "string":
        return 2 + schema["maxLength"]
    if kind == "integer":
        return len(str(schema.get("maximum", 2**63)))
    if kind == "number":
        return 24
    assert kind == "null", schema
    return 4


SCHEMAS = {
    "fast": action_schema(),
    "slow": review_schema(list(range(10**6, 10**6 + MAX_PRIORITIES))),
    "consolidate": schema_for(ConsolidationOut),
    "critique": schema_for(CritiqueOut),
}


@pytest.mark.parametrize("kind", sorted(SCHEMAS))
def test_every_answer_at_its_longest_fits_the_ticks_token_cap(kind: str) -> None:
    """Every string and array is bounded, so that the longest answer a schema admits stays within
    CHARS_PER_TOKEN characters per token of the tick's maxTokens: it ends before the cap cuts it off."""
    assert longest(SCHEMAS[kind]) <= CHARS_PER_TOKEN * MAX_TOKENS[kind], longest(SCHEMAS[kind])


def test_no_schema_holds_an_open_map() -> None:
    """No object lets the model invent keys (the unbounded ``priorities`` map SmolLM2 filled until
    the cap): every object names its properties and forbids others."""

    def objects(value: Any) -> list[dict[str, Any]]:
        if isinstance(value, list):
            return [o for item in value for o in objects(item)]
        if not isinstance(value, dict):
            return []
        mine = [value] if value.get("type") == "object" else []
        return mine + [o for item in value.values() for o in objects(item)]

    for schema in SCHEMAS.values():
        for found in objects(schema):
            assert found["additionalProperties"] is False
            assert "properties" in found


def test_each_proposable_action_type_has_its_own_schema() -> None:
    """The fast schema is oneOf exactly the proposable types, each keyed by its own actionType const."""
    members = SCHEMAS["fast"]["oneOf"]
    assert sorted(m["properties"]["actionType"]["enum"][0] for m in members) == sorted(ACTION_TYPES)
    assert set(ANSWER_TYPES) == set(ACTION_TYPES)


@pytest.mark.parametrize(
    ("raw", "kind", "fields"),
    [
        ('{"actionType": "note", "title": "t", "body": "b"}', "note", {"recipient": "", "amount": None}),
        (
            '{"actionType": "spend", "title": "dock", "vendor": "Acme", "amount": 89}',
            "spend",
            {"amount": 89.0},
        ),
        ('{"actionType": "none", "rationale": "all done"}', "none", {"title": "none"}),
        ('{"actionType": "email", "title": "s", "recipient": "a@b.example", "body": "b"}', "email", {}),
    ],
)
def test_an_answer_is_flattened_for_staging(raw: str, kind: str, fields: dict[str, Any]) -> None:
    """Each type's answer becomes the one flat intent the tick stages, absent fields empty."""
    union: Any = ActionAnswer
    out = to_intent(msgspec.json.decode(raw, type=union))
    assert out.action_type == kind
    for name, value in fields.items():
        assert getattr(out, name) == value


def test_review_schema_without_open_tasks_admits_no_priority_and_unlinked_steps() -> None:
    """With nothing open, no priority can be written and a plan step links to no task."""
    schema = review_schema([])
    assert schema["properties"]["priorities"]["maxItems"] == 0
    assert schema["properties"]["plan"]["items"]["properties"]["taskId"] == {"type": "null"}
