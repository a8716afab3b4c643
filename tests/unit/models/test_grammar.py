"""The schema llama-cpp-python's grammar sees: narrowed so that what it lets through is valid."""

from __future__ import annotations

import copy
from typing import Any

from tickloop.models.grammar import GRAMMAR_MAX_LENGTH, grammar_schema
from tickloop.models.structured import schema_for
from tickloop.operator.schemas import ActionIntentOut, ReviewOut


def test_an_optional_bounded_number_is_left_out_and_the_callers_schema_is_untouched() -> None:
    """ActionIntentOut.amount (a number >= 0, which the grammar cannot bound) is left out, so a
    grammar-bound model cannot write a negative amount; the caller's schema still has it."""
    schema = schema_for(ActionIntentOut)
    before = copy.deepcopy(schema)
    narrowed = grammar_schema(schema)
    assert "amount" not in narrowed["properties"]
    assert "amount" not in narrowed["$defs"]["ActionIntentOut"]["properties"]
    assert narrowed["additionalProperties"] is False
    assert narrowed["required"] == ["actionType", "title"]
    assert set(narrowed["properties"]) == set(schema["properties"]) - {"amount"}
    assert schema == before


def test_a_small_integer_range_becomes_the_enum_of_its_values() -> None:
    """A priority 0..100 becomes the 101 values the grammar can enforce exactly."""
    narrowed = grammar_schema(schema_for(ReviewOut))
    values = narrowed["properties"]["priorities"]["additionalProperties"]
    assert values == {"enum": list(range(101))}


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
    assert narrowed["long"] == {"type": "string", "maxLength": GRAMMAR_MAX_LENGTH}
    assert narrowed["short"] == {"type": "string", "minLength": 1, "maxLength": 8}
