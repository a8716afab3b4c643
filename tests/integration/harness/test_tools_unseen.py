"""One notice when the model may never see the tools it is offered (its chat template has none)."""

from __future__ import annotations

from pathlib import Path

from tickloop.harness import TickOptions, open_chat_agent
from tickloop.harness.events import AgentEvent, Notice
from tickloop.harness.tools_notice import QUIET_TURNS
from tickloop.models.offline import OfflineModel
from tickloop.testing.openai_server import OpenAIServer, Reply

from .test_tools import Probe, chat, drive

SMOLLM2_LIKE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}{% endfor %}"
)
WITH_TOOLS = "{% if tools %}<tools>{{ tools | tojson }}</tools>{% endif %}{{ messages }}"


async def notices(tmp_path: Path, server: OpenAIServer, lines: list[str]) -> list[str]:
    agent = chat(tmp_path, server, Probe())
    seen: list[str] = []

    def listen(event: AgentEvent) -> None:
        if isinstance(event, Notice) and "tool" in event.text:
            seen.append(event.text)

    agent.subscribe(listen)
    await drive(agent, lines)
    return seen


async def test_a_template_without_tools_gets_one_notice_at_once(tmp_path: Path) -> None:
    """llama.cpp reports a chat template with no tools section: the person is told as the chat starts,
    once, however many turns follow."""
    with OpenAIServer(default=Reply.text("hi")) as server:
        server.act_as_llama_cpp(SMOLLM2_LIKE)
        seen = await notices(tmp_path, server, ["one", "two", "three", "four"])
    assert len(seen) == 1
    assert "chat template has no tools section, so the model never sees the 3 tools offered" in seen[0]


async def test_a_template_with_tools_and_a_model_that_calls_them_gets_no_notice(tmp_path: Path) -> None:
    """A template that renders tools, and a model that calls one in its first turn: nothing to say."""
    with OpenAIServer(default=Reply.text("done")) as server:
        server.act_as_llama_cpp(WITH_TOOLS)
        server.script(Reply.tool_calls(("c1", "echo", "{}")))
        seen = await notices(tmp_path, server, ["one", *(["again"] * QUIET_TURNS)])
    assert seen == []


async def test_no_call_in_the_first_turns_gets_one_notice(tmp_path: Path) -> None:
    """A server that does not report its template: after QUIET_TURNS answered turns with tools offered
    and no call, one notice, and no second one later."""
    with OpenAIServer(default=Reply.text("I have no tools.")) as server:
        before = await notices(tmp_path / "a", server, ["x"] * (QUIET_TURNS - 1))
        seen = await notices(tmp_path / "b", server, ["x"] * (QUIET_TURNS + 2))
    assert before == []
    assert len(seen) == 1
    assert f"no tool call in its first {QUIET_TURNS} turns with 3 tools offered" in seen[0]


async def test_the_offline_model_is_never_watched(tmp_path: Path) -> None:
    """The built-in offline model has no template and scripted tool behaviour: no notice however
    many quiet turns it has."""
    agent = open_chat_agent(
        OfflineModel(),
        sessions_dir=tmp_path / "sessions",
        session_id="t",
        tick=TickOptions.from_mapping({"delayMs": 0, "auditDir": str(tmp_path / "audit")}),
        toolbox=Probe().toolbox(),
    )
    seen: list[AgentEvent] = []
    agent.subscribe(seen.append)
    await drive(agent, ["x"] * (QUIET_TURNS + 1))
    assert not [e for e in seen if isinstance(e, Notice) and "tool call" in e.text]
