"""The chat-completions wire format as the scripted server writes it: chunks, whole answers, usage,
errors and the model list, shaped as OpenAI's API shapes them."""

from __future__ import annotations

from typing import Any

from tickloop.testing.openai_faults import Reply

MODEL_ID = "tickloop-test"


def chunk_head() -> dict[str, Any]:
    return {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0, "model": MODEL_ID}


def choice(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}


def usage(reply: Reply, body: dict[str, Any], text: str) -> dict[str, int]:
    if reply.usage is not None:
        prompt, completion = reply.usage
    else:
        words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        prompt, completion = max(1, words), max(1, len(text.split()))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def completion(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    text = reply.answer(body)
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if reply.calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in reply.calls
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL_ID,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}],
        **({"usage": usage(reply, body, text)} if reply.report_usage else {}),
    }


def error_body(status: int, message: str) -> dict[str, Any]:
    kind = (
        "rate_limit_exceeded"
        if status == 429
        else "invalid_request_error"
        if status < 500
        else "server_error"
    )
    return {"error": {"message": message, "type": kind, "param": None, "code": str(status)}}


def model_entry() -> dict[str, Any]:
    return {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "tickloop"}
