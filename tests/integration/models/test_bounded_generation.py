"""Bounded generation: every answer has a token cap and a deadline, a request given up on is closed so
the server stops generating, a cut-off answer says so, and a context overflow says the numbers."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request

import pytest

from tickloop.config import load_settings
from tickloop.errors import ModelError
from tickloop.models import ChatMessage, OpenAICompatModel
from tickloop.operator.domain import Outcome, ProgressRow
from tickloop.operator.runner import run_tick
from tickloop.operator.store import Store, open_store
from tickloop.operator.ticks._ask import MAX_TOKENS
from tickloop.testing import FakeClock
from tickloop.testing.openai_server import MODEL_ID, OpenAIServer, Reply

HELLO = [ChatMessage("user", "hello " * 40)]
NOTE = json.dumps({"actionType": "note", "title": "Outline", "body": "b"})


def _model(server: OpenAIServer, **options: object) -> OpenAICompatModel:
    return OpenAICompatModel("m", base_url=server.base_url, model=MODEL_ID, **options)  # type: ignore[arg-type]


async def test_a_stalled_answer_is_given_up_at_the_timeout_and_the_server_sees_the_close(
    server: OpenAIServer,
) -> None:
    """A server that goes silent mid-answer gets a ModelError within the timeout, and sees its
    connection closed then, not when it next writes."""
    # warm with a patient client: the SDK's first-call imports (seconds on a loaded machine) are not
    # the server's time, and must not spend the 0.5 s under test
    await _model(server, timeout_s=30).complete(HELLO)
    model = _model(server, timeout_s=0.5)
    server.default = Reply.stall(after=1, seconds=30)
    started = time.monotonic()
    with pytest.raises(ModelError, match=r"no answer within 0.5 s.*cancelled"):
        await model.complete(HELLO)
    assert await asyncio.to_thread(server.wait_client_closed, 2.0)
    assert time.monotonic() - started < 2.0


async def test_a_long_answer_past_the_deadline_is_cancelled_and_the_server_stops_generating(
    server: OpenAIServer,
) -> None:
    """An answer still streaming at the deadline is cancelled: the server finds the client gone at
    its next token and generates nothing more for nobody."""
    server.default = Reply.generating(200, seconds_per_token=0.02)
    with pytest.raises(ModelError, match=r"no answer within 0\.5 s"):
        await _model(server, timeout_s=0.5).complete(HELLO)
    assert await asyncio.to_thread(server.wait_client_closed, 2.0)
    await asyncio.sleep(0.3)  # what a server that went on would generate meanwhile
    assert server.tokens_after_client_left <= 1


def test_the_server_counts_tokens_generated_for_a_client_that_left(server: OpenAIServer) -> None:
    """The baseline the test above relies on: a non-streamed request given up on leaves the server
    generating for nobody (the old way), and the server counts those tokens."""
    server.default = Reply.generating(40, seconds_per_token=0.02)
    data = json.dumps({"model": MODEL_ID, "messages": [m.to_wire() for m in HELLO]}).encode()
    request = urllib.request.Request(
        f"{server.base_url}/chat/completions", data, {"Content-Type": "application/json"}
    )
    with pytest.raises((TimeoutError, urllib.error.URLError)):
        urllib.request.urlopen(request, timeout=0.2)  # the test's own loopback server
    deadline = time.monotonic() + 5
    while server.tokens_after_client_left < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.tokens_after_client_left >= 20


async def test_cancelling_a_completion_closes_its_connection(server: OpenAIServer) -> None:
    """A caller that gives up (its task cancelled) closes the request at once."""
    server.default = Reply.generating(200, seconds_per_token=0.02)
    task = asyncio.create_task(_model(server, timeout_s=30).complete(HELLO))
    deadline = time.monotonic() + 10
    while not server.bodies() and time.monotonic() < deadline:  # the request is being answered
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(server.wait_client_closed, 2.0)


async def test_the_callers_cap_is_sent_and_the_endpoints_own_overrides_it(server: OpenAIServer) -> None:
    """max_tokens reaches the server: the caller's default, or the endpoint's maxTokens when set."""
    await _model(server).complete(HELLO, max_tokens=384)
    await _model(server, max_tokens=50).complete(HELLO, max_tokens=384)
    assert [b["max_tokens"] for b in server.bodies()] == [384, 50]


async def test_an_answer_cut_at_the_cap_says_so(server: OpenAIServer) -> None:
    """An answer the server stopped at max_tokens comes back marked truncated, with the cap."""
    server.default = Reply(content='{"actionType": "no', finish_reason="length")
    completion = await _model(server).complete(HELLO, max_tokens=7)
    assert (completion.truncated, completion.max_tokens) == (True, 7)


CONTEXT_ERRORS = [
    # reply, what the message must say
    (Reply.context_exceeded(5000, 2048), "the packet is 5000 tokens, the model's context is 2048"),
    (
        Reply.error(
            400,
            "This model's maximum context length is 8192 tokens. However, you requested 9100 tokens "
            "(8900 in the messages, 200 in the completion). Please reduce the length of the messages.",
        ),
        "the packet is 8900 tokens, the model's context is 8192",
    ),
    (
        Reply.error(400, "Requested tokens (3000) exceed context window of 2048"),
        "the packet is 3000 tokens, the model's context is 2048",
    ),
    (
        Reply.error(500, "Context size has been exceeded."),
        (
            "the packet is about 60 tokens (estimated: the server did not count it), "
            "the server did not say its context size"
        ),
    ),
]


@pytest.mark.parametrize(("reply", "said"), CONTEXT_ERRORS)
async def test_a_context_overflow_says_the_numbers_the_server_gave(
    server: OpenAIServer, reply: Reply, said: str
) -> None:
    """A request that does not fit the model's context says how big the packet and the context are,
    never a generic "try again later"; both for a whole answer and a stream."""
    server.default = reply
    model = _model(server, max_tokens=200)
    with pytest.raises(ModelError) as whole:
        await model.complete(HELLO)
    with pytest.raises(ModelError) as streamed:
        _ = [event async for event in model.stream(HELLO)]
    for caught in (whole, streamed):
        message = str(caught.value)
        assert f"context exceeded: {said}" in message
        assert "maxTokens=200" in message
        assert "try again later" not in message


async def test_an_unrelated_400_is_not_called_a_context_overflow(server: OpenAIServer) -> None:
    """Only what the server said about its context is reported as a context overflow."""
    server.default = Reply.error(400, "messages[0].role is not valid")
    with pytest.raises(ModelError) as caught:
        await _model(server).complete(HELLO)
    assert "context exceeded" not in str(caught.value)
    assert "messages[0].role is not valid" in str(caught.value)


#: critiques run after a tick, not as one: their cap is checked through the fast tick's
TICK_CAPS = sorted((kind, cap) for kind, cap in MAX_TOKENS.items() if kind != "critique")


@pytest.mark.parametrize(("kind", "cap"), TICK_CAPS)
def test_each_tick_kind_asks_for_its_own_cap_and_a_cut_answer_fails_the_tick(
    server: OpenAIServer, clock: FakeClock, kind: str, cap: int
) -> None:
    """A tick sends its kind's default cap; an answer cut off at it fails the tick with "truncated at
    maxTokens=N", and nothing is made of the cut-off text."""
    server.default = Reply(content=NOTE[:20], finish_reason="length", usage=(300, cap))
    store = open_store("memory://")
    store.create_profile("p", now=clock.now())
    goal = store.add_goal_model("p", title="Ship", body="the thesis", now=clock.now())
    store.activate_goal_model("p", goal.version, now=clock.now())
    store.add_task("p", "Outline", priority=1, now=clock.now())
    model = _model(server)
    code = run_tick(
        kind, store=store, profile="p", settings=load_settings({}, None), env={}, clock=clock,
        log=lambda _: None, model=model,
    )  # fmt: skip
    row = store.recent_progress("p", limit=1, tick_kind=kind)[0]
    assert (code, row.outcome) == (1, Outcome.FAILED)
    assert f"truncated at maxTokens={cap}" in row.error
    assert server.bodies()[0]["max_tokens"] == cap
    if kind == "fast":
        assert store.list_intents("p") == []
        assert server.bodies()[1]["max_tokens"] == MAX_TOKENS["critique"]


def _fast_store(clock: FakeClock) -> Store:
    store = open_store("memory://")
    store.create_profile("p", now=clock.now())
    goal = store.add_goal_model("p", title="Ship", body="the thesis", now=clock.now())
    store.activate_goal_model("p", goal.version, now=clock.now())
    store.add_task("p", "Outline", priority=1, now=clock.now())
    return store


def _fast(
    store: Store, clock: FakeClock, model: OpenAICompatModel, log: list[str] | None = None
) -> tuple[int, ProgressRow]:
    code = run_tick(
        "fast", store=store, profile="p", settings=load_settings({}, None), env={}, clock=clock,
        log=(log if log is not None else []).append, model=model,
    )  # fmt: skip
    return code, store.recent_progress("p", limit=1, tick_kind="fast")[0]


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (Reply(content='{"actionType"', finish_reason="length", usage=(2046, 2)),
         ("context full: the prompt (2046 tokens) plus the answer (2 tokens) reached the model's context "
          "(about 2048 tokens) before maxTokens=512")),
        (Reply(content="{", finish_reason="length", report_usage=False),
         "plus the answer (about 0 tokens) reached the model's context"),
    ],
    ids=["counted", "estimated"],
)  # fmt: skip
def test_an_answer_cut_off_short_of_the_cap_says_the_context_is_full(
    server: OpenAIServer, clock: FakeClock, reply: Reply, said: str
) -> None:
    """A stop at finish_reason=length well before maxTokens is the context filling up: the row says
    so with the numbers, and does not advise raising maxTokens."""
    server.default = reply
    code, row = _fast(_fast_store(clock), clock, _model(server))
    assert (code, row.outcome) == (1, Outcome.FAILED)
    assert said in row.error
    assert "Raising maxTokens will not help" in row.error
    assert "raise maxTokens for this endpoint" not in row.error


@pytest.mark.parametrize(
    "reply", [Reply.stall(after=0, seconds=5), Reply.error(503)], ids=["timeout", "http-error"]
)
def test_no_critique_follows_a_model_call_that_got_no_answer(
    server: OpenAIServer, clock: FakeClock, reply: Reply
) -> None:
    """When the action call timed out or failed, the tick makes no critique call: one request, and the
    tick ends within about one timeoutS (not two)."""
    server.default = reply
    log: list[str] = []
    started = time.monotonic()
    code, row = _fast(_fast_store(clock), clock, _model(server, timeout_s=0.5), log)
    assert (code, row.outcome) == (1, Outcome.FAILED)
    assert row.error.startswith("model call failed")
    assert len(server.bodies()) == 1
    assert any("no self-critique: the model call failed" in line for line in log), log
    assert time.monotonic() - started < 1.4


def test_the_critique_gets_only_what_is_left_of_the_ticks_model_budget(
    server: OpenAIServer, clock: FakeClock
) -> None:
    """A fast tick waits on its model at most 1.5 x timeoutS in all: after a slow invalid answer, the
    critique call is cut at what is left, not given a whole timeoutS of its own."""
    server.script(Reply.text("not json", chunks=4, chunk_delay=0.2))  # ~0.8 s of the 1.5 s budget
    server.default = Reply.stall(after=0, seconds=5)  # the critique would wait a full timeoutS
    log: list[str] = []
    started = time.monotonic()
    code, row = _fast(_fast_store(clock), clock, _model(server, timeout_s=1.0), log)
    elapsed = time.monotonic() - started
    assert (code, row.outcome) == (1, Outcome.FAILED)
    assert "invalid model output" in row.error
    assert len(server.bodies()) == 2
    assert any("s left of the tick's budget" in line for line in log), log
    assert elapsed < 1.5 + 0.5, elapsed
