"""Every provider failure is a ModelError that says what happened, never hangs and never leaks the key."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time

import pytest

from tickloop.errors import ModelError
from tickloop.models import ChatMessage, OpenAICompatModel, TextDelta
from tickloop.testing.openai_server import MODEL_ID, OpenAIServer, Reply

HELLO = [ChatMessage("user", "hello")]


async def drain(model: OpenAICompatModel) -> str:
    return "".join([e.text async for e in model.stream(HELLO) if isinstance(e, TextDelta)])


@pytest.mark.parametrize(
    ("status", "hint"),
    [(500, "its log says why"), (429, "does not retry"), (401, "check"), (404, "base URL")],
)
async def test_http_errors_name_the_status_and_never_the_key(
    server: OpenAIServer, model: OpenAICompatModel, api_key: str, status: int, hint: str
) -> None:
    """An HTTP error names its status, the server's message and what to do, with the key redacted."""
    server.default = Reply.error(status, f"Incorrect API key provided: {api_key}")
    for call in (drain(model), model.complete(HELLO)):
        with pytest.raises(ModelError) as caught:
            await call
        message = str(caught.value)
        assert f"HTTP {status}" in message
        assert hint in message
        assert "'test'" in message
        assert api_key not in message
        assert "[redacted]" in message
        assert caught.value.__cause__ is None


async def test_no_retry_after_an_error(server: OpenAIServer, model: OpenAICompatModel) -> None:
    """A failed call reaches the server exactly once: tickloop never retries on a timer."""
    server.default = Reply.error(503)
    with pytest.raises(ModelError):
        await drain(model)
    assert len(server.bodies()) == 1


async def test_malformed_chunk_is_a_model_error(server: OpenAIServer, model: OpenAICompatModel) -> None:
    """A stream chunk that is not JSON ends the stream with a ModelError saying it was malformed."""
    server.default = Reply.malformed(after=1)
    with pytest.raises(ModelError, match="malformed stream chunk"):
        await drain(model)


@pytest.mark.parametrize("after", [0, 2])
async def test_disconnect_mid_stream_is_a_model_error(
    server: OpenAIServer, model: OpenAICompatModel, after: int
) -> None:
    """A connection dropped mid-stream is a ModelError that says the answer is incomplete."""
    server.default = Reply.disconnect(after=after)
    with pytest.raises(ModelError, match="lost mid-stream"):
        await drain(model)


async def test_stream_ending_without_a_finish_is_a_model_error(
    server: OpenAIServer, model: OpenAICompatModel
) -> None:
    """A stream that closes cleanly but never says it finished is not mistaken for a whole answer."""
    server.default = Reply(truncate_after=1)
    with pytest.raises(ModelError, match="before the model finished"):
        await drain(model)


@pytest.mark.parametrize("after", [0, 2])
async def test_stalled_stream_fails_within_the_timeout(server: OpenAIServer, after: int) -> None:
    """A server that goes silent (before or mid-answer) gives a ModelError within the timeout, not a hang."""
    server.default = Reply.stall(after=after, seconds=10)
    model = OpenAICompatModel("slow", base_url=server.base_url, model=MODEL_ID, timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(ModelError, match=r"no answer within 0\.5 s"):
        await drain(model)
    assert time.monotonic() - started < 1.5


async def test_connection_refused_is_a_model_error() -> None:
    """Nothing listening at the base URL is a ModelError asking whether the server runs."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAICompatModel("gone", base_url=f"http://127.0.0.1:{port}/v1", model="m", timeout_s=1)
    with pytest.raises(ModelError, match="cannot connect"):
        await drain(model)
    with pytest.raises(ModelError, match="cannot connect"):
        await model.list_model_ids(timeout_s=1)


async def test_wrong_shape_json_is_a_model_error(server: OpenAIServer, model: OpenAICompatModel) -> None:
    """A server answering JSON of the wrong shape is a ModelError, not an AttributeError."""
    server.default = Reply(content="ok", raw_chunk='{"choices": "not a list"}')
    with pytest.raises(ModelError, match="malformed"):
        await drain(model)


async def test_cancelling_a_slow_stream_closes_it_promptly(server: OpenAIServer) -> None:
    """An interrupt cancels the turn at once and the server sees the connection closed."""
    server.default = Reply.text("x" * 40, chunks=40, chunk_delay=0.1)
    model = OpenAICompatModel("slow", base_url=server.base_url, model=MODEL_ID, timeout_s=5)
    first = asyncio.Event()

    async def consume() -> None:
        async for event in model.stream(HELLO):
            if isinstance(event, TextDelta) and event.text:
                first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), timeout=3)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 0.3
    assert await asyncio.to_thread(server.wait_client_closed, 2.0)


async def test_stalled_complete_fails_within_the_timeout(server: OpenAIServer) -> None:
    """A non-streamed call to a server that never answers is a ModelError within the timeout."""
    server.default = Reply.stall(seconds=10)
    model = OpenAICompatModel("slow", base_url=server.base_url, model=MODEL_ID, timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(ModelError, match="no answer within"):
        await model.complete(HELLO)
    assert time.monotonic() - started < 1.5


async def test_an_error_event_mid_stream_is_a_model_error(
    server: OpenAIServer, model: OpenAICompatModel
) -> None:
    """An in-stream error object (as vLLM and llama.cpp send) ends the stream with its message."""
    server.default = Reply(raw_chunk='{"error": {"message": "context length exceeded", "code": 400}}')
    with pytest.raises(ModelError, match="context length exceeded"):
        await drain(model)


@pytest.mark.parametrize("body", ["{not json", '{"choices": [{"delta": {"content": 5}}]}', "[]"])
async def test_a_malformed_whole_answer_is_a_model_error(
    server: OpenAIServer, model: OpenAICompatModel, body: str
) -> None:
    """A whole answer (gathered from a stream) with a chunk that is not JSON or not a chunk is a
    ModelError, never a crash."""
    server.default = Reply(raw_chunk=body)
    with pytest.raises(ModelError, match="'test'"):
        await model.complete(HELLO)


async def test_breaking_out_of_a_stream_with_aclosing_closes_it(server: OpenAIServer) -> None:
    """A consumer that stops reading early (under contextlib.aclosing) closes the HTTP stream at once."""
    server.default = Reply.text("y" * 40, chunks=40, chunk_delay=0.05)
    model = OpenAICompatModel("slow", base_url=server.base_url, model=MODEL_ID, timeout_s=5)
    async with contextlib.aclosing(model.stream(HELLO)) as events:
        async for event in events:
            if isinstance(event, TextDelta) and event.text:
                break
    assert await asyncio.to_thread(server.wait_client_closed, 2.0)


async def test_a_refused_response_format_says_which_setting_to_change(
    server: OpenAIServer, model: OpenAICompatModel
) -> None:
    """A server that fails on the response_format (llama-cpp-python answers HTTP 500) gets the hint to
    set responseFormat, not "try again later"."""
    server.default = Reply.error(500, "response_format.type: Input should be 'text' or 'json_object'")
    with pytest.raises(ModelError, match=r'set responseFormat for this endpoint.*"json_object_schema"'):
        await model.complete(HELLO, json_schema={"type": "object"})
