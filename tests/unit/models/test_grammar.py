"""The schema llama-cpp-python's grammar sees: narrowed so that what it lets through is valid."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickloop.models.grammar import GRAMMAR_MAX_LENGTH, grammar_schema, string_pattern
from tickloop.models.structured import schema_for
from tickloop.operator.handlers import HANDLERS
from tickloop.operator.schemas import (
    ANSWER_TYPES,
    NOT_PROPOSABLE,
    NOTHING_TO_DO,
    RECIPIENT_PATTERN,
    ActionIntentOut,
    ConsolidationOut,
    CritiqueOut,
    ReviewOut,
    action_schema,
    review_schema,
)


def test_an_optional_bounded_number_is_left_out_and_the_callers_schema_is_untouched() -> None:
    """ActionIntentOut.amount (a number >= 0, which the grammar cannot bound) is left out, so a
    grammar-bound model cannot write a negative amount; the caller's schema still has it."""
    schema = schema_for(ActionIntentOut)
    before = copy.deepcopy(schema)
    narrowed = grammar_schema(schema)
    assert "amount" not in narrowed["properties"]
    assert "amount" not in narrowed["$defs"]["ActionIntentOut"]["properties"]
    assert narrowed["additionalProperties"] is False
    assert narrowed["required"] == ["actionType", "title", "recipient", "body"]
    assert set(narrowed["properties"]) == set(schema["properties"]) - {"amount"}
    assert schema == before


def test_a_small_integer_range_becomes_the_enum_of_its_values() -> None:
    """A priority 0..100 becomes the 101 values the grammar can enforce exactly."""
    narrowed = grammar_schema(review_schema([3, 5]))
    item = narrowed["properties"]["priorities"]["items"]["properties"]
    assert item["priority"] == {"enum": list(range(101))}
    assert item["taskId"] == {"enum": [3, 5]}


def test_the_fast_schema_keeps_one_member_per_action_type_under_the_grammar() -> None:
    """Narrowed for llama-cpp-python, the action schema is still oneOf the types, each with only its own
    fields (a note has no amount, vendor or recipient), strings capped, a spend's amount required."""
    narrowed = grammar_schema(action_schema())
    members = {m["properties"]["actionType"]["enum"][0]: m for m in narrowed["oneOf"]}
    assert set(members) == set(ANSWER_TYPES)
    assert set(members["note"]["properties"]) == {"actionType", "title", "body", "rationale"}
    assert members["spend"]["required"] == ["actionType", "title", "vendor", "amount"]
    assert members["email"]["properties"]["body"]["maxLength"] == GRAMMAR_MAX_LENGTH
    assert "$ref" not in json.dumps(narrowed)


def test_a_required_bounded_number_keeps_its_bounds() -> None:
    """A required property cannot be left out: it keeps its bounds (the answer is still validated)."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "n": {"type": "number", "minimum": 0},
            "wide": {"type": "integer", "minimum": 0, "maximum": 10_000},
            "odd": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 4},
        },
        "required": ["n", "wide", "odd"],
    }
    narrowed = grammar_schema(schema)["properties"]
    assert narrowed["n"] == {"type": "number", "minimum": 0}
    assert narrowed["wide"] == {"type": "integer", "minimum": 0, "maximum": 10_000}
    assert narrowed["odd"] == {"enum": [1, 2, 3]}


def test_every_string_bound_is_capped_and_shorter_ones_are_kept() -> None:
    """Long string bounds are capped for the grammar; minimum lengths and short bounds stay."""
    schema = {
        "type": "object",
        "properties": {
            "long": {"type": "string", "maxLength": 20_000},
            "short": {"type": "string", "minLength": 1, "maxLength": 8},
        },
    }
    narrowed = grammar_schema(schema)["properties"]
    assert narrowed["long"]["maxLength"] == GRAMMAR_MAX_LENGTH
    assert (narrowed["short"]["minLength"], narrowed["short"]["maxLength"]) == (1, 8)


@pytest.mark.parametrize(
    ("string", "pattern"),
    [
        ({"type": "string"}, string_pattern(0, None)),
        ({"type": "string", "maxLength": 20_000}, string_pattern(0, GRAMMAR_MAX_LENGTH)),
        ({"type": "string", "minLength": 1, "maxLength": 8}, string_pattern(1, 8)),
        ({"type": "string", "pattern": "^[a-z]+$"}, "^[a-z]+$"),  # the schema's own pattern stays
        ({"type": "string", "enum": ["a", "b"]}, None),
        ({"type": "string", "const": "x"}, None),
        ({"type": "string", "format": "date"}, None),
    ],
)
def test_free_text_strings_get_a_pattern_without_quotes_backslashes_or_control_characters(
    string: dict[str, Any], pattern: str | None
) -> None:
    """llama-cpp-python's grammar lets a string hold any character but `"` and `\\`, raw control
    characters included, which JSON forbids (SmolLM2 wrote one: 1 intent in 20 failed to decode).
    Free-text strings get a pattern that leaves them out, with the same length bounds."""
    narrowed = grammar_schema({"type": "object", "properties": {"s": string}})["properties"]["s"]
    assert narrowed.get("pattern") == pattern


def test_every_free_text_string_of_an_action_intent_gets_the_pattern() -> None:
    narrowed = grammar_schema(schema_for(ActionIntentOut))["properties"]
    assert narrowed["title"]["pattern"] == string_pattern(1, GRAMMAR_MAX_LENGTH)
    assert narrowed["rationale"]["pattern"] == string_pattern(0, GRAMMAR_MAX_LENGTH)
    assert narrowed["recipient"]["pattern"] == RECIPIENT_PATTERN


def test_the_action_type_is_written_as_one_of_the_registered_handler_types() -> None:
    """The grammar sees the action type as the enum of handler types (and none), not a free pattern,
    so a constrained model can only propose an action the executor knows."""
    narrowed = grammar_schema(schema_for(ActionIntentOut))["properties"]["actionType"]
    assert narrowed["enum"] == [*(k for k in HANDLERS if k not in NOT_PROPOSABLE), NOTHING_TO_DO]
    assert "pattern" not in narrowed


@given(st.from_regex(string_pattern(0, GRAMMAR_MAX_LENGTH), fullmatch=True))
def test_whatever_the_pattern_lets_the_model_write_is_a_valid_json_string(text: str) -> None:
    """Written raw between quotes, as the grammar has the model write it, any text the pattern
    allows decodes (strict JSON) to itself."""
    assert msgspec.json.decode(('{"s": "' + text + '"}').encode(), type=dict[str, str]) == {"s": text}


@pytest.mark.parametrize("character", ["\n", "\t", "\x00", "\x1f", '"', "\\"])
def test_the_characters_the_pattern_leaves_out_break_a_raw_json_string(character: str) -> None:
    """Each excluded character, written raw inside a string, makes the JSON invalid or changes what
    it says (a backslash starts an escape), so the pattern must leave it out."""
    text = "a" + character + "b"
    assert re.fullmatch(string_pattern(0, None), text) is None
    try:
        decoded = msgspec.json.decode(('{"s": "' + text + '"}').encode(), type=dict[str, str])
    except (msgspec.DecodeError, msgspec.ValidationError):
        return
    assert decoded != {"s": text}


def _patterns(value: Any) -> list[str]:
    if isinstance(value, list):
        return [p for item in value for p in _patterns(item)]
    if not isinstance(value, dict):
        return []
    own = [value["pattern"]] if isinstance(value.get("pattern"), str) else []
    return own + [p for item in value.values() for p in _patterns(item)]


@pytest.mark.parametrize("kind", [ActionIntentOut, ReviewOut, ConsolidationOut, CritiqueOut])
def test_no_pattern_the_grammar_sees_uses_a_group_llama_cpp_python_refuses(kind: type[Any]) -> None:
    """llama-cpp-python's converter refuses `(?` in a pattern and then silently drops the whole
    grammar: every pattern it is sent uses plain groups only, and each still matches as before."""
    patterns = _patterns(grammar_schema(schema_for(kind)))
    assert patterns
    assert not [p for p in patterns if "(?" in p]
    # An escape outside a character class (``\.``) is copied into a GBNF literal, where llama.cpp's
    # parser refuses it (and llama-cpp-python's server then crashed): escapes only inside [...].
    assert not [p for p in patterns if "\\" in re.sub(r"\[(?:\\.|[^\]\\])*\]", "", p)]


def test_a_non_capturing_group_becomes_a_plain_one_that_matches_the_same() -> None:
    """The rewrite keeps what a pattern matches."""
    narrowed = grammar_schema({"type": "string", "pattern": "^(?:ab|c)+$"})
    assert narrowed["pattern"] == "^(ab|c)+$"
    for text in ("ab", "cab", "abc", "", "a", "ca"):
        assert bool(re.fullmatch("(?:ab|c)+", text)) == bool(re.fullmatch(narrowed["pattern"][1:-1], text))
