"""What agents ask for beyond the eight resources and tools: resource templates, prompts filled from
the store, and completions for ids. Over the store, no MCP SDK (``tickloop.mcp.server`` registers them).

Templates take their parameters as the text of a URI, so each is checked here and refused by name
(``intents/{id}``: an id from 1; ``progress/{since}``: an ISO 8601 time with its offset). Prompts
only read: they put the operator's state in front of the agent's model, and the agent still acts
through the tools, which the gate and the person stand behind.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from tickloop.errors import ValidationError
from tickloop.inert import inert
from tickloop.mcp.face import MAX_ID, MAX_ROWS, RESOURCES, Face, View
from tickloop.operator import service
from tickloop.operator.domain import IntentStatus

#: URI template -> what it shows. Served as JSON.
TEMPLATES: dict[str, str] = {
    "tickloop://intents/{id}": "One intent: status, verdict, reasons, origin, taint and its decision.",
    "tickloop://tasks/{id}": "One board task.",
    "tickloop://progress/{since}": "Progress rows that ended at or after SINCE (ISO 8601 with offset).",
}

#: prompt name -> what it asks the agent's model to do.
PROMPTS: dict[str, str] = {
    "plan-next-step": "The goal, its plan and the board, and a request to propose the next step.",
    "review-board": "The board with priorities and statuses, and a request to review it.",
}
_DIGITS = re.compile(r"[0-9]{1,19}")
MAX_COMPLETIONS = 100


def _id(name: str, text: str) -> int:
    if not _DIGITS.fullmatch(text) or not 1 <= int(text) <= MAX_ID:
        raise ValidationError(f"{name}: {text[:40]!r} is not an id (a whole number from 1)")
    return int(text)


def intent(face: Face, text: str) -> View:
    """``tickloop://intents/{id}``."""
    found = face.store.get_intent(face.profile, _id("id", text))
    decision = None if found.decision_id is None else face.store.get_decision(face.profile, found.decision_id)
    data = {"intent": service.plain(found), "decision": service.plain(decision)}
    return View(data, f"#{found.id} [{found.status.value}] {found.action_type}: {found.title}")


def task(face: Face, text: str) -> View:
    """``tickloop://tasks/{id}``."""
    found = face.store.get_task(face.profile, _id("id", text))
    return View({"task": service.plain(found)}, f"#{found.id} [{found.status}] {found.title}")


def progress_since(face: Face, text: str) -> View:
    """``tickloop://progress/{since}``: at most the newest ``MAX_ROWS`` rows, newest first."""
    try:
        since = datetime.fromisoformat(text)
    except ValueError:
        since = None
    if since is None or since.tzinfo is None:
        raise ValidationError(
            f"since: {text[:40]!r} is not an ISO 8601 time with an offset (e.g. 2026-07-07T09:00:00Z)"
        )
    rows = [r for r in face.store.recent_progress(face.profile, limit=MAX_ROWS) if r.ended_at >= since]
    return View({"since": service.plain(since), "rows": service.plain(rows)}, f"{len(rows)} row(s)")


def read_template(face: Face, template: str, value: str) -> View:
    """The template resource ``template`` (a key of :data:`TEMPLATES`) for the parameter ``value``."""
    readers = {
        "tickloop://intents/{id}": intent,
        "tickloop://tasks/{id}": task,
        "tickloop://progress/{since}": progress_since,
    }
    return readers[template](face, value)


def waiting(face: Face) -> list[tuple[str, str]]:
    """``(uri, title)`` of each intent waiting for the person, newest first (at most ``MAX_ROWS``):
    the resources that come and go, so an agent's client learns of a decision by ``listChanged``.
    The title is the agent's text, made inert and cut to one short line."""
    found = face.store.list_intents(face.profile, status=IntentStatus.REQUIRES_APPROVAL, limit=MAX_ROWS)
    return [
        (f"{SCHEME}intents/{i.id}", inert(f"#{i.id} {i.action_type}: {i.title}", keep_newlines=False)[:200])
        for i in found
    ]


def listing(face: Face) -> str:
    """What :func:`waiting` lists, as the text the watcher compares."""
    return "\n".join(uri for uri, _ in waiting(face))


def plan_next_step(face: Face) -> str:
    """The prompt ``plan-next-step``: what the operator is working towards and where it stands."""
    goal, steps = service.current_plan(face.store, face.profile)
    if goal is None:
        return "The operator has no active goal model. Ask the person what to work towards; do not guess."
    plan = "\n".join(f"{s.position}. [{s.status}] {s.title}" for s in steps) or "(no plan yet)"
    return (
        f"The operator's goal (v{goal.version}): {goal.title}\n{goal.body}\n\n"
        f"Its plan:\n{plan}\n\nThe board:\n{_board(face)}\n\n"
        "Propose the single next step that moves the goal forward. To act, use the tools: add_task, "
        "or stage_intent for an action (it waits for the person's approval). Say why in one sentence."
    )


def review_board(face: Face) -> str:
    """The prompt ``review-board``: the board, and a request to review it."""
    return (
        f"The operator's board (highest priority first):\n{_board(face)}\n\n"
        "Review it: what is stale, mis-prioritised, blocked for too long or missing? Suggest changes; "
        "use set_task_status or add_task only for the ones you are sure of."
    )


def _board(face: Face) -> str:
    tasks = face.store.list_tasks(face.profile)
    return "\n".join(f"#{t.id} [{t.status}] p{t.priority} {t.title}" for t in tasks) or "(empty)"


def get_prompt(face: Face, name: str) -> str:
    """The text of the prompt ``name`` (a key of :data:`PROMPTS`)."""
    return {"plan-next-step": plan_next_step, "review-board": review_board}[name](face)


def complete(face: Face, template: str, argument: str, partial: str) -> list[str]:
    """Ids for ``template``'s ``argument`` that start with ``partial``, newest first."""
    ids: list[Any]
    if (template, argument) == ("tickloop://intents/{id}", "id"):
        ids = [i.id for i in face.store.list_intents(face.profile, limit=MAX_ROWS)]
    elif (template, argument) == ("tickloop://tasks/{id}", "id"):
        ids = sorted((t.id for t in face.store.list_tasks(face.profile)), reverse=True)
    else:
        return []
    return [str(i) for i in ids if str(i).startswith(partial)][:MAX_COMPLETIONS]


def as_json(view: View) -> str:
    """A resource's JSON text, as every resource of the face is served."""
    return json.dumps(view.data, ensure_ascii=False, sort_keys=True, indent=1)


def read_uri(face: Face, uri: str) -> str:
    """The text served for ``uri``: a resource, its ``.txt`` form, or a template's; else refused."""
    rest = uri.removeprefix(SCHEME)
    name, _, value = rest.partition("/")
    if uri.startswith(SCHEME) and value and f"{SCHEME}{name}/{{" in _TEMPLATE_PREFIXES:
        return as_json(read_template(face, _TEMPLATE_PREFIXES[f"{SCHEME}{name}/{{"], value))
    if uri.startswith(SCHEME) and rest.removesuffix(".txt") in RESOURCES:
        view = face.read(rest.removesuffix(".txt"))
        return view.text if rest.endswith(".txt") else as_json(view)
    raise ValidationError(f"{uri[:200]!r} is not a resource of this face; resources/list shows them")


SCHEME = "tickloop://"
_TEMPLATE_PREFIXES = {t.split("{", 1)[0] + "{": t for t in TEMPLATES}
