"""One trial of ``tickloop operator eval``: a scenario seeded into a throwaway store, the real tick
run against it, and what came out (the model's raw answer, the row, the intents, tokens and time).

The model is wrapped (``Recording``) so every call's answer text, token counts and wall time are
kept exactly as the tick saw them. The executor never runs: an intent the tick stages stays where
the gate put it, and nothing leaves the machine (the suite is dry by construction).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from tickloop.clock import SystemClock
from tickloop.config import Settings
from tickloop.errors import ModelError
from tickloop.models.base import ChatMessage, ChatModel, Completion, StreamEvent, ToolSpec
from tickloop.operator.domain import TaskStatus
from tickloop.operator.eval.scenarios import PROFILE, Scenario, seed
from tickloop.operator.runner import run_tick
from tickloop.operator.store import open_store


@dataclass(frozen=True, slots=True)
class Call:
    """One model call of a tick, as the tick saw it."""

    text: str
    tokens_in: int | None
    tokens_out: int | None
    seconds: float
    finish_reason: str | None
    #: the provider's failure (the call got no answer: ``text`` is "")
    error: str = ""
    #: UTF-8 bytes of the messages sent (for an estimate when the server counts no tokens)
    prompt_bytes: int = 0
    #: the messages sent, as ``{"role", "content"}`` (what ``--format inspect`` shows)
    prompt: list[dict[str, str]] = field(default_factory=list)


class Recording:
    """A ``ChatModel`` that passes every call through and keeps what each answered."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.name, self.label = inner.name, inner.label
        self.calls: list[Call] = []

    @property
    def timeout_s(self) -> float | None:
        value = getattr(self.inner, "timeout_s", None)
        return value if isinstance(value, int | float) else None

    def stream(
        self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[StreamEvent]:
        return self.inner.stream(messages, tools=tools)

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        sent = sum(len(m.content.encode("utf-8", "replace")) for m in messages)
        prompt = [{"role": m.role, "content": m.content} for m in messages]
        started = time.monotonic()
        try:
            done = await self.inner.complete(messages, json_schema=json_schema, max_tokens=max_tokens)
        except ModelError as exc:  # no answer: scored as one that is not the schema
            self.calls.append(
                Call("", None, None, time.monotonic() - started, None, exc.message, sent, prompt)
            )
            raise
        usage = done.usage
        tokens_in = None if usage is None else usage.input_tokens
        tokens_out = None if usage is None else usage.output_tokens
        seconds = time.monotonic() - started
        self.calls.append(
            Call(done.text, tokens_in, tokens_out, seconds, done.finish_reason, "", sent, prompt)
        )
        return done

    def keep_connections(self) -> None:
        self.inner.keep_connections()

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass
class Trial:
    """What one run of one scenario produced."""

    scenario: str
    repeat: int
    outcome: str
    error: str
    #: the model's raw answer to the tick's own call (None: the tick asked no model)
    answer: str | None
    calls: list[Call] = field(default_factory=list)
    #: the statuses of the intents the tick staged
    statuses: list[str] = field(default_factory=list)
    #: the board's open task ids, as the tick saw them
    open_ids: list[int] = field(default_factory=list)
    seconds: float = 0.0


def run_trial(
    scenario: Scenario, repeat: int, model: ChatModel, settings: Settings, env: Mapping[str, str]
) -> Trial:
    """Seed a fresh in-memory store with ``scenario`` and run its tick once (no critique call)."""
    clock = SystemClock()
    recording = Recording(model)
    store = open_store("memory://")
    try:
        seed(store, scenario, clock.now())
        before = {i.id for i in store.list_intents(PROFILE)}
        open_ids = [
            t.id for t in store.list_tasks(PROFILE) if t.status not in (TaskStatus.BLOCKED, TaskStatus.DONE)
        ]
        started = time.monotonic()
        run_tick(
            scenario.tick, store=store, profile=PROFILE, settings=settings, env=env, clock=clock,
            log=lambda _: None, options={"critique": False}, model=recording,
        )  # fmt: skip
        seconds = time.monotonic() - started
        row = store.recent_progress(PROFILE, limit=1)[0]
        made = [i for i in store.list_intents(PROFILE) if i.id not in before]
    finally:
        store.close()
    first = recording.calls[0].text if recording.calls else None
    statuses = [str(i.status) for i in made]
    return Trial(
        scenario.name,
        repeat,
        str(row.outcome),
        row.error,
        first,
        recording.calls,
        statuses,
        open_ids,
        seconds,
    )


def as_plain(trial: Trial) -> dict[str, Any]:
    """The trial as JSON-ready data (``--json``)."""
    plain: dict[str, Any] = msgspec.to_builtins(trial)
    return plain
