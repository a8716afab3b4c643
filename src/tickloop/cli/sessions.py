"""``tickloop sessions list|show``: read session transcripts (never writes)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from tickloop.cli.chat_render import time_step_label, tool_line
from tickloop.harness import DEFAULT_SESSIONS_DIR
from tickloop.harness.catalog import list_sessions, load_session
from tickloop.harness.session import Terminal, ToolRound, Turn
from tickloop.inert import inert
from tickloop.protocol.envelope import is_time_step

#: ``--sessions-dir``, shared by ``chat`` and ``sessions``.
sessions_dir_option = click.option(
    "--sessions-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=DEFAULT_SESSIONS_DIR,
    show_default=True,
    envvar="TICKLOOP_SESSIONS_DIR",
    show_envvar=True,
    help="Directory of session transcripts.",
)


@click.group()
def sessions() -> None:
    """List and show chat sessions."""


@sessions.command("list")
@sessions_dir_option
def list_command(sessions_dir: Path) -> None:
    """One line per session: id, turns, the newest turn's status, created at."""
    found = list_sessions(sessions_dir)
    if not found:
        click.echo(f"no sessions in {sessions_dir}")
    for s in found:
        sid, created = inert(s.session_id, keep_newlines=False), inert(s.created_at, keep_newlines=False)
        click.echo(f"{sid:<32} {s.turns:>5} turns  last {s.last_status:<11} created {created}")


@sessions.command()
@click.argument("session_id")
@sessions_dir_option
def show(session_id: str, sessions_dir: Path) -> None:
    """Print a session's transcript; plugin time steps are marked with ⏱."""
    session = load_session(sessions_dir, session_id)
    for turn in session.turns:
        click.echo(f"[{turn.number}] {_input_head(turn)}")
        for rnd in turn.rounds:
            _show_round(rnd)
        if turn.reply is not None:
            click.echo(f"    assistant> {_block(turn.reply.text, len('    assistant> '))}")
        click.echo(f"    -- {_terminal_text(turn.terminal)}")
    _server_logs(session.turns)


def _input_head(turn: Turn) -> str:
    """A turn's input: a time step's ⏱ label, or who wrote it and the text."""
    message = turn.input
    if is_time_step(message):
        return time_step_label(message.text, message.meta.get("step", "?"), message.meta.get("of", "?"))
    who = "you" if message.source.kind == "user" else inert(str(message.source), keep_newlines=False)
    return f"{who}> {_block(message.text, len(f'[{turn.number}] {who}> '))}"


def _show_round(rnd: ToolRound) -> None:
    """A tool round: the text before its calls, then each call's line; an unknown outcome is named."""
    if rnd.text:
        click.echo(f"    assistant> {rnd.text}")
    for call in rnd.calls:
        result = rnd.result_of(call.id)
        line = tool_line(result) if result is not None else f"⚙ {call.name}: no result recorded"
        click.echo(f"    {line}")
        if result is not None and result.status == "unknown":
            click.echo("      outcome unknown: it may or may not have taken effect; never re-run")


def _server_logs(turns: Sequence[Turn]) -> None:
    """Name the stderr log of each MCP server whose tools the session called."""
    from tickloop.harness.tools.mcp import server_logs  # noqa: PLC0415  (only for sessions with tools)

    names = [call.name for turn in turns for rnd in turn.rounds for call in rnd.calls]
    for server, path in server_logs(names).items() if names else ():
        click.echo(f"MCP server {inert(server, keep_newlines=False)}: its stderr is in {path}")


def _block(text: str, indent: int) -> str:
    """Stored text made inert, its continuation lines indented: a line in it cannot pass for a turn."""
    return inert(text).replace("\n", "\n" + " " * indent)


def _terminal_text(terminal: Terminal | None) -> str:
    if terminal is None:
        return "open"
    fields = terminal.usage_fields()
    tools = terminal.tool_fields()
    if tools:
        counts = f"{tools['toolCalls']} tool calls, {tools['toolErrors']} not ok"
        return f"{_terminal_text_plain(terminal, fields)} · {counts}"
    return _terminal_text_plain(terminal, fields)


def _terminal_text_plain(terminal: Terminal, fields: dict[str, object]) -> str:
    if "usage" in fields:
        return f"{terminal.status} {fields['usage']}"
    if fields.get("usageReported") is False:
        return f"{terminal.status} (the model reported no token usage)"
    return str(terminal.status)
