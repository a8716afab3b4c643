"""Policies: a named, immutable UTF-8 time-step text, compiled and frozen at startup."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tickloop.errors import PolicyError

#: The built-in policy: the literal time-step text of the spec.
DEFAULT_POLICY_ID = "default"
DEFAULT_POLICY_TEXT = "tick"

MAX_POLICY_ID_CHARS = 64
MAX_POLICY_TEXT_BYTES = 4096

_POLICY_ID = re.compile(r"[A-Za-z][A-Za-z0-9._-]{0,63}", re.ASCII)


def is_valid_policy_id(value: str) -> bool:
    """True for an ASCII letter followed by up to 63 ASCII letters, digits, dots, underscores, hyphens."""
    return _POLICY_ID.fullmatch(value) is not None


@dataclass(frozen=True, slots=True)
class CompiledPolicy:
    """A policy as a run captures it. Immutable: later config changes cannot reach a running step."""

    id: str
    time_step_text: str
    time_step_bytes: int
    time_step_sha256: str  #: lowercase hex; the field name carries the algorithm, as in the spec

    def to_dict(self) -> dict[str, Any]:
        """The spec's compiled form: ``{id, timeStepText, timeStepBytes, timeStepSha256}``."""
        return {
            "id": self.id,
            "timeStepText": self.time_step_text,
            "timeStepBytes": self.time_step_bytes,
            "timeStepSha256": self.time_step_sha256,
        }


def compile_policy(policy_id: object, text: object) -> CompiledPolicy:
    """Validate one policy and freeze it, or raise ``PolicyError`` naming the rule it broke."""
    if not isinstance(policy_id, str) or not is_valid_policy_id(policy_id):
        raise PolicyError(
            f"policy id {policy_id!r} is invalid: it must start with an ASCII letter and have at most "
            f"{MAX_POLICY_ID_CHARS} ASCII letters, digits, '.', '_' or '-'",
            rule="policy.id_invalid",
        )
    encoded = _policy_text(policy_id, text)
    return CompiledPolicy(
        id=policy_id,
        time_step_text=encoded.decode("utf-8"),
        time_step_bytes=len(encoded),
        time_step_sha256=hashlib.sha256(encoded).hexdigest(),
    )


def _policy_text(policy_id: str, text: object) -> bytes:
    """The UTF-8 bytes of a policy's text, or ``PolicyError`` if it is not a string, blank or too long."""
    if not isinstance(text, str):
        raise PolicyError(
            f"policy {policy_id!r}: the text must be a string, got {type(text).__name__}",
            rule="policy.text_not_string",
        )
    encoded = _utf8(policy_id, text)
    if not text.strip():
        raise PolicyError(f"policy {policy_id!r}: the text is blank", rule="policy.text_blank")
    if len(encoded) > MAX_POLICY_TEXT_BYTES:
        raise PolicyError(
            f"policy {policy_id!r}: the text is {len(encoded)} UTF-8 bytes; "
            f"the limit is {MAX_POLICY_TEXT_BYTES}",
            rule="policy.text_too_long",
        )
    return encoded


def _utf8(policy_id: str, text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PolicyError(
            f"policy {policy_id!r}: the text is not well-formed Unicode "
            f"(lone surrogate at index {exc.start})",
            rule="policy.text_not_unicode",
        ) from None


class PolicySet(Mapping[str, CompiledPolicy]):
    """The compiled policies of one plugin instance: the built-in ``default`` plus configured ones.

    It copies what it is given, so mutating the source mapping afterwards changes nothing here.
    """

    __slots__ = ("_policies",)

    def __init__(self, configured: Mapping[str, object] | None = None) -> None:
        policies = {DEFAULT_POLICY_ID: compile_policy(DEFAULT_POLICY_ID, DEFAULT_POLICY_TEXT)}
        for policy_id, text in (configured or {}).items():
            if policy_id == DEFAULT_POLICY_ID:
                raise PolicyError(
                    f"policy {DEFAULT_POLICY_ID!r} is built in (the literal text "
                    f"{DEFAULT_POLICY_TEXT!r}); give your policy another id",
                    rule="policy.builtin_redefined",
                )
            policies[policy_id] = compile_policy(policy_id, text)
        self._policies = policies

    def __getitem__(self, policy_id: str) -> CompiledPolicy:
        return self._policies[policy_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._policies)

    def __len__(self) -> int:
        return len(self._policies)
