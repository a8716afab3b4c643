"""Operator prompts are versioned files with a recorded hash; model-output schemas are strict."""

from __future__ import annotations

import hashlib
from importlib import resources

import msgspec
import pytest

from tickloop.errors import ConfigError, ValidationError
from tickloop.operator.prompts import CURRENT, load_prompt
from tickloop.operator.schemas import (
    FAILURE_TYPES,
    ActionIntentOut,
    CritiqueOut,
    ReviewOut,
    check_critique,
    json_schema,
)


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
    """A plan of more than 20 steps is refused."""
    steps = ",".join('{"title": "s"}' for _ in range(21))
    with pytest.raises(msgspec.ValidationError, match="plan"):
        msgspec.json.decode(('{"plan": [%s]}' % steps).encode(), type=ReviewOut)  # noqa: UP031
