"""Tools against the real local model (SmolLM2 on llama-cpp-python): mechanics only, never the choice.

The local server runs the ``chatml`` chat format (see ``tickloop.models.local_server``): it accepts a
request with ``tools`` and answers it, whether or not the model calls one. What must hold whatever the
model writes: the request is accepted, the turn ends (``completed``, or ``error`` with a reason) within
the timeout, and every call it made has a recorded result.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tickloop.harness import TickOptions, open_chat_agent
from tickloop.harness.tools import open_toolbox, tools_settings
from tickloop.models import Finished
from tickloop.models.base import ChatMessage, ToolCalls
from tickloop.protocol.predicates import TerminalStatus

from .local_support import ServedModel, local_model

pytestmark = pytest.mark.local_model

WAIT = 90.0


async def test_a_request_with_tools_is_accepted_and_finishes(served: ServedModel, tmp_path: Path) -> None:
    """The served model takes a request offering tools and ends its stream with a finish reason."""
    model = local_model(tmp_path, served.base_url, max_tokens=24)
    specs = open_toolbox(tools_settings({}, enable=["workspace"])).specs()
    asked = [ChatMessage("user", "List the files, please.")]
    async with asyncio.timeout(WAIT):
        events = [e async for e in model.stream(asked, tools=specs)]
    assert isinstance(events[-1], Finished)
    assert events[-1].finish_reason
    for event in events:
        if isinstance(event, ToolCalls):
            assert all(call.name for call in event.calls)


async def test_a_turn_with_tools_completes_or_errors_never_hangs(
    served: ServedModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chat turn and a /tick step with the workspace tools on end with a terminal, calls all settled."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("buy milk\n")
    monkeypatch.chdir(workspace)
    settings = tools_settings({"maxRounds": 2}, enable=["workspace"])
    agent = open_chat_agent(
        local_model(tmp_path, served.base_url, max_tokens=32),
        sessions_dir=tmp_path / "sessions",
        session_id="lt",
        tick=TickOptions.from_mapping({"delayMs": 0, "auditDir": str(tmp_path / "audit")}),
        toolbox=open_toolbox(settings),
        max_rounds=settings.max_rounds,
    )
    await agent.start()
    try:
        for line in ("What files are in the workspace? Use list_dir.", "/tick 1"):
            agent.submit(line)
            async with asyncio.timeout(WAIT):
                await agent.wait_idle()
    finally:
        await agent.close()
    turns = agent.session.turns
    assert len(turns) >= 1
    for turn in turns:
        assert turn.terminal is not None
        assert turn.terminal.status in (TerminalStatus.COMPLETED, TerminalStatus.ERROR)
        if turn.terminal.status is TerminalStatus.ERROR:
            assert turn.terminal.detail
        assert turn.terminal.tool_calls is not None  # tools were offered: the terminal counts them
        for rnd in turn.rounds:
            assert not rnd.pending()
    records = [json.loads(line) for line in next((tmp_path / "sessions").iterdir()).read_text().splitlines()]
    assert records[-1]["type"] == "terminal"
