"""Tools without a server: settings, the offline model's tool step, the chat's tool line, ledger counts."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tickloop.cli.chat_render import Renderer, tool_line
from tickloop.errors import ConfigError
from tickloop.harness import Agent, memory_session, open_session
from tickloop.harness.events import ToolCallEnded
from tickloop.harness.jsonl import SessionError
from tickloop.harness.tools import (
    CallResult,
    CallStatus,
    FunctionTool,
    Toolbox,
    ToolSet,
    open_toolbox,
    tools_settings,
)
from tickloop.harness.tools.base import digest
from tickloop.models import OfflineModel
from tickloop.models.base import ChatMessage, ToolCall, ToolCalls, ToolSpec
from tickloop.protocol.ledger import RecordType, canonical, record
from tickloop.protocol.verify import verify


def result(name: str, args: str, status: CallStatus, text: str = "fine") -> CallResult:
    return CallResult(ToolCall("c", name, args), status, text, 12, digest(text), len(text))


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"maxRounds": 0}, "maxRounds"),
        ({"enabled": ["shell"]}, "enabled"),
        ({"mcp": {"x": {}}}, "[tools.mcp.x]: give exactly one of command"),
        ({"mcp": {"x": {"command": ["a"], "url": "http://127.0.0.1/mcp"}}}, "exactly one"),
        ({"workspace": {"overwrite": "yes"}}, "overwrite"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_bad_tools_settings_name_the_key(raw: dict[str, Any], fragment: str) -> None:
    """A wrong [tools] table is refused with an error that says which key is wrong."""
    with pytest.raises(ConfigError, match=r"\[tools") as caught:
        tools_settings(raw)
    assert fragment in caught.value.message


def test_tools_default_to_off_with_eight_rounds() -> None:
    """Nothing configured: no toolset, no server, and the documented cap of 8 rounds."""
    settings = tools_settings({})
    assert (settings.enabled, settings.mcp, settings.max_rounds) == ([], {}, 8)
    assert not open_toolbox(settings)


def test_a_missing_workspace_root_is_a_config_error(tmp_path: Path) -> None:
    """A workspace root that does not exist is refused at start, naming the setting."""
    settings = tools_settings({"workspace": {"root": str(tmp_path / "nope")}}, enable=["workspace"])
    with pytest.raises(ConfigError, match=r"\[tools.workspace\] root"):
        open_toolbox(settings)


async def test_the_offline_model_calls_list_dir_for_list_files() -> None:
    """Offered list_dir, the offline model answers "list files" with one call, then reports the result."""
    model = OfflineModel()
    spec = ToolSpec("list_dir", "list", {"type": "object"})
    first = [e async for e in model.stream([ChatMessage("user", "please LIST FILES")], tools=[spec])]
    calls = [e for e in first if isinstance(e, ToolCalls)]
    assert [(c.name, json.loads(c.arguments)) for c in calls[0].calls] == [("list_dir", {"path": "."})]
    plain = [e async for e in model.stream([ChatMessage("user", "list files")])]
    assert not any(isinstance(e, ToolCalls) for e in plain)


async def test_an_offline_tool_step_runs_through_the_agent() -> None:
    """The agent runs the offline model's call and the reply names what the tool returned."""
    seen: list[Mapping[str, Any]] = []

    async def list_dir(args: Mapping[str, Any]) -> str:
        seen.append(args)
        return "a.txt\nb/"

    box = Toolbox([ToolSet("t", [FunctionTool(ToolSpec("list_dir", "list", {"type": "object"}), list_dir)])])
    agent = Agent(OfflineModel(), memory_session(), toolbox=box)
    await agent.start()
    try:
        agent.submit("list files")
        await agent.wait_idle()
    finally:
        await agent.close()
    turn = agent.session.turns[0]
    assert seen == [{"path": "."}]
    assert turn.reply is not None
    assert turn.reply.text == "(offline model) the workspace has: a.txt, b/."
    assert turn.terminal is not None
    assert turn.terminal.tool_fields() == {"toolCalls": 1, "toolErrors": 0}


def test_the_tool_line_neutralises_escape_sequences() -> None:
    """A hostile tool name, arguments or error shows as inert text on one line."""
    line = tool_line(
        result("evil\x1b]0;pwned\x07__x", '{"a": "\x1b[2J\\n"}', CallStatus.ERROR, "bad\x1b[31m\rred")
    )
    assert "\x1b" not in line
    assert "\r" not in line
    assert line.startswith("⚙ evil__x(")
    assert "→ error (12 ms): bad" in line


def test_the_renderer_prints_one_tool_line_per_call() -> None:
    """``⚙ name(args…) → ok (12 ms)`` on its own line, long arguments shortened."""
    out = io.StringIO()
    Renderer(out, label="m")(
        ToolCallEnded(1, result("files__read", json.dumps({"p": "x" * 200}), CallStatus.OK))
    )
    text = out.getvalue()
    assert text.startswith('⚙ files__read({"p": "xxx')
    assert text.endswith("…) → ok (12 ms)\n")


def _ledger(terminal_fields: dict[str, Any]) -> list[tuple[int, bytes]]:
    at = datetime(2026, 11, 30, tzinfo=UTC)
    run = {"runId": "r", "policyId": "default", "timeStepSha256": "ab" * 32, "timeStepBytes": 4}
    recs = [
        record(RecordType.LOOP_ARMED, recorded_at=at, session_id="s", requested=1, resume=False,
               rule="admit.ok", next="next.ok", **run),
        record(RecordType.TICK_SCHEDULED, recorded_at=at, session_id="s", step=1, rule="next.ok",
               dueAt="2026-11-30T00:00:00.000Z", **run),
        record(RecordType.TICK_ENQUEUED, recorded_at=at, session_id="s", step=1, **run),
        record(RecordType.TICK_TERMINAL, recorded_at=at, session_id="s", step=1, status="completed",
               **run, **terminal_fields),
        record(RecordType.LOOP_COMPLETE, recorded_at=at, session_id="s", rule="next.target_reached",
               steps=1, **run),
    ]  # fmt: skip
    return [(i, canonical({**r, "seq": i})) for i, r in enumerate(recs, start=1)]


@pytest.mark.parametrize(
    ("fields", "ok"),
    [
        ({}, True),
        ({"toolCalls": 3, "toolErrors": 1}, True),
        ({"toolCalls": 0, "toolErrors": 0}, True),
        ({"toolCalls": -1}, False),
        ({"toolErrors": "2"}, False),
        ({"toolCalls": True}, False),
    ],
)
def test_verify_accepts_tool_counts_and_refuses_malformed_ones(fields: dict[str, Any], ok: bool) -> None:
    """tick_terminal may carry toolCalls/toolErrors; only non-negative integers verify."""
    report = verify(_ledger(fields))
    assert report.ok is ok, report.violations


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "tool_result", "turn": 1, "id": "c", "status": "ok"},
        {"type": "tool_calls", "turn": 1, "round": 1, "calls": [{"id": "c", "tool": "t"}]},
    ],
)
def test_a_malformed_tool_record_names_its_line(tmp_path: Path, bad: dict[str, Any]) -> None:
    """A tool record without its call or fields is refused with the file and line, never guessed."""
    path = tmp_path / "session-s.jsonl"
    lines = [
        {"type": "session", "id": "s", "version": 1, "createdAt": "2026-11-30T00:00:00Z"},
        {"type": "message", "turn": 1, "role": "user", "content": [{"type": "text", "text": "hi"}],
         "source": {"kind": "user"}, "at": "2026-11-30T00:00:00Z"},
        bad,
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(SessionError, match=r"line 3: unreadable session record"):
        open_session(tmp_path, "s")
