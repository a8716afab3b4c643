"""What the MCP face reads and writes, over the same store calls as the CLI; no MCP SDK here.

``tickloop.mcp.server`` registers each method of :class:`Face` as a resource or a tool. Tests and
other faces can call them directly. Every write checks all its input first and then makes one store
call (a staged intent goes through ``tickloop.operator.staging``, origin ``mcp`` or ``mcp:NAME``
for the agent whose HTTP token is named ``NAME``), so bad input writes nothing. A staged intent
waits for the person whatever its tier, unless ``[mcp] autoAllow`` names its (reversible) type.

Nothing here executes, approves, denies, activates a goal, or reads or changes configuration: the
face's surface is the two tables :data:`RESOURCES` and :data:`TOOLS`, and a test enumerates them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import msgspec

from tickloop.errors import ConfigError, ValidationError
from tickloop.operator import service
from tickloop.operator.domain import IntentStatus, check_text
from tickloop.operator.store.base import Store

#: Limits on what an agent may send, in characters (text) or UTF-8 bytes (payload).
MAX_TITLE = 500
MAX_TYPE = 64
MAX_RECIPIENT = 320
MAX_NOTES = 10_000
MAX_TEXT = 20_000
MAX_QUERY = 500
MAX_PAYLOAD_BYTES = 64 * 1024
MAX_PAYLOAD_DEPTH = 16
MAX_PAYLOAD_NODES = 5_000
MAX_ROWS = 200
MAX_ID = 2**63 - 1
_TYPE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")

#: resource name -> what it shows. Each is served as ``tickloop://NAME`` (JSON) and
#: ``tickloop://NAME.txt`` (a short text rendering).
RESOURCES: dict[str, str] = {
    "goal": "The active goal model (title, body, version), or none.",
    "board": "The board, highest priority first, with its sha256 hash.",
    "plan": "The active goal's plan; the first pending step is the current one.",
    "state-of-play": "The newest nightly state-of-play summary.",
    "progress": "The newest progress rows, one per tick.",
    "intents": "Intents by status, with gate verdict, reasons, taint and linked decisions.",
    "attention": "Today's attention decisions: what was sent or silenced, and the check that decided it.",
    "monitor": "The stall monitor's conditions (stuck, silent, no_goal, board_frozen).",
}

#: tool name -> what it does. Nothing that acts in the world, decides for the person, or configures.
TOOLS: dict[str, str] = {
    "add_task": "Add a task to the board (status todo).",
    "set_task_status": "Block, unblock or finish (done) a board task.",
    "stage_intent": (
        "Stage an action for the operator. The gate stamps it at once; an intent from this face is "
        "judged as untrusted and waits for the person's approval (the person may let reversible "
        "types through with [mcp] autoAllow)."
    ),
    "explain_intent": "Why an intent is where it is: verdict, deciding rule, decisions, ladder position.",
    "search_memory": "Full-text search of the operator's memory notes (every word must match).",
    "add_memory_note": "Keep a memory note (recorded as coming from this face, untrusted).",
    "progress": "The newest progress rows, one per tick.",
    "draft_goal": "Write a new goal model version as a draft. Only the person can activate it.",
}


class McpSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """``[mcp]``: what an agent's staged intent may do without the person."""

    #: reversible action types an MCP intent may be allowed for without the person (default: none)
    auto_allow: list[str] = msgspec.field(default_factory=list)


def mcp_settings() -> McpSettings:
    """``[mcp]`` from the configuration; ``ConfigError`` for an ``autoAllow`` type that is not reversible."""
    from tickloop.config import load_settings, section  # noqa: PLC0415
    from tickloop.operator.domain import Tier  # noqa: PLC0415
    from tickloop.operator.staging import tier_of  # noqa: PLC0415

    found = section(load_settings(), "mcp", McpSettings)
    for kind in found.auto_allow:
        if tier_of(kind) is not Tier.REVERSIBLE:
            raise ConfigError(
                f"invalid configuration in [mcp]: autoAllow names {kind!r}, which is not a reversible "
                "action type (only note, wiki_write, draft_prep, research and the like may skip the person)"
            )
    return found


class View(msgspec.Struct, frozen=True):
    """A resource: JSON-ready data and a short text rendering of it."""

    data: dict[str, Any]
    text: str


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Face:
    """One profile's MCP face over ``store``. ``now`` is the clock; the gate's rules are read from
    the configuration at each staging, as ``tickloop operator intents add`` reads them."""

    def __init__(self, store: Store, profile: str, *, now: Callable[[], datetime] = _utcnow) -> None:
        self.store = store
        self.profile = profile
        self.now = now

    # -- resources ---------------------------------------------------------------------------------

    def goal(self) -> View:
        goal = self.store.active_goal_model(self.profile)
        if goal is None:
            return View({"goal": None}, "no active goal model")
        return View({"goal": service.plain(goal)}, f"goal v{goal.version}: {goal.title}\n{goal.body}".strip())

    def board(self) -> View:
        tasks, digest = self.store.list_tasks(self.profile), self.store.board_hash(self.profile)
        lines = [f"board {digest}"] + [f"#{t.id} [{t.status}] p{t.priority} {t.title}" for t in tasks]
        return View({"hash": digest, "tasks": service.plain(tasks)}, "\n".join(lines))

    def plan(self) -> View:
        goal, steps = service.current_plan(self.store, self.profile)
        current = next((s for s in steps if s.status == "pending"), None)
        head = f"plan of goal v{goal.version}" if goal else "no active goal model: no plan"
        marks = {None if current is None else current.id: ">"}
        lines = [head] + [f"{marks.get(s.id, ' ')} {s.position}. [{s.status}] {s.title}" for s in steps]
        data = {
            "goalVersion": None if goal is None else goal.version,
            "currentStep": service.plain(current),
            "steps": service.plain(steps),
        }
        return View(data, "\n".join(lines))

    def state_of_play(self) -> View:
        found = self.store.latest_state_of_play(self.profile)
        if found is None:
            return View({"stateOfPlay": None}, "no state of play yet")
        return View({"stateOfPlay": service.plain(found)}, found.text)

    def progress_view(self) -> View:
        return self._progress(20)

    def intents(self) -> View:
        found = self.store.list_intents(self.profile, limit=MAX_ROWS)
        by_status: dict[str, list[dict[str, Any]]] = {}
        for intent in found:
            decision = (
                None
                if intent.decision_id is None
                else self.store.get_decision(self.profile, intent.decision_id)
            )
            by_status.setdefault(intent.status.value, []).append(
                {
                    "id": intent.id,
                    "type": intent.action_type,
                    "title": intent.title,
                    "recipient": intent.recipient,
                    "tier": intent.tier.value,
                    "verdict": None if intent.verdict is None else intent.verdict.value,
                    "reasons": list(intent.verdict_reasons),
                    "tainted": intent.origin.tainted,
                    "origin": intent.origin.tick_kind,
                    "decision": service.plain(decision),
                    "createdAt": service.plain(intent.created_at),
                }
            )
        ordered = {s.value: by_status[s.value] for s in IntentStatus if s.value in by_status}
        lines = [f"{status}: {len(rows)}" for status, rows in ordered.items()] or ["no intents"]
        return View({"byStatus": ordered}, "\n".join(lines))

    def attention(self) -> View:
        from tickloop.config import load_settings  # noqa: PLC0415
        from tickloop.operator.notices import (  # noqa: PLC0415
            attention_records,
            attention_settings,
            local_day_start,
        )

        zone = attention_settings(load_settings(), self.store, self.profile).timezone
        since = local_day_start(self.now(), zone)
        records = attention_records(self.store, self.profile, since=since)
        sent = sum(1 for r in records if r.sent)
        text = f"{len(records)} attention decision(s) today, {sent} sent"
        return View({"since": service.plain(since), "decisions": service.plain(records)}, text)

    def monitor(self) -> View:
        conditions = self.store.list_conditions([self.profile])
        active = [c.name for c in conditions if c.active]
        text = "monitor: " + (", ".join(active) + " active" if active else "no condition active")
        return View({"conditions": service.plain(conditions)}, text)

    def read(self, name: str) -> View:
        """The resource ``name`` (a key of :data:`RESOURCES`)."""
        readers: dict[str, Callable[[], View]] = {
            "goal": self.goal,
            "board": self.board,
            "plan": self.plan,
            "state-of-play": self.state_of_play,
            "progress": self.progress_view,
            "intents": self.intents,
            "attention": self.attention,
            "monitor": self.monitor,
        }
        return readers[name]()

    # -- tools -------------------------------------------------------------------------------------

    def add_task(self, title: object, priority: object = 0, notes: object = "") -> dict[str, Any]:
        made = service.add_task(
            self.store,
            self.profile,
            _text("title", title, MAX_TITLE),
            priority=_int("priority", priority, -1_000_000, 1_000_000),
            notes=_text("notes", notes, MAX_NOTES, empty=True),
            now=self.now(),
        )
        return {"task": service.plain(made)}

    def set_task_status(self, task_id: object, action: object) -> dict[str, Any]:
        verb = _text("action", action, 16)
        if verb not in service.TASK_ACTIONS:
            raise ValidationError(f"action: {verb!r} is not one of {sorted(service.TASK_ACTIONS)}")
        made = service.change_task(
            self.store, self.profile, _int("task_id", task_id, 1, MAX_ID), verb, now=self.now()
        )
        return {"task": service.plain(made)}

    def stage_intent(
        self,
        type: object,  # noqa: A002  (the tool's argument name on the wire)
        title: object,
        recipient: object = "",
        payload: object = None,
        *,
        agent: str | None = None,
    ) -> dict[str, Any]:
        """``agent``: the HTTP token's name, recorded in the intent's origin as ``mcp:NAME``."""
        from tickloop.operator import staging  # noqa: PLC0415

        kind = _text("type", type, MAX_TYPE)
        if not _TYPE.fullmatch(kind):
            raise ValidationError(
                f"type: {kind!r} is not an action type (a letter, then letters, digits, _ . -)"
            )
        draft = staging.Draft(
            action_type=kind,
            title=_text("title", title, MAX_TITLE),
            recipient=_text("recipient", recipient, MAX_RECIPIENT, empty=True),
            payload=_payload({} if payload is None else payload),
            origin=staging.mcp_origin(agent),
        )
        allowed = frozenset(mcp_settings().auto_allow)
        made, stamp = service.stage_draft(self.store, self.profile, draft, now=self.now(), auto_allow=allowed)
        return {
            "intent": service.plain(made),
            "verdict": stamp.verdict.value,
            "reasons": list(stamp.reasons),
        }

    def explain_intent(self, intent_id: object) -> dict[str, Any]:
        from tickloop.operator.explain import explain  # noqa: PLC0415

        found = explain(self.store, self.profile, _int("intent_id", intent_id, 1, MAX_ID))
        data: dict[str, Any] = service.plain(found)
        return data

    def search_memory(self, query: object, limit: object = 20) -> dict[str, Any]:
        text = _text("query", query, MAX_QUERY)
        notes = self.store.search_notes(self.profile, text, limit=_int("limit", limit, 1, MAX_ROWS))
        return {"notes": service.plain(notes)}

    def add_memory_note(self, text: object) -> dict[str, Any]:
        made = self.store.add_note(
            self.profile, _text("text", text, MAX_TEXT), now=self.now(), source="mcp", tainted=True
        )
        return {"note": service.plain(made)}

    def progress(self, limit: object = 20) -> dict[str, Any]:
        rows = self.store.recent_progress(self.profile, limit=_int("limit", limit, 1, MAX_ROWS))
        return {"rows": service.plain(rows)}  # the tool sends no text rendering: none is built

    def draft_goal(self, title: object, body: object = "") -> dict[str, Any]:
        made = service.set_goal(
            self.store,
            self.profile,
            title=_text("title", title, MAX_TITLE),
            body=_text("body", body, MAX_TEXT, empty=True),
            now=self.now(),
            activate=False,
        )
        return {"goal": service.plain(made)}

    def _progress(self, limit: int) -> View:
        rows = self.store.recent_progress(self.profile, limit=limit)
        data = {"rows": service.plain(rows)}
        lines = [f"{r['ended_at']} {r['tick_kind']} {r['outcome']}" for r in data["rows"]] or ["no ticks yet"]
        return View(data, "\n".join(lines))


# -- input checks: every one names the argument and says what was wrong ---------------------------------


def _text(name: str, value: object, limit: int, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{name}: expected text, got {_kind(value)}")
    if len(value) > limit:
        raise ValidationError(f"{name}: {len(value)} characters is over the limit of {limit}")
    check_text(name, value)
    if not empty and not value.strip():
        raise ValidationError(f"{name}: must not be empty")
    return value


def _int(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{name}: expected an integer, got {_kind(value)}")
    if not low <= value <= high:
        raise ValidationError(f"{name}: {value} is outside {low}..{high}")
    return value


def _payload(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValidationError(f"payload: expected a JSON object, got {_kind(value)}")
    nodes = _walk(value, "payload", 0, 0)
    if nodes > MAX_PAYLOAD_NODES:
        raise ValidationError(f"payload: {nodes} values is over the limit of {MAX_PAYLOAD_NODES}")
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > MAX_PAYLOAD_BYTES:
        raise ValidationError(f"payload: {size} bytes is over the limit of {MAX_PAYLOAD_BYTES}")
    return value


def _walk(value: object, where: str, depth: int, count: int) -> int:
    """Check every string (valid UTF-8, no NUL) and number; return the running count of values."""
    if depth > MAX_PAYLOAD_DEPTH:
        raise ValidationError(f"{where}: nested deeper than {MAX_PAYLOAD_DEPTH} levels")
    count += 1
    if count > MAX_PAYLOAD_NODES:
        return count
    if isinstance(value, str):
        check_text(where, value, limit=MAX_PAYLOAD_BYTES)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValidationError(f"{where}: {value} is not a JSON number")
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError(f"{where}: keys must be text")
            check_text(f"{where} key", key, limit=1024)
            count = _walk(item, f"{where}.{key[:40]}", depth + 1, count)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            count = _walk(item, f"{where}[{index}]", depth + 1, count)
    elif value is not None and not isinstance(value, bool | int | float):
        raise ValidationError(f"{where}: {_kind(value)} is not a JSON value")
    return count


def _kind(value: object) -> str:
    names = {str: "text", bool: "a boolean", int: "an integer", float: "a number", list: "a list"}
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    return names.get(type(value), type(value).__name__)
