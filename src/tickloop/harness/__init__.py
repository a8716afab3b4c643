"""The harness: sessions, turns and terminals, the asyncio Agent, the command plane, plugins.

Embedding::

    from tickloop.harness import Agent, TickOptions, TickPlugin, memory_session
    from tickloop.models import OfflineModel
    from tickloop.testing import LedgerCapture

    plugin = TickPlugin(TickOptions.from_mapping({"delayMs": 0}), LedgerCapture())
    agent = Agent(OfflineModel(), memory_session("demo"), plugins=[plugin])
    await agent.start()
    agent.submit("hello"); await agent.wait_idle()
    agent.submit("/tick 3"); await agent.wait_idle()
    await agent.close()

``open_chat_agent`` builds the same thing on files (session JSONL + audit ledger), as ``tickloop
chat`` does. No goal driver, auto-continue or compaction exists here: without the tick plugin,
nothing reaches the model unless a person submits a line.
"""

from tickloop.harness.agent import Agent
from tickloop.harness.build import open_chat_agent, open_tick_plugin
from tickloop.harness.commands import CommandPlane, CommandResult, is_command
from tickloop.harness.events import AgentEvent, Listener, Notice, TextStreamed, TurnEnded, TurnStarted
from tickloop.harness.jsonl import SessionError
from tickloop.harness.plugin import Plugin, PluginHost
from tickloop.harness.session import (
    DEFAULT_SESSIONS_DIR,
    Session,
    Terminal,
    Turn,
    memory_session,
    open_session,
    session_path,
)
from tickloop.harness.tick_ledger import NullLedger
from tickloop.harness.tick_options import TickOptions
from tickloop.harness.tick_plugin import TickPlugin
from tickloop.harness.timers import LoopTimers, Timers
from tickloop.presence import ChatPresence, chat_active, presence_path

__all__ = [
    "DEFAULT_SESSIONS_DIR",
    "Agent",
    "AgentEvent",
    "ChatPresence",
    "CommandPlane",
    "CommandResult",
    "Listener",
    "LoopTimers",
    "Notice",
    "NullLedger",
    "Plugin",
    "PluginHost",
    "Session",
    "SessionError",
    "Terminal",
    "TextStreamed",
    "TickOptions",
    "TickPlugin",
    "Timers",
    "Turn",
    "TurnEnded",
    "TurnStarted",
    "chat_active",
    "is_command",
    "memory_session",
    "open_chat_agent",
    "open_session",
    "open_tick_plugin",
    "presence_path",
    "session_path",
]
