"""The OpenAI-compatible provider against a real local server: what a turn streams and sends."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tickloop.models import (
    ChatMessage,
    Finished,
    OpenAICompatModel,
    TextDelta,
    Usage,
    openai_compat,
    schema_for,
)
from tickloop.operator.schemas import ActionIntentOut
from tickloop.testing.openai_server import MODEL_ID, OpenAIServer, Reply

HELLO = [ChatMessage("system", "be brief"), ChatMessage("user", "hello there")]


def bounds(value: Any) -> list[int]:
    """Every maxLength anywhere in a schema."""
    if isinstance(value, dict):
        own = [value["maxLength"]] if "maxLength" in value else []
        return own + [n for item in value.values() for n in bounds(item)]
    if isinstance(value, list):
        return [n for item in value for n in bounds(item)]
    return []


async def collect(model: OpenAICompatModel) -> tuple[str, list[Finished], int]:
    text, finishes, deltas = "", [], 0
    async for event in model.stream(HELLO):
        if isinstance(event, TextDelta):
            text += event.text
            deltas += 1
        else:
            finishes.append(event)
    return text, finishes, deltas


async def test_streamed_text_assembles_exactly(server: OpenAIServer, model: OpenAICompatModel) -> None:
    """The streamed deltas join to exactly the server's answer, and the stream ends with one Finished."""
    server.default = Reply.text("Hello, wörld — in five chunks!", chunks=5)
    text, finishes, deltas = await collect(model)
    assert text == "Hello, wörld — in five chunks!"
    assert deltas == 5
    assert len(finishes) == 1
    assert finishes[0].finish_reason == "stop"


async def test_stream_maps_the_usage_chunk(server: OpenAIServer, model: OpenAICompatModel) -> None:
    """Token usage from the final usage chunk reaches Finished as input/output tokens."""
    server.default = Reply(content="a b c", usage=(17, 3))
    _, finishes, _ = await collect(model)
    assert finishes[0].usage == Usage(input_tokens=17, output_tokens=3)


async def test_stream_request_asks_for_usage_and_carries_the_messages(
    server: OpenAIServer, model: OpenAICompatModel, api_key: str
) -> None:
    """The request streams, asks for usage, names the model and carries the messages verbatim."""
    await collect(model)
    (body,) = server.bodies()
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["model"] == MODEL_ID
    assert body["messages"] == [m.to_wire() for m in HELLO]
    assert "response_format" not in body
    assert server.requests[0].headers["authorization"] == f"Bearer {api_key}"


async def test_complete_returns_the_whole_answer_with_usage(
    server: OpenAIServer, model: OpenAICompatModel
) -> None:
    """A completion returns the whole text, the usage, the model id and why it ended; it is gathered
    from a stream, so a request given up on can be closed and the server stops generating."""
    server.default = Reply(content="the whole answer", usage=(5, 3))
    completion = await model.complete(HELLO)
    assert completion.text == "the whole answer"
    assert completion.usage == Usage(5, 3)
    assert completion.model == MODEL_ID
    assert (completion.finish_reason, completion.truncated) == ("stop", False)
    assert server.bodies()[0]["stream"] is True


async def test_calls_without_keep_alive_use_fresh_connections(
    server: OpenAIServer, model: OpenAICompatModel
) -> None:
    """On loopback each call opens its own connection, so none is left open after a call."""
    await model.complete(HELLO)
    await model.complete(HELLO)
    assert len({r.client_port for r in server.requests}) == 2


async def test_complete_sends_the_json_schema_as_response_format(
    server: OpenAIServer, model: OpenAICompatModel
) -> None:
    """With a schema, the request carries response_format json_schema with that schema, strict."""
    schema = {"title": "Action intent", "type": "object", "properties": {"type": {"type": "string"}}}
    await model.complete(HELLO, json_schema=schema)
    sent = server.bodies()[0]["response_format"]
    assert sent == {
        "type": "json_schema",
        "json_schema": {"name": "Action_intent", "schema": schema, "strict": True},
    }


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("json_object_schema", {"type": "json_object", "schema": {"type": "object"}}),
        ("json_object", {"type": "json_object"}),
        ("none", None),
    ],
)
async def test_response_format_fallbacks_for_servers_without_schema_support(
    server: OpenAIServer, mode: str, expected: dict[str, object] | None
) -> None:
    """responseFormat json_object_schema sends the schema inside JSON mode (llama-cpp-python's form),
    json_object only the JSON mode, none no response_format at all."""
    model = OpenAICompatModel(
        "test",
        base_url=server.base_url,
        model=MODEL_ID,
        response_format=mode,  # type: ignore[arg-type]
    )
    await model.complete(HELLO, json_schema={"type": "object"})
    assert server.bodies()[0].get("response_format") == expected


async def test_sampling_options_are_sent_when_configured(server: OpenAIServer) -> None:
    """temperature and max_tokens reach the server when set (temperature 0 makes local models repeat)."""
    model = OpenAICompatModel("t", base_url=server.base_url, model=MODEL_ID, temperature=0, max_tokens=64)
    await model.complete(HELLO)
    body = server.bodies()[0]
    assert (body["temperature"], body["max_tokens"]) == (0, 64)


async def test_keyless_endpoint_never_sends_the_ambient_openai_key(
    server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An endpoint without a key never receives OPENAI_API_KEY or the OpenAI org/project ids."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-ambient-real-openai-key-000000")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-ambient")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-ambient")
    model = OpenAICompatModel("local", base_url=server.base_url, model=MODEL_ID)
    await model.complete(HELLO)
    headers = server.requests[0].headers
    assert "sk-ambient" not in headers.get("authorization", "")
    assert "openai-organization" not in headers
    assert "openai-project" not in headers


async def test_list_model_ids_reports_what_the_server_serves(
    server: OpenAIServer, model: OpenAICompatModel
) -> None:
    """GET /models answers with the served model ids (what `models list --check` shows)."""
    assert await model.list_model_ids() == [MODEL_ID]


def test_repr_never_shows_the_key(model: OpenAICompatModel, api_key: str) -> None:
    """A provider printed in a log or traceback shows its endpoint, never its key."""
    assert api_key not in repr(model)
    assert "test" in repr(model)


def test_keep_alive_defaults_to_remote_hosts_only() -> None:
    """Loopback servers get a fresh connection per call (no socket left behind); remote ones reuse."""
    local = OpenAICompatModel("a", base_url="http://127.0.0.1:8087/v1", model="m")
    named = OpenAICompatModel("b", base_url="http://localhost:8087/v1", model="m")
    remote = OpenAICompatModel("c", base_url="https://api.deepseek.com/v1", model="m")
    assert (local.keep_alive, named.keep_alive, remote.keep_alive) == (False, False, True)


async def test_keep_alive_reuses_one_connection_until_aclose(server: OpenAIServer) -> None:
    """With keep_alive, consecutive calls share a connection, and aclose() releases it."""
    model = OpenAICompatModel("k", base_url=server.base_url, model=MODEL_ID, keep_alive=True)
    for _ in range(3):
        assert (await model.complete(HELLO)).text
    assert len({r.client_port for r in server.requests}) == 1
    await model.aclose()


async def test_keep_connections_reuses_a_loopback_connection_until_aclose(server: OpenAIServer) -> None:
    """keep_connections() (what a chat session asks) makes even a loopback model reuse one
    connection; aclose() closes it, and the model still answers afterwards on a new one."""
    model = OpenAICompatModel("k", base_url=server.base_url, model=MODEL_ID)
    await model.complete(HELLO)  # a client built before the switch holds no idle connection
    model.keep_connections()
    for _ in range(3):
        assert (await model.complete(HELLO)).text
    ports = [r.client_port for r in server.requests]
    assert len(set(ports[1:])) == 1
    assert ports[0] != ports[1]
    await model.aclose()
    assert await asyncio.to_thread(server.wait_connections_closed, 5.0)
    assert (await model.complete(HELLO)).text
    assert server.requests[-1].client_port not in ports
    await model.aclose()


async def test_a_kept_connection_idle_past_the_expiry_is_not_reused(
    server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection idle longer than KEEPALIVE_EXPIRY_S (4 s, under the servers' 5 s) is dropped,
    so a call is never sent on one the server may be closing at that moment."""
    monkeypatch.setattr(openai_compat, "KEEPALIVE_EXPIRY_S", 0.2)
    model = OpenAICompatModel("k", base_url=server.base_url, model=MODEL_ID)
    model.keep_connections()
    await model.complete(HELLO)
    await model.complete(HELLO)
    await asyncio.sleep(0.5)
    await model.complete(HELLO)
    first, second, third = (r.client_port for r in server.requests)
    assert first == second != third
    await model.aclose()


async def test_json_object_schema_caps_string_bounds_for_the_grammar(server: OpenAIServer) -> None:
    """For llama-cpp-python's grammar the schema keeps its structure, with every string bound capped
    at 96 (llama.cpp unrolls each into nested rules and crashes at 2,000); the caller's is untouched."""
    model = OpenAICompatModel(
        "t", base_url=server.base_url, model=MODEL_ID, response_format="json_object_schema"
    )
    schema = schema_for(ActionIntentOut)
    await model.complete(HELLO, json_schema=schema)
    sent = server.bodies()[0]["response_format"]["schema"]
    props = sent["properties"]
    assert [props[name]["maxLength"] for name in ("title", "body", "rationale")] == [96, 96, 96]
    assert props["title"]["minLength"] == 1
    assert props["actionType"]["enum"] == schema["properties"]["actionType"]["enum"]
    assert sent["required"] == schema["required"]
    assert set(bounds(sent)) == {96}  # $defs too
    assert schema["properties"]["body"]["maxLength"] == 20_000  # the caller's schema is untouched


@pytest.mark.parametrize(("llama_cpp", "expected"), [(True, "json_object"), (False, "json_schema")])
async def test_auto_asks_a_loopback_server_once_whether_it_is_llama_cpp(
    server: OpenAIServer, llama_cpp: bool, expected: str
) -> None:
    """An endpoint with responseFormat unset (``auto``) asks GET /props once: llama.cpp's server gets
    json_object_schema (the format that measured best there), any other server json_schema."""
    if llama_cpp:
        server.act_as_llama_cpp()
    model = OpenAICompatModel("t", base_url=server.base_url, model=MODEL_ID, response_format="auto")
    await model.complete(HELLO, json_schema={"type": "object"})
    await model.complete(HELLO, json_schema={"type": "object"})
    sent = [body["response_format"]["type"] for body in server.bodies()]
    assert sent == [expected, expected]
    assert [r.path for r in server.requests].count("/props") == 1
    assert model.response_format == ("json_object_schema" if llama_cpp else "json_schema")


async def test_auto_never_asks_a_remote_endpoint(server: OpenAIServer) -> None:
    """A remote endpoint is not probed (no extra round trip per tick): it gets json_schema."""
    model = OpenAICompatModel("t", base_url=server.base_url, model=MODEL_ID, response_format="auto")
    model.base_url = "https://api.example.invalid/v1"  # what the choice reads; nothing is sent there
    assert await model._detect_format() == "json_schema"
    assert server.requests == []
