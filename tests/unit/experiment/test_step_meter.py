"""A step's figures are the model's: timed from the turn's request, which may precede the turn."""

from __future__ import annotations

import asyncio
import time

from tickloop.experiment.runner import StepMeter, TurnSeen, _LimitedModel
from tickloop.harness.events import TextStreamed, TurnEnded, TurnStarted
from tickloop.harness.session import Terminal, Turn
from tickloop.models.offline import OfflineModel
from tickloop.protocol.envelope import PLUGIN_SOURCE, Message
from tickloop.protocol.predicates import TerminalStatus


class _Quiet:
    def planned(self, *args: object) -> None:
        pass

    def step_done(self, *, error: bool) -> None:
        pass

    def session_done(self, cell: str, status: str) -> None:
        pass


def test_a_step_is_timed_from_its_request_sent_before_the_turn_started() -> None:
    """The agent sends a turn's request before the turn is written: latency and time to first text
    count from that request, the finish reason is that answer's, and the next turn starts afresh."""
    model = _LimitedModel(OfflineModel(), asyncio.Semaphore(1))
    meter = StepMeter(_Quiet(), model=model)
    now = time.monotonic()
    model.seen = TurnSeen(sent=now - 0.5, first_text=now - 0.4, finish_reason="length")
    step = Message(role="user", content=("tick",), source=PLUGIN_SOURCE, meta={"step": 1})
    meter(TurnStarted(Turn(number=2, input=step)))
    meter(TextStreamed(2, "some words"))
    meter(TurnEnded(Terminal(turn=2, status=TerminalStatus.COMPLETED)))
    (row,) = meter.steps
    assert row["latencyMs"] >= 500
    assert 100 <= row["ttftMs"] < row["latencyMs"]
    assert row["finishReason"] == "length"
    assert (row["words"], row["chars"]) == (2, 10)
    assert model.seen == TurnSeen()  # the next turn's requests are its own
