"""Twenty varied goals and the fast tick's request for each: how often does a real model answer a
schema-valid action intent? Shared by the ``local_model`` tests and ``bench_local``, so the test and
the benchmark measure the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tickloop.errors import ValidationError
from tickloop.models.base import ChatMessage, ChatModel
from tickloop.models.structured import decode_structured, schema_for
from tickloop.operator.context import ContextPacket, user_message
from tickloop.operator.prompts import load_prompt
from tickloop.operator.schemas import ActionIntentOut

#: (goal title, current plan step): different domains, lengths and verbs
GOALS: tuple[tuple[str, str], ...] = (
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
)


def goal_body(title: str) -> str:
    """The goal model's text for ``title`` (what the person would have written)."""
    return f"The person wants to: {title.lower()}."


def intent_messages(goal: str, step: str) -> list[ChatMessage]:
    """What the fast tick asks: its versioned prompt, then a context packet with the goal and step."""
    packet = ContextPacket(
        goal={"version": 1, "title": goal, "body": goal_body(goal)},
        tick="fast",
        current_step={"title": step},
    )
    return [ChatMessage("system", load_prompt("fast").text), ChatMessage("user", user_message(packet))]


@dataclass(frozen=True, slots=True)
class IntentRate:
    """How many of ``asked`` answers decoded as ``ActionIntentOut``; the refused texts, for messages."""

    asked: int
    valid: int
    refused: tuple[str, ...]

    @property
    def rate(self) -> float:
        return self.valid / self.asked if self.asked else 0.0

    def __str__(self) -> str:
        return f"{self.valid}/{self.asked} ({self.rate:.0%})"


async def intent_rate(model: ChatModel, goals: Sequence[tuple[str, str]] = GOALS) -> IntentRate:
    """Ask ``model`` for one action intent per goal, with the schema, and validate each answer (the
    model's ``responseFormat`` decides whether the schema reaches the server as a grammar)."""
    schema = schema_for(ActionIntentOut)
    refused: list[str] = []
    for goal, step in goals:
        completion = await model.complete(intent_messages(goal, step), json_schema=schema)
        try:
            decode_structured(completion.text, ActionIntentOut)
        except ValidationError:
            refused.append(completion.text)
    return IntentRate(len(goals), len(goals) - len(refused), tuple(refused))
