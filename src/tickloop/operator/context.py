"""The context packet a model call sees: fresh each tick, size-bounded, and honest about taint.

The packet is rendered as canonical JSON inside the user message, after a fixed marker, so that a
deterministic model (the offline one) can read it back. Its size is capped: lists keep their newest
entries and long strings are cut, until the packet fits ``budget_bytes`` (tokens ~ bytes / 4).
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
from msgspec.structs import asdict, replace

MARKER = "CONTEXT PACKET (JSON):"
DEFAULT_BUDGET_BYTES = 16_000
_MAX_STRING = 600
#: The most entries of each list a packet can carry, newest kept (the critiques: the last three).
LIST_CAPS = {"observations": 40, "recent_progress": 20, "board": 60, "tried_and_failed": 40, "critiques": 3}


class ContextPacket(msgspec.Struct, frozen=True):
    """Everything a tick tells the model, re-read from the store at the start of the tick."""

    goal: dict[str, Any]  #: the active goal model: version, title, body
    tick: str  #: fast, slow, consolidate, critique
    current_step: dict[str, Any] | None = None  #: the first pending plan step
    replan_needed: bool = False  #: no plan: the action is derived and a re-plan is flagged
    state_of_play: str | None = None  #: the latest nightly summary, read first
    board: list[dict[str, Any]] = msgspec.field(default_factory=list)
    recent_progress: list[dict[str, Any]] = msgspec.field(default_factory=list)
    observations: list[dict[str, Any]] = msgspec.field(default_factory=list)  #: each says tainted or not
    tried_and_failed: list[str] = msgspec.field(default_factory=list)  #: normalised action keys
    critiques: list[dict[str, Any]] = msgspec.field(
        default_factory=list
    )  #: the last three: do not repeat these
    outcome: str | None = None  #: for a critique: the label already set deterministically

    def render(self, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> str:
        """The packet as one JSON text of at most ``budget_bytes`` UTF-8 bytes.

        Each list first keeps only its newest ``LIST_CAPS`` entries (so the work is bounded however
        long the history is), then the longest list sheds its oldest quarter until the packet fits.
        """
        packet = _cut_strings(
            replace(self, **{name: getattr(self, name)[-cap:] for name, cap in LIST_CAPS.items()})
        )
        text = _dump(packet)
        while len(text.encode("utf-8")) > budget_bytes and any(getattr(packet, name) for name in LIST_CAPS):
            longest = max(LIST_CAPS, key=lambda name: len(_dump(getattr(packet, name))))
            entries = getattr(packet, longest)
            packet = replace(packet, **{longest: entries[max(1, len(entries) // 4) :]})  # drop the oldest
            text = _dump(packet)
        return text


def estimated_tokens(text: str) -> int:
    """The project's token estimate: UTF-8 bytes / 4."""
    return len(text.encode("utf-8")) // 4


def user_message(packet: ContextPacket, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> str:
    """The user message of a tick's model call: a fixed marker, then the packet."""
    return f"{MARKER}\n{packet.render(budget_bytes)}"


def read_packet(message: str) -> dict[str, Any] | None:
    """Read a packet back out of a user message (for deterministic models); None if absent."""
    _, marker, body = message.partition(MARKER)
    if not marker:
        return None
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _dump(value: Any) -> str:
    if isinstance(value, ContextPacket):
        value = asdict(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _cut_strings(packet: ContextPacket) -> ContextPacket:
    data = asdict(packet)
    cut = _cut(data)
    return ContextPacket(**cut)


def _cut(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= _MAX_STRING else value[:_MAX_STRING] + "…"
    if isinstance(value, dict):
        return {k: _cut(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut(v) for v in value]
    return value
