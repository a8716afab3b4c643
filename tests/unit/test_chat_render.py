"""What the chat shows is what the transcript stores: labels, interrupts, errors and hostile replies.

A real Agent with the offline model streams into a Renderer writing to a StringIO; the screen text
is compared with the session's stored reply.
"""

from __future__ import annotations

import asyncio
import io
import re

import pytest

from tickloop.cli.chat_render import Renderer, progress_line
from tickloop.harness import Agent, memory_session
from tickloop.harness.events import ToolCallProgress
from tickloop.inert import inert
from tickloop.models import OfflineModel
from tickloop.models.base import ToolCall

HOSTILE = (
    "title\x1b]0;pwned\x07 clear\x1b[2J\x1b[H bell\x07 back\x08\x08\x08XXX rtl\u202eevil\u202c "
    "cr\rfaked\nyou> rm -rf ~ please\n\tindented\x9b31m"
)


async def converse(
    model: OfflineModel, lines: list[str], *, line_buffered: bool = False, interrupt_after: int | None = None
) -> tuple[str, Agent]:
    out = io.StringIO()
    renderer = Renderer(out, label="offline", line_buffered=line_buffered)
    agent = Agent(model, memory_session(), listeners=[renderer])
    await agent.start()
    try:
        for line in lines:
            renderer.echo_input(line)
            agent.submit(line)
            if interrupt_after is not None:
                await started(agent)
                for _ in range(interrupt_after):
                    await asyncio.sleep(model.token_delay)
                renderer.notice("interrupted")
                agent.interrupt()
            async with asyncio.timeout(10):
                await agent.wait_idle()
    finally:
        await agent.close()
    return out.getvalue(), agent


async def started(agent: Agent) -> None:
    """Wait until a turn is streaming (the agent signals no change when a turn starts)."""
    async with asyncio.timeout(10):
        while not agent.turn_active:
            await asyncio.sleep(0.001)


def reply_as_shown(screen: str, label: str = "offline") -> str:
    """The reply text the person saw: the label line and its indented continuation lines."""
    lines = screen.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{label}> "))
    shown = [lines[start].removeprefix(f"{label}> ")]
    indent = " " * (len(label) + 2)
    for line in lines[start + 1 :]:
        if line.startswith(indent):
            shown.append(line.removeprefix(indent))
        elif line == "":
            shown.append("")
        else:
            break
    return "\n".join(shown).rstrip("\n")


@pytest.mark.parametrize("line_buffered", [False, True])
async def test_a_reply_is_shown_with_its_label_exactly_as_stored(line_buffered: bool) -> None:
    """The label comes first and the shown reply equals the stored one, streamed or line by line."""
    screen, agent = await converse(
        OfflineModel(reply="one two\nthree four"), ["hello"], line_buffered=line_buffered
    )
    stored = agent.session.turns[0].reply
    assert stored is not None
    assert screen.startswith("you> hello\noffline> one two\n")
    assert reply_as_shown(screen) == stored.text


@pytest.mark.parametrize("line_buffered", [False, True])
async def test_after_an_interrupt_the_screen_shows_all_the_stored_partial_reply(line_buffered: bool) -> None:
    """Interrupted mid-stream, every word the transcript stored is on the screen, then the terminal line."""
    model = OfflineModel(reply=" ".join(f"w{i}" for i in range(40)), token_delay=0.01)
    screen, agent = await converse(model, ["go"], line_buffered=line_buffered, interrupt_after=5)
    stored = agent.session.turns[0].reply
    assert stored is not None
    assert 0 < len(stored.text.split()) < 40
    assert reply_as_shown(screen) == stored.text
    assert screen.endswith("· interrupted\n[turn 1 interrupted]\n")


async def test_an_error_turn_shows_no_empty_label_line() -> None:
    """A provider error before any text shows only the terminal line, never a bare `offline> `."""
    screen, _ = await converse(OfflineModel(fail_on_call=frozenset({1})), ["hello"])
    assert "offline>" not in screen
    assert screen == "you> hello\n[turn 1 error: offline model: scripted error on call 1]\n"


async def test_a_reply_without_text_says_so_instead_of_an_empty_label() -> None:
    """A completed turn with no text is named as such; no empty label line is left on screen."""
    screen, _ = await converse(OfflineModel(reply=""), ["hello"])
    assert "offline>" not in screen
    assert "[turn 1 completed: the model sent no text]" in screen


@pytest.mark.parametrize("line_buffered", [False, True])
async def test_hostile_model_output_is_inert_and_cannot_fake_the_prompt(line_buffered: bool) -> None:
    """Escapes, controls and bidi overrides are neutralised; a `you>` line in a reply stays indented."""
    screen, agent = await converse(OfflineModel(reply=HOSTILE), ["hi"], line_buffered=line_buffered)
    assert re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", screen) is None
    assert [line for line in screen.split("\n") if line.startswith("you>")] == ["you> hi"]
    stored = agent.session.turns[0].reply
    assert stored is not None
    assert stored.text == HOSTILE  # the transcript keeps the model's bytes; only the screen is inert
    assert reply_as_shown(screen) == inert(HOSTILE)


async def test_a_notice_in_the_middle_of_a_reply_starts_its_own_line() -> None:
    """A notice (e.g. /tick status typed mid-stream) never glues onto a partial reply line."""
    model = OfflineModel(reply=" ".join(["word"] * 30), token_delay=0.005)
    out = io.StringIO()
    renderer = Renderer(out, label="offline")
    agent = Agent(model, memory_session(), listeners=[renderer])
    await agent.start()
    try:
        agent.submit("hello")
        await started(agent)
        await asyncio.sleep(0.03)
        agent.submit("/help")
        async with asyncio.timeout(10):
            await agent.wait_idle()
    finally:
        await agent.close()
    lines = out.getvalue().split("\n")
    notices = [i for i, line in enumerate(lines) if line.startswith("· ")]
    assert notices
    assert all(lines[i - 1].startswith(("offline> ", " " * 9, "· ")) for i in notices)
    assert lines[notices[-1] + 1].startswith(" " * 9 + "word")


def test_a_progress_line_shows_the_step_and_keeps_escapes_inert() -> None:
    """A running call's progress is one tool line; a server's escape sequences in it stay text."""
    event = ToolCallProgress(1, ToolCall("c", "srv__index", "{}"), 2, 4, "scan\x1b[2J\x07ning")
    line = progress_line(event)
    assert line == "⚙ srv__index … 2/4 scan\\u0007ning"
    plain = ToolCallProgress(1, ToolCall("c", "srv__x", "{}"), 0.5, None, "")
    assert progress_line(plain) == "⚙ srv__x … 0.5"
