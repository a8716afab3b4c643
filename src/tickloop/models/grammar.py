"""The JSON schema as llama-cpp-python's grammar should see it (``responseFormat = "json_object_schema"``).

llama-cpp-python compiles the schema into a grammar that decides which tokens the model may write.
Its converter enforces structure, required keys, string lengths, patterns and enums, but ignores
numeric bounds (``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``, ``multipleOf``),
and unrolls a long string bound into nested rules. ``grammar_schema`` rewrites the schema so that
every answer the grammar lets through (and that ``max_tokens`` does not cut off) also passes the full
schema, narrowing what the model can say rather than letting it say something invalid:

- every string ``maxLength`` is capped at ``GRAMMAR_MAX_LENGTH``;
- every free-text string (no ``pattern``, ``enum``, ``const`` or ``format`` of its own) gets a
  ``pattern`` without quotes, backslashes and control characters (``string_pattern``), with the
  same length bounds: the converter's own string rule lets a raw newline through, which JSON
  forbids (SmolLM2 wrote one in a ``rationale``: 1 intent in 20 did not decode);
- a non-capturing group ``(?:...)`` in a pattern becomes a plain group: llama-cpp-python's converter
  refuses ``(?`` and then silently drops the WHOLE grammar for plain JSON (SmolLM2 wrote keys the
  schema forbids); a plain group matches the same strings;
- a string with both an ``enum`` and a ``pattern`` (``ActionIntentOut.actionType``) keeps only the
  enum: the converter then writes exactly one of the listed values;
- a bounded integer range of at most ``GRAMMAR_MAX_ENUM`` values becomes the enum of those values;
- any other *optional* property whose numbers carry bounds is left out (the schemas forbid unknown
  keys, so the model then cannot write it). ``ActionIntentOut.amount`` (a number >= 0) is one:
  SmolLM2 wrote ``"amount": -1`` under the grammar, failing 1 intent in 20. A required property
  keeps its bounds, and the answer is still validated against the full schema (fail closed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: the longest string a grammar-constrained answer may carry in one field
GRAMMAR_MAX_LENGTH = 96
#: the widest integer range written out as an enum (a priority 0..100 is 101 values)
GRAMMAR_MAX_ENUM = 256
_NUMBER_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
#: a string with any of these already says what it may hold
_STRING_SHAPES = ("pattern", "enum", "const", "format")


def string_pattern(min_length: int, max_length: int | None) -> str:
    """The free text a grammar may let the model write between a string's quotes: no ``"``, no
    backslash (an escape would be the model's to get right), no control character (JSON forbids them
    raw) and no DEL (llama.cpp's own JSON rule leaves it out too). Whatever it matches, written raw
    between quotes, is a JSON string that decodes to exactly that text."""
    count = f"{{{min_length},{'' if max_length is None else max_length}}}"
    return rf'^[^"\\\x00-\x1f\x7f]{count}$'


def grammar_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` narrowed for llama-cpp-python's grammar (see the module docstring); the caller's
    schema is not changed.

    Why the cap: llama.cpp's converter unrolls ``maxLength: N`` into N nested optional rules; with
    llama-cpp-python 0.3.36 a bound of 2,000 (ActionIntentOut.rationale; its body has 20,000)
    crashes the server with SIGSEGV, 1,000 works. Dropping the bound instead lets a small model
    ramble in one string until ``max_tokens`` cuts the JSON off (SmolLM2-135M copies the context
    packet into ``body``: 8 of 20 intents valid at 128 tokens); a cap of 96 closes each string in
    time. Longer strings need ``json_schema`` (llama.cpp's C++ server) or ``none``.
    """
    narrowed = _narrowed(schema)
    return narrowed if isinstance(narrowed, dict) else dict(schema)


def _narrowed(value: Any) -> Any:
    if isinstance(value, list):
        return [_narrowed(item) for item in value]
    if not isinstance(value, Mapping):
        return value
    out = {key: _narrowed(item) for key, item in value.items()}
    if "enum" in out and "pattern" in out:
        del out["pattern"]
    if isinstance(out.get("pattern"), str):
        out["pattern"] = out["pattern"].replace("(?:", "(")
    bound = out.get("maxLength")
    if isinstance(bound, int) and bound > GRAMMAR_MAX_LENGTH:
        out["maxLength"] = bound = GRAMMAR_MAX_LENGTH
    if out.get("type") == "string" and not any(key in out for key in _STRING_SHAPES):
        least = out.get("minLength")
        out["pattern"] = string_pattern(
            least if isinstance(least, int) else 0, bound if isinstance(bound, int) else None
        )
    values = _integer_range(out)
    if values is not None:
        return {key: item for key, item in out.items() if key not in (*_NUMBER_BOUNDS, "type")} | {
            "enum": values
        }
    properties = out.get("properties")
    if isinstance(properties, Mapping):
        required = set(out.get("required") or ())
        out["properties"] = {
            name: prop for name, prop in properties.items() if name in required or not _has_bounds(prop)
        }
    return out


def _integer_range(schema: Mapping[str, Any]) -> list[int] | None:
    """The values of ``{"type": "integer", "minimum": a, "maximum": b}`` if there are few enough."""
    if schema.get("type") != "integer" or "multipleOf" in schema:
        return None
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(schema.get("exclusiveMinimum"), int):
        low = schema["exclusiveMinimum"] + 1
    if isinstance(schema.get("exclusiveMaximum"), int):
        high = schema["exclusiveMaximum"] - 1
    if not isinstance(low, int) or not isinstance(high, int) or not 0 < high - low + 1 <= GRAMMAR_MAX_ENUM:
        return None
    return list(range(low, high + 1))


def _has_bounds(schema: Any) -> bool:
    """Whether a (narrowed) schema still holds a numeric bound the grammar would ignore."""
    if isinstance(schema, list):
        return any(_has_bounds(item) for item in schema)
    if not isinstance(schema, Mapping):
        return False
    if any(key in schema for key in _NUMBER_BOUNDS):
        return True
    for key, item in schema.items():
        named = key in ("properties", "$defs") and isinstance(item, Mapping)  # name -> schema
        if any(_has_bounds(v) for v in item.values()) if named else _has_bounds(item):
            return True
    return False
