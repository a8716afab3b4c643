"""A model request sent ahead of its records' fsyncs, its answer held unread until they are durable.

With durable writes off the event loop (``harness.durable``) a step waits for three fsyncs one
after another: the terminal, the ledger records that schedule the next step, the next turn's input.
On a slow disk those waits, not the model, set the pace. A request changes no state and leaves no
record, so the agent sends it at once and makes the records that led to it durable while it is in
flight: ``AnswerAhead`` runs the stream in a task of its own and holds its events until the agent,
having settled, reads them. Nothing of the answer is written to a file or shown to a listener
before everything that led to the request is durable, so every state a crash can leave on disk is
one it could leave before (a request in flight is no record).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from tickloop.models.base import StreamEvent


class AnswerAhead:
    """One model answer, requested now and read later (``events``), or given up (``close``)."""

    def __init__(self, request: Callable[[], AsyncIterator[StreamEvent]]) -> None:
        self._held: asyncio.Queue[StreamEvent | None] = asyncio.Queue()
        self._task = asyncio.ensure_future(self._pump(request))

    async def _pump(self, request: Callable[[], AsyncIterator[StreamEvent]]) -> None:
        try:
            stream = request()
            try:
                async for event in stream:
                    self._held.put_nowait(event)
            finally:
                # The provider's stream closes now, not whenever the generator is collected.
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()
        finally:
            self._held.put_nowait(None)  # the reader learns the end, whatever it was

    async def events(self) -> AsyncIterator[StreamEvent]:
        """The answer's events as they arrive; then whatever ended the stream is raised."""
        while (event := await self._held.get()) is not None:
            yield event
        await self._task  # the provider's error (a ``ModelError``), if that is what ended it

    async def close(self) -> None:
        """Give the answer up if it is still arriving (an interrupt, the agent closing)."""
        if not self._task.done():
            self._task.cancel()
        await asyncio.wait((self._task,))
        if not self._task.cancelled():
            self._task.exception()  # already raised to the reader, or never wanted: retrieved


class AnswerNow:
    """The same interface for an answer with nothing to wait for: the stream is read directly."""

    def __init__(self, request: Callable[[], AsyncIterator[StreamEvent]]) -> None:
        self._stream = request()

    def events(self) -> AsyncIterator[StreamEvent]:
        return self._stream

    async def close(self) -> None:
        """Close the provider's stream now, not whenever the generator is collected."""
        aclose = getattr(self._stream, "aclose", None)
        if aclose is not None:
            await aclose()
