"""Deterministic, schema-valid operator answers for the offline model, so the whole loop runs with
no network. They read the context packet back from the prompt; they never invent facts.

- fast: turn the current step (or, with no plan, the top unblocked task) into a ``note`` intent;
- slow: order unblocked tasks by priority and write a plan step for each;
- consolidate: summarise the board and recent progress; refresh the goal text as a draft;
- critique: one sentence keyed to the outcome, with a failure type from the taxonomy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from tickloop.models.base import ChatMessage
from tickloop.operator.context import read_packet


def answer(messages: Sequence[ChatMessage], schema: Mapping[str, Any]) -> str:
    """The offline model's JSON answer for one structured request."""
    packet = next((p for m in reversed(messages) if (p := read_packet(m.content)) is not None), None) or {}
    title = _schema_title(schema)
    make = {
        "ActionIntentOut": _fast,
        "ReviewOut": _slow,
        "ConsolidationOut": _consolidate,
        "CritiqueOut": _critique,
    }
    return json.dumps(make.get(title, lambda _: {})(packet), ensure_ascii=False)


def _schema_title(schema: Mapping[str, Any]) -> str:
    ref = str(schema.get("$ref", ""))
    return ref.rsplit("/", 1)[-1] or str(schema.get("title", ""))


def _open_tasks(packet: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    tasks = [t for t in packet.get("board", []) if t.get("status") not in ("blocked", "done")]
    return sorted(tasks, key=lambda t: (-int(t.get("priority", 0)), int(t.get("id", 0))))


_EMAIL_STEP = re.compile(r"email\s+(\S+@\S+?)\s*:\s*(.+)", re.IGNORECASE)
_BUY_STEP = re.compile(r"buy\s+(.+?)\s+(\d+(?:\.\d+)?)\s*:\s*(.+)", re.IGNORECASE)


def _fast(packet: Mapping[str, Any]) -> dict[str, Any]:
    """A note about the current step; a step titled ``Email ADDRESS: subject`` becomes an email and
    ``Buy VENDOR AMOUNT: item`` a spend, so a demo can show every rung of the ladder offline."""
    step = packet.get("current_step") or {}
    subject = step.get("title") or next((t["title"] for t in _open_tasks(packet)), None)
    subject = str(subject or packet.get("goal", {}).get("title", "the goal"))
    goal = str(packet.get("goal", {}).get("title", ""))
    if match := _EMAIL_STEP.fullmatch(subject.strip()):
        return {
            "actionType": "email",
            "title": match[2][:96],
            "recipient": match[1][:96],
            "body": f"Hello,\n\n{match[2]}.\n\n(sent by the operator working on: {goal})"[:480],
            "rationale": "offline model: the step asks for an email",
        }
    if match := _BUY_STEP.fullmatch(subject.strip()):
        return {
            "actionType": "spend",
            "title": match[3][:96],
            "vendor": match[1][:96],
            "amount": float(match[2]),
            "rationale": "offline model: the step asks for a purchase",
        }
    return {
        "actionType": "note",
        "title": f"Progress note: {subject}"[:96],
        "body": f"Working on: {subject}\nGoal: {goal}"[:480],
        "rationale": "offline model: record the current step as a note",
    }


def _slow(packet: Mapping[str, Any]) -> dict[str, Any]:
    tasks = _open_tasks(packet)
    return {
        "priorities": [{"taskId": int(t["id"]), "priority": int(t.get("priority", 0))} for t in tasks[:20]],
        "plan": [{"title": str(t["title"])[:96], "taskId": int(t["id"])} for t in tasks[:12]],
        "drift": [],
        "behind": [str(t["title"])[:96] for t in packet.get("board", []) if t.get("status") == "blocked"][:4],
    }


def _consolidate(packet: Mapping[str, Any]) -> dict[str, Any]:
    board = packet.get("board", [])
    done = sum(1 for t in board if t.get("status") == "done")
    blocked = [t["title"] for t in board if t.get("status") == "blocked"]
    outcomes = [p.get("outcome") for p in packet.get("recent_progress", [])]
    goal = packet.get("goal", {})
    summary = (
        f"Goal: {goal.get('title', '?')}. Board: {len(board)} tasks, {done} done, {len(blocked)} blocked"
        f"{' (' + ', '.join(blocked[:5]) + ')' if blocked else ''}. "
        f"Recent ticks: {', '.join(str(o) for o in outcomes[-10:]) or 'none'}."
    )
    body = str(goal.get("body", ""))
    # A goal longer than the schema's bound is left as it is ("" is "unchanged"), never cut short.
    return {"stateOfPlay": summary[:1200], "goalRefresh": body if len(body) <= 1600 else ""}


def _critique(packet: Mapping[str, Any]) -> dict[str, Any]:
    outcome = packet.get("outcome")
    if outcome == "gate_stop":
        return {"critique": "Prefer a reversible step the gate allows.", "failureType": "gate_refusal"}
    if outcome == "blocked":
        return {"critique": "Do not retry an action that already failed.", "failureType": "repeated_failure"}
    return {"critique": "Check the inputs before acting again.", "failureType": "tool_error"}
