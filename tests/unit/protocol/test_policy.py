"""Policies compile to frozen values; invalid ids and texts are refused with the rule they broke."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tickloop.errors import PolicyError
from tickloop.protocol.policy import PolicySet, compile_policy, is_valid_policy_id

# Golden vectors: part of the ledger contract (timeStepSha256 is lowercase hex of the UTF-8 bytes).
GOLDEN = [
    ("tick", 4, "55a4bc5be68ea5c30cbe4d07e3bf951163b5a207dfd628ea53a2eb21072a9f3b"),
    ("时间步 · tick ⏱", 21, "e27711acb177a2881f6321625ab8cacf130c4c4474d022be991e0428d711aa61"),
]


@pytest.mark.parametrize(("text", "size", "sha"), GOLDEN)
def test_compiled_policy_matches_golden_vectors(text: str, size: int, sha: str) -> None:
    """The byte count and sha256 a ledger records are exactly those of the UTF-8 text."""
    policy = compile_policy("p", text)
    assert (policy.time_step_bytes, policy.time_step_sha256) == (size, sha)
    assert policy.to_dict() == {"id": "p", "timeStepText": text, "timeStepBytes": size, "timeStepSha256": sha}


def test_builtin_default_policy_is_the_literal_tick() -> None:
    """`/tick` without --policy sends the literal text `tick`."""
    assert PolicySet()["default"].time_step_text == "tick"


def test_mutating_the_source_config_changes_nothing_compiled() -> None:
    """A run's policy cannot change because someone edited the configuration object afterwards."""
    source = {"reflective-en": "tick — think"}
    policies = PolicySet(source)
    source["reflective-en"] = "something else"
    source["new"] = "added later"
    assert policies["reflective-en"].time_step_text == "tick — think"
    assert "new" not in policies
    with pytest.raises(dataclasses.FrozenInstanceError):
        policies["reflective-en"].time_step_text = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("policy_id", "text", "rule"),
    [
        ("9lives", "tick", "policy.id_invalid"),
        ("", "tick", "policy.id_invalid"),
        ("a" * 65, "tick", "policy.id_invalid"),
        ("a b", "tick", "policy.id_invalid"),
        ("ünicode", "tick", "policy.id_invalid"),
        ("ok", "", "policy.text_blank"),
        ("ok", " \n\t ", "policy.text_blank"),
        ("ok", "tick\ud800", "policy.text_not_unicode"),
        ("ok", "x" * 4097, "policy.text_too_long"),
        ("ok", "é" * 2049, "policy.text_too_long"),
        ("ok", 42, "policy.text_not_string"),
    ],
)
def test_invalid_policies_are_refused_with_their_rule(policy_id: str, text: object, rule: str) -> None:
    """Bad ids and texts fail at startup, naming the policy and the rule."""
    with pytest.raises(PolicyError) as caught:
        compile_policy(policy_id, text)
    assert caught.value.rule == rule


def test_limits_are_inclusive() -> None:
    """A 64-character id and a 4,096-byte text are the largest accepted."""
    assert compile_policy("a" * 64, "x" * 4096).time_step_bytes == 4096
    assert compile_policy("p", "é" * 2048).time_step_bytes == 4096


def test_redefining_the_builtin_default_is_refused() -> None:
    """The built-in `default` always means `tick`; a configured policy needs its own id."""
    with pytest.raises(PolicyError) as caught:
        PolicySet({"default": "something"})
    assert caught.value.rule == "policy.builtin_redefined"


@settings(max_examples=2_000, deadline=None)
@given(st.text(max_size=80))
def test_policy_id_validator_agrees_with_the_spec(candidate: str) -> None:
    """An id is valid exactly when it is an ASCII letter then up to 63 ASCII letters/digits/._-."""
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
    expected = (
        0 < len(candidate) <= 64
        and candidate[0].isascii()
        and candidate[0].isalpha()
        and all(c in allowed for c in candidate)
    )
    assert is_valid_policy_id(candidate) is expected


@settings(max_examples=2_000, deadline=None)
@given(st.text(max_size=300))
def test_any_text_compiles_or_raises_only_policy_error(text: str) -> None:
    """Compiling any text yields a frozen policy whose size and hash agree, or a PolicyError."""
    try:
        policy = compile_policy("p", text)
    except PolicyError as exc:
        assert exc.rule in {"policy.text_blank", "policy.text_not_unicode"}
    else:
        assert policy.time_step_bytes == len(text.encode("utf-8"))


@pytest.mark.parametrize(
    ("policy_id", "text", "rule", "says"),
    [
        (
            "1bad",
            "tick",
            "policy.id_invalid",
            r"policy id '1bad' is invalid: it must start with an ASCII letter",
        ),
        ("p", 7, "policy.text_not_string", r"policy 'p': the text must be a string, got int"),
        (
            "p",
            "a\ud800b",
            "policy.text_not_unicode",
            r"policy 'p': .*not well-formed Unicode \(lone surrogate at index 1\)",
        ),
        ("p", " \n\t", "policy.text_blank", r"policy 'p': the text is blank"),
        (
            "p",
            "x" * 4097,
            "policy.text_too_long",
            r"policy 'p': the text is 4097 UTF-8 bytes; the limit is 4096",
        ),
    ],
)
def test_each_refusal_names_the_policy_the_rule_and_the_numbers(
    policy_id: object, text: object, rule: str, says: str
) -> None:
    """A refused policy's message names the id and what was wrong, with the numbers, and its rule id."""
    with pytest.raises(PolicyError, match=says) as caught:
        compile_policy(policy_id, text)
    assert caught.value.rule == rule
