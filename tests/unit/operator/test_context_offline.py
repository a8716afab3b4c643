"""The context packet stays bounded as history grows; the offline model answers every operator schema."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from tickloop.models.base import ChatMessage
from tickloop.operator.context import ContextPacket, estimated_tokens, read_packet, user_message
from tickloop.operator.offline import answer
from tickloop.operator.schemas import (
    ActionAnswer,
    ActionIntentOut,
    ConsolidationOut,
    CritiqueOut,
    ReviewOut,
    action_schema,
    json_schema,
    to_intent,
)

GOAL = {"version": 1, "title": "Ship the thesis", "body": "Finish chapter 3 by Friday."}
BOARD = [
    {"id": 1, "title": "Write 3.1", "priority": 5, "status": "todo"},
    {"id": 2, "title": "Plot results", "priority": 9, "status": "doing"},
    {"id": 3, "title": "Ask advisor", "priority": 7, "status": "blocked"},
    {"id": 4, "title": "Outline", "priority": 1, "status": "done"},
]


def packet_with_history(n: int) -> ContextPacket:
    return ContextPacket(
        goal=GOAL,
        tick="fast",
        board=BOARD,
        recent_progress=[{"kind": "fast", "outcome": "done", "at": f"t{i}"} for i in range(n)],
        observations=[{"source": "mail", "tainted": True, "summary": "x" * 2000} for _ in range(n)],
        tried_and_failed=[f"email|send report {i}|bob@example.org" for i in range(n)],
    )


@pytest.mark.parametrize("history", [10, 1_000, 20_000])
def test_packet_size_is_bounded_whatever_the_history(history: int) -> None:
    """A packet never exceeds its byte budget, so history size cannot grow a tick's prompt."""
    text = packet_with_history(history).render(budget_bytes=16_000)
    assert len(text.encode("utf-8")) <= 16_000
    assert estimated_tokens(text) <= 4_000
    assert '"goal"' in text  # the goal is never dropped to make room


def test_packet_keeps_the_newest_entries_and_cuts_long_strings() -> None:
    """When trimming, the oldest entries go first and long strings are cut, not the structure."""
    text = packet_with_history(500).render(budget_bytes=16_000)
    back = read_packet(user_message(ContextPacket(goal=GOAL, tick="fast")))
    assert back is not None
    assert back["goal"] == GOAL
    assert '"t499"' in text
    assert '"t0"' not in text


def ask(kind: type[msgspec.Struct], packet: ContextPacket) -> msgspec.Struct:
    """The offline answer for ``kind``'s schema, decoded as the tick decodes it (a fast answer by its
    ``actionType``, then flattened)."""
    if kind is ActionIntentOut:
        raw = answer([ChatMessage("system", "s"), ChatMessage("user", user_message(packet))], action_schema())
        union: Any = ActionAnswer
        return to_intent(msgspec.json.decode(raw, type=union))
    raw = answer([ChatMessage("system", "s"), ChatMessage("user", user_message(packet))], json_schema(kind))
    return msgspec.json.decode(raw, type=kind)


def test_offline_fast_turns_the_current_step_into_a_note() -> None:
    """With a current step, the offline doer stages a note about exactly that step."""
    out = ask(
        ActionIntentOut, ContextPacket(goal=GOAL, tick="fast", current_step={"id": 7, "title": "Write 3.1"})
    )
    assert isinstance(out, ActionIntentOut)
    assert (out.action_type, out.title) == ("note", "Progress note: Write 3.1")


def test_offline_fast_without_a_plan_uses_the_top_unblocked_task() -> None:
    """With no plan, the offline doer derives its action from the highest-priority open task."""
    out = ask(ActionIntentOut, ContextPacket(goal=GOAL, tick="fast", board=BOARD, replan_needed=True))
    assert isinstance(out, ActionIntentOut)
    assert out.title == "Progress note: Plot results"


def test_offline_slow_orders_unblocked_tasks_by_priority() -> None:
    """The offline reviewer writes one plan step per unblocked, unfinished task, highest priority first."""
    out = ask(ReviewOut, ContextPacket(goal=GOAL, tick="slow", board=BOARD))
    assert isinstance(out, ReviewOut)
    assert [(s.title, s.task_id) for s in out.plan] == [("Plot results", 2), ("Write 3.1", 1)]
    assert out.behind == ["Ask advisor"]


@pytest.mark.parametrize(
    ("outcome", "failure"),
    [("gate_stop", "gate_refusal"), ("blocked", "repeated_failure"), ("failed", "tool_error")],
)
def test_offline_critique_and_consolidation_are_schema_valid(outcome: str, failure: str) -> None:
    """Every offline answer decodes against its strict schema."""
    critique = ask(CritiqueOut, ContextPacket(goal=GOAL, tick="critique", outcome=outcome))
    assert isinstance(critique, CritiqueOut)
    assert critique.failure_type == failure
    summary = ask(ConsolidationOut, ContextPacket(goal=GOAL, tick="consolidate", board=BOARD))
    assert isinstance(summary, ConsolidationOut)
    assert "4 tasks, 1 done, 1 blocked" in summary.state_of_play


@pytest.mark.parametrize(
    ("step", "kind", "fields"),
    [
        (
            "Email ada@example.org: weekly update",
            "email",
            {"recipient": "ada@example.org", "title": "weekly update"},
        ),
        (
            "Buy Acme 42.50: a new keyboard",
            "spend",
            {"vendor": "Acme", "amount": 42.5, "title": "a new keyboard"},
        ),
        ("Emailing is hard", "note", {"title": "Progress note: Emailing is hard"}),
    ],
)
def test_offline_fast_maps_step_titles_onto_the_ladder(
    step: str, kind: str, fields: dict[str, object]
) -> None:
    """Deterministic offline answers can stage an email or a spend, so the demo shows every rung."""
    out = ask(ActionIntentOut, ContextPacket(goal=GOAL, tick="fast", current_step={"id": 1, "title": step}))
    assert isinstance(out, ActionIntentOut)
    assert out.action_type == kind
    for name, value in fields.items():
        assert getattr(out, name) == value
