"""``tickloop chat``: talk to a model; ``/tick`` runs bounded time steps; every decision is audited.

Interactive on a terminal (prompt_toolkit, imported lazily). When stdin is not a terminal it reads
one line at a time and, before reading the next, waits until the agent is idle (no active turn, no
pending run step), so a script drives a whole session and the command exits 0 at EOF.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click
import msgspec

from tickloop.audit import session_file_name
from tickloop.cli.chat_render import Renderer
from tickloop.cli.sessions import sessions_dir_option
from tickloop.config import TickSettings, load_settings
from tickloop.config_sections import check_config
from tickloop.harness import (
    Agent,
    ChatPresence,
    TickOptions,
    open_chat_agent,
    presence_path,
)
from tickloop.harness.commands import CommandResult
from tickloop.harness.jsonl import SessionError
from tickloop.harness.session import check_session_id
from tickloop.harness.tools import ToolsSettings, open_toolbox, tools_settings
from tickloop.models.base import ChatModel
from tickloop.models.registry import get_model

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession


def _checked_session_id(
    ctx: click.Context,  # noqa: ARG001  (click's callback signature)
    param: click.Parameter,  # noqa: ARG001
    value: str | None,
) -> str | None:
    """Refuse a session id with a control character before anything is opened or created."""
    if value is None:
        return None
    try:
        return check_session_id(value)
    except SessionError as exc:
        raise click.BadParameter(exc.message) from None


@click.command()
@click.option(
    "--session",
    "session_id",
    callback=_checked_session_id,
    help="Session id to open or create (default: a new one).",
)
@click.option("--model", "model_name", help="Model name (default: [model] name, usually 'offline').")
@click.option("--audit-dir", type=click.Path(path_type=Path, file_okay=False), help="Audit ledger directory.")
@sessions_dir_option
@click.option("--no-tick", is_flag=True, help="Run without the tick plugin.")
@click.option(
    "--tools",
    "enable_tools",
    multiple=True,
    type=click.Choice(["workspace"]),
    help="Offer a toolset to the model (also: [tools] enabled = [...]; MCP servers: [tools.mcp.NAME]).",
)
def chat(
    *,
    session_id: str | None,
    model_name: str | None,
    audit_dir: Path | None,
    sessions_dir: Path,
    no_tick: bool,
    enable_tools: tuple[str, ...],
) -> None:
    """Chat with a model. Lines starting with / are commands (/help); they never reach the model."""
    settings = load_settings()
    check_config(settings, model=model_name or settings.model.name)  # a typo anywhere exits 2 now
    options = None if no_tick else _tick_options(settings.tick, audit_dir)
    model = get_model(model_name or settings.model.name, settings, os.environ)
    renderer = _terminal_renderer(model.label)
    tools = tools_settings(settings.tools, enable=enable_tools)
    agent = _open_agent(model, renderer, options, tools, sessions_dir=sessions_dir, session_id=session_id)
    _announce(agent, renderer, options, tools)
    with ChatPresence(presence_path(), agent.session.session_id):
        _run_chat(agent, renderer)


def _open_agent(
    model: ChatModel,
    renderer: Renderer,
    options: TickOptions | None,
    tools: ToolsSettings,
    *,
    sessions_dir: Path,
    session_id: str | None,
) -> Agent:
    """The chat's agent on session ``session_id``, or on a new session when it is None."""
    return open_chat_agent(
        model,
        sessions_dir=sessions_dir,
        session_id=session_id if session_id is not None else _new_session_id(),
        tick=options,
        listeners=[renderer],
        toolbox=open_toolbox(tools),
        max_rounds=tools.max_rounds,
    )


def _run_chat(agent: Agent, renderer: Renderer) -> None:
    """A terminal gets the interactive prompt; anything else is read as a script, line by line."""
    if sys.stdin.isatty():
        asyncio.run(_interactive(agent, renderer))
    else:
        asyncio.run(_scripted(agent, renderer, sys.stdin))


def _tick_options(tick_settings: TickSettings, audit_dir: Path | None) -> TickOptions:
    if audit_dir is not None:
        tick_settings = msgspec.structs.replace(tick_settings, audit_dir=str(audit_dir))
    return TickOptions.from_settings(tick_settings)


def _announce(agent: Agent, renderer: Renderer, options: TickOptions | None, tools: ToolsSettings) -> None:
    """The opening notices: the session, its ledger (or /tick off), its history, what was recovered
    and its tools."""
    session_id = agent.session.session_id
    renderer.notice(f"session {session_id} · model {renderer.label} · /help lists commands")
    if options is not None:
        renderer.notice(f"audit ledger {options.audit_dir / session_file_name(session_id)}")
    else:
        agent.commands.register("tick", _tick_off, "off in this chat (--no-tick)")
    renderer.history(agent.session.turns)
    for terminal in agent.session.recovered:
        renderer.notice(f"turn {terminal.turn} was left open by an earlier process: recorded as interrupted")
        if terminal.tool_calls:
            renderer.notice("  a tool call it was running has outcome unknown; it is not re-run")
    if tools.enabled or tools.mcp:
        renderer.notice(f"tools: {', '.join([*tools.enabled, *(f'mcp:{n}' for n in sorted(tools.mcp))])}")


def _tick_off(line: str) -> CommandResult:  # noqa: ARG001  (whatever the arguments)
    return CommandResult(
        "the tick plugin is off in this chat (--no-tick); start it without --no-tick to use /tick. "
        "Nothing was sent to the model.",
        ok=False,
    )


def _new_session_id() -> str:
    return f"chat-{datetime.now(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(2)}"


def _terminal_renderer(label: str) -> Renderer:
    _utf8_streams()
    return Renderer(sys.stdout, label=label)


def _utf8_streams() -> None:
    """Undecodable input becomes U+FFFD instead of a crash; output never fails on the ⏱ mark."""
    for stream in (sys.stdin, sys.stdout):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")


async def _scripted(agent: Agent, renderer: Renderer, stdin: TextIO) -> None:
    """One line at a time; the next line is read only once the agent is idle."""
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, lambda: _interrupt(agent, renderer))
    await agent.start()
    try:
        while True:
            await agent.wait_idle()
            line = await asyncio.to_thread(stdin.readline)
            if not line:
                break
            renderer.echo_input(line)
            agent.submit(line)
            if agent.exit_requested:
                break
        if not agent.exit_requested:
            await agent.wait_idle()
    finally:
        await agent.close()
        loop.remove_signal_handler(signal.SIGINT)


def _interrupt(agent: Agent, renderer: Renderer) -> None:
    """Ctrl-C ends the active turn (``interrupted``), not the program."""
    if agent.interrupt():
        renderer.notice("interrupted")
    else:
        renderer.notice("no turn is active (Ctrl-D exits)")


async def _interactive(agent: Agent, renderer: Renderer) -> None:
    from prompt_toolkit import PromptSession  # noqa: PLC0415  (only the interactive chat pays for it)
    from prompt_toolkit.patch_stdout import patch_stdout  # noqa: PLC0415

    # erase_when_done: an accepted or aborted prompt (with the partial line it showed) is erased;
    # the renderer echoes the accepted line itself, so the screen keeps one copy of everything.
    prompt: PromptSession[str] = PromptSession(refresh_interval=0.1, erase_when_done=True)
    await agent.start()
    try:
        with patch_stdout(raw=True):
            # From now on write whole lines through prompt_toolkit's proxy: text written past it to
            # the real stdout, or a partial line, is erased by the prompt's next redraw (the reply's
            # label, its last words before an interrupt).
            renderer.out, renderer.line_buffered = sys.stdout, True
            await _prompt_lines(agent, renderer, prompt, lambda: _prompt_text(renderer))
    finally:
        await agent.close()


def _prompt_text(renderer: Renderer) -> str:
    """The prompt; the line being streamed shows just above it until it is complete and written."""
    partial = renderer.partial_line
    return f"{partial}\nyou> " if partial else "you> "


async def _prompt_lines(
    agent: Agent, renderer: Renderer, prompt: PromptSession[str], message: Callable[[], str]
) -> None:
    """Read and submit lines until EOF (Ctrl-D) or /exit; Ctrl-C at the prompt interrupts the turn."""
    while True:
        try:
            line = await prompt.prompt_async(message)
        except KeyboardInterrupt:
            _interrupt(agent, renderer)
            continue
        except EOFError:
            break
        renderer.echo_input(line)
        agent.submit(line)
        if agent.exit_requested:
            break
