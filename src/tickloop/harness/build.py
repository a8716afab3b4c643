"""Assemble a chat: session + model + tick plugin (with its on-disk ledger) + Agent.

This is what ``tickloop chat`` calls, and what an embedder calls to get the same behaviour::

    agent = open_chat_agent(model, sessions_dir=Path(".tickloop-sessions"), session_id="demo",
                            tick=TickOptions.from_settings(settings.tick))
    await agent.start()
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tickloop.audit import audit_key, open_session_ledger, read_ledger
from tickloop.clock import Clock, SystemClock
from tickloop.harness.agent import Agent
from tickloop.harness.events import Listener
from tickloop.harness.plugin import Plugin
from tickloop.harness.session import open_session
from tickloop.harness.tick_options import TickOptions
from tickloop.harness.tick_plugin import TickPlugin
from tickloop.harness.timers import Timers
from tickloop.harness.tools.base import Toolbox
from tickloop.models.base import ChatModel


def open_tick_plugin(options: TickOptions, session_id: str, *, timers: Timers | None = None) -> TickPlugin:
    """A tick plugin writing to ``<auditDir>/session-<id>.jsonl``; it closes a crashed run on start."""
    key = audit_key(options.audit_key_env) if options.audit_key_env else None
    ledger = open_session_ledger(options.audit_dir, session_id, chain=options.chain, key=key)
    prior = read_ledger(ledger.path).records()
    return TickPlugin(options, ledger, timers=timers, prior_records=prior)


def open_chat_agent(
    model: ChatModel,
    *,
    sessions_dir: Path,
    session_id: str,
    tick: TickOptions | None,
    clock: Clock | None = None,
    listeners: Iterable[Listener] = (),
    timers: Timers | None = None,
    toolbox: Toolbox | None = None,
    max_rounds: int = 8,
) -> Agent:
    """An Agent on a persistent session; ``tick=None`` runs without the tick plugin; ``toolbox``
    offers tools to the model (started by ``agent.start()``, closed by ``agent.close()``)."""
    clock = clock or SystemClock()
    if tick is not None and tick.audit_key_env:
        audit_key(tick.audit_key_env)  # a missing key fails before any file is created
    session = open_session(sessions_dir, session_id, clock=clock)
    plugins: list[Plugin] = []
    if tick is not None:
        plugins.append(open_tick_plugin(tick, session_id, timers=timers))
    return Agent(
        model,
        session,
        plugins=plugins,
        clock=clock,
        listeners=listeners,
        toolbox=toolbox,
        max_rounds=max_rounds,
    )
