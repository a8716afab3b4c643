"""The time-step message envelope, and counting time steps by source (never by text)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tickloop.protocol.policy import CompiledPolicy

PLUGIN_NAME = "tickloop"


@dataclass(frozen=True, slots=True)
class Source:
    """Who produced a message: ``user``, ``assistant``, ``tool`` or a ``plugin`` with its name."""

    kind: str
    plugin: str | None = None

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind} if self.plugin is None else {"kind": self.kind, "plugin": self.plugin}


USER_SOURCE = Source("user")
PLUGIN_SOURCE = Source("plugin", PLUGIN_NAME)


@dataclass(frozen=True, slots=True)
class Message:
    """One message envelope: role, text content parts, source."""

    role: str
    content: tuple[str, ...]
    source: Source
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "".join(self.content)

    def to_dict(self) -> dict[str, Any]:
        """The observable shape: ``{"role", "content": [{"type": "text", "text"}], "source"}``."""
        return {
            "role": self.role,
            "content": [{"type": "text", "text": part} for part in self.content],
            "source": self.source.to_dict(),
        }


def time_step_message(policy: CompiledPolicy) -> Message:
    """The generated follow-up: an ordinary user-role message whose source identifies the plugin."""
    return Message(role="user", content=(policy.time_step_text,), source=PLUGIN_SOURCE)


def is_time_step(message: Message | Mapping[str, Any]) -> bool:
    """True for a plugin time step. Decided by source alone: a person typing ``tick`` is not one."""
    if isinstance(message, Message):
        return message.role == "user" and message.source == PLUGIN_SOURCE
    source = message.get("source")
    return (
        message.get("role") == "user"
        and isinstance(source, Mapping)
        and source.get("kind") == "plugin"
        and source.get("plugin") == PLUGIN_NAME
    )


def count_time_steps(history: Iterable[Message | Mapping[str, Any]]) -> int:
    """How many plugin time steps a history holds."""
    return sum(1 for message in history if is_time_step(message))
