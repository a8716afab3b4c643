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
from tickloop.harness.durable import NEVER, Durability, FsyncPool
from tickloop.harness.events import Listener
from tickloop.harness.plugin import Plugin
from tickloop.harness.session import open_session
from tickloop.harness.tick_ledger import LedgerSink
from tickloop.harness.tick_options import TickOptions
from tickloop.harness.tick_plugin import TickPlugin
from tickloop.harness.timers import Timers
from tickloop.harness.tools.base import Toolbox
from tickloop.models.base import ChatModel


def open_tick_plugin(
    options: TickOptions,
    session_id: str,
    *,
    timers: Timers | None = None,
    durability: Durability | None = None,
) -> TickPlugin:
    """A tick plugin writing to ``<auditDir>/session-<id>.jsonl``; it closes a crashed run on start.

    With ``durability`` its appends only write, and the agent settles them (``harness.durable``)."""
    key = audit_key(options.audit_key_env) if options.audit_key_env else None
    every = 1 if durability is None else NEVER
    ledger = open_session_ledger(
        options.audit_dir, session_id, chain=options.chain, key=key, fsync_every=every
    )
    prior = read_ledger(ledger.path).records()
    sink: LedgerSink = ledger if durability is None else durability.ledger(ledger)
    return TickPlugin(options, sink, timers=timers, prior_records=prior)


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
    fsync_pool: FsyncPool | None = None,
) -> Agent:
    """An Agent on a persistent session; ``tick=None`` runs without the tick plugin; ``toolbox``
    offers tools to the model (started by ``agent.start()``, closed by ``agent.close()``).

    ``fsync_pool``: the session's fsyncs run on the pool's threads, off the event loop, in the
    protocol's order (``harness.durable``); without it each append fsyncs before it returns."""
    clock = clock or SystemClock()
    if tick is not None and tick.audit_key_env:
        audit_key(tick.audit_key_env)  # a missing key fails before any file is created
    durability = None if fsync_pool is None else Durability(fsync_pool)
    session = open_session(sessions_dir, session_id, clock=clock, durability=durability)
    plugins: list[Plugin] = []
    if tick is not None:
        plugins.append(open_tick_plugin(tick, session_id, timers=timers, durability=durability))
    agent = Agent(
        model,
        session,
        plugins=plugins,
        clock=clock,
        listeners=listeners,
        toolbox=toolbox,
        max_rounds=max_rounds,
        durability=durability,
    )
    if toolbox:  # /mcp, when some of its providers are MCP servers
        from tickloop.harness.tools.mcp_commands import install  # noqa: PLC0415  (only with tools)

        install(agent)
    return agent
