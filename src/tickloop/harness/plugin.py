"""The plugin API: register commands, observe terminals, enqueue follow-ups, be disposed.

A plugin sees the agent only through its ``PluginHost``. Follow-ups it enqueues must carry its own
source (``{"kind": "plugin", "plugin": <name>}``), so history can always tell them from a person's
messages. Follow-ups queue like any input: they start at the next turn boundary, never mid-turn.

A plugin may also define ``on_person_message(message)``: the Agent calls it when a person submits a
message, before the message queues (the tick plugin cancels a pending time step there).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Protocol

from tickloop.clock import Clock
from tickloop.errors import ConfigError
from tickloop.harness.commands import Handler
from tickloop.harness.events import Notice
from tickloop.protocol.envelope import Message, Source
from tickloop.protocol.predicates import SessionView

if TYPE_CHECKING:
    from tickloop.harness.agent import Agent
    from tickloop.harness.session import Turn


class Plugin(Protocol):
    """What an Agent calls on a plugin."""

    #: the plugin's name; its follow-ups carry ``Source("plugin", name)``
    name: str

    def start(self, host: PluginHost) -> None:
        """Register commands; called once, from the running event loop, before any input."""
        ...

    def on_terminal(self, turn: Turn) -> None:
        """A turn's terminal is durable (``turn.terminal`` is set)."""
        ...

    @property
    def busy(self) -> bool:
        """True while the plugin has work pending (a scripted driver waits for it)."""
        ...

    def dispose(self) -> None:
        """Cancel anything pending and release resources; called once when the agent closes."""
        ...


class PluginHost:
    """One plugin's narrow view of its agent."""

    def __init__(self, agent: Agent, plugin: Plugin) -> None:
        self._agent = agent
        self.source = Source("plugin", plugin.name)

    @property
    def session_id(self) -> str:
        return self._agent.session.session_id

    @property
    def clock(self) -> Clock:
        return self._agent.clock

    def register_command(self, name: str, handler: Handler, help: str) -> None:  # noqa: A002
        self._agent.commands.register(name, handler, help)

    def view(self) -> SessionView:
        return self._agent.session.view()

    def idle(self) -> bool:
        """No active turn and nothing queued: a follow-up enqueued now starts the next turn."""
        return self._agent.turn_active is False and self._agent.queued == 0

    def state_token(self) -> Hashable:
        """Changes whenever the session or the input queue changes ("state is still identical")."""
        return (self._agent.session.revision, self._agent.queued, self._agent.turn_active)

    def enqueue(self, message: Message) -> None:
        """Queue a follow-up; it must be tagged with this plugin's source."""
        if message.source != self.source:
            raise ConfigError(
                f"plugin {self.source.plugin!r} may only enqueue messages tagged with its source"
            )
        self._agent.enqueue(message)

    def notice(self, text: str, *, error: bool = False) -> None:
        self._agent.emit(Notice(text, error=error))

    def changed(self) -> None:
        """Tell the agent the plugin's ``busy`` may have changed."""
        self._agent.notify_changed()
