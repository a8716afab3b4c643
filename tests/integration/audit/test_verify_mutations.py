"""verify against real `tickloop chat` ledgers: every listed mutation, and many generated ones, are caught."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.chat_process import run_chat

from tickloop.audit import session_file_name
from tickloop.harness import Agent, TickOptions, open_chat_agent, tick_ledger, tick_plugin
from tickloop.models import OfflineModel
from tickloop.protocol.ledger import RULES, RecordType, canonical
from tickloop.protocol.verify import verify
from tickloop.testing.harness import ManualTimers

Record = dict[str, Any]


def chat_ledger(cwd: Path, session: str, script: str, config: str) -> list[Record]:
    """Run a scripted `tickloop chat` and return its ledger's records."""
    (cwd / "c.toml").write_text(config)
    env = {**os.environ, "TICKLOOP_CONFIG": str(cwd / "c.toml")}
    run_chat(cwd, session, script, env)
    path = cwd / ".tickloop-audit" / session_file_name(session)
    return [json.loads(line) for line in path.read_bytes().splitlines()]


@pytest.fixture(scope="module")
def real_ledger(tmp_path_factory: pytest.TempPathFactory) -> list[Record]:
    """A chat with a completed run, a refused /tick, an error-stopped run and a /tick stop."""
    cwd = tmp_path_factory.mktemp("chat")
    script = "hello\n/tick 3\n/tick 0\n/tick 2\nagain\n/tick 2\n/tick stop\n"
    return chat_ledger(cwd, "mut", script, "[tick]\ndelayMs = 0\n[model.offline]\nfailOnCalls = [6]\n")


async def _rich_session(tmp: Path) -> Path:
    """In process, with timers fired by hand: a completed run, a person's message during the delay
    (cancel.person_message, written when the message is submitted), /tick stop during the delay,
    refusals, a provider error on step 2, and a close during the delay (stop.disposed)."""
    timers = ManualTimers()
    options = TickOptions.from_mapping({"delayMs": 0, "auditDir": str(tmp / "audit")})
    model = OfflineModel(fail_on_call=frozenset({6}))
    agent = open_chat_agent(
        model, sessions_dir=tmp / "sessions", session_id="rich", tick=options, timers=timers
    )
    await agent.start()

    async def settle() -> None:
        async with asyncio.timeout(10):
            await agent.wait_for(lambda: not agent.turn_active and not agent.queued)

    async def steps(n: int) -> None:
        for _ in range(n):
            timers.fire_next()
            await settle()

    agent.submit("hello")
    await settle()
    agent.submit("/tick 2")
    await steps(2)
    agent.submit("/tick 3")
    agent.submit("something else first")  # cancels the pending step at once; its timer is disposed
    await settle()
    assert timers.pending == []
    agent.submit("/tick 2")
    agent.submit("/tick stop")
    agent.submit("/tick 0")
    agent.submit("/tick stop")
    agent.submit("/tick 3")
    await steps(2)
    agent.submit("/tick 2")  # refused: the latest turn ended in an error
    agent.submit("a natural turn again")
    await settle()
    agent.submit("/tick 2")
    await _close(agent)
    return tmp / "audit" / session_file_name("rich")


async def _close(agent: Agent) -> None:
    await agent.close()


@pytest.fixture(scope="module")
def rich_ledger(tmp_path_factory: pytest.TempPathFactory) -> list[Record]:
    path = asyncio.run(_rich_session(tmp_path_factory.mktemp("rich")))
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def lines(records: list[Record]) -> list[tuple[int, bytes]]:
    """Renumber seq and strip any chain, as the held-out check does."""
    out = []
    for i, rec in enumerate(records, start=1):
        clean = {k: v for k, v in rec.items() if k not in ("prev", "mac")}
        out.append((i, canonical({**clean, "seq": i})))
    return out


def check(records: list[Record]) -> list[str]:
    return [v.rule for v in verify(lines(records), strict=True).violations]


def test_the_real_ledger_is_clean_and_covers_the_record_types(real_ledger: list[Record]) -> None:
    """The chat's own ledger verifies under --strict and holds every record type the mutations touch."""
    assert check(real_ledger) == []
    kinds = {rec["type"] for rec in real_ledger}
    assert kinds >= {"loop_armed", "tick_scheduled", "tick_enqueued", "tick_terminal", "loop_complete"}
    assert kinds >= {"loop_stopped", "command_rejected"}


def _first(records: list[Record], kind: str, **match: Any) -> int:
    return next(
        i for i, r in enumerate(records) if r["type"] == kind and all(r.get(k) == v for k, v in match.items())
    )


def _drop_all(records: list[Record], kind: str) -> list[Record]:
    return [r for r in records if r["type"] != kind]


def _move_enqueue_before_schedule(records: list[Record]) -> list[Record]:
    out = list(records)
    i = _first(out, "tick_enqueued", step=2)
    out[i - 1], out[i] = out[i], out[i - 1]
    return out


def _enqueue_after_cancel(records: list[Record]) -> list[Record]:
    """Step 2 of the first run is cancelled, and then enqueued all the same."""
    out = list(records)
    i = _first(out, "tick_enqueued", step=2)
    cancel = {**out[i], "type": "tick_cancelled_before_enqueue", "rule": "cancel.state_changed"}
    out.insert(i, cancel)
    return out


def _drop_terminal_of_step_2(records: list[Record]) -> list[Record]:
    out = list(records)
    del out[_first(out, "tick_terminal", step=2)]
    return out


def _typo_rule(records: list[Record]) -> list[Record]:
    out = list(records)
    i = _first(out, "loop_complete")
    out[i] = {**out[i], "rule": "next.target_reachee"}
    return out


LISTED: dict[str, Callable[[list[Record]], list[Record]]] = {
    "every tick_scheduled removed, seq renumbered": lambda r: _drop_all(r, "tick_scheduled"),
    "a tick_enqueued moved before its own tick_scheduled": _move_enqueue_before_schedule,
    "a step enqueued after its cancellation": _enqueue_after_cancel,
    "the step 2 terminal removed": _drop_terminal_of_step_2,
    "a typo in a rule id": _typo_rule,
}


@pytest.mark.parametrize("name", sorted(LISTED))
def test_each_listed_mutation_is_caught(real_ledger: list[Record], name: str) -> None:
    """Each mutation the issue lists, applied to a real chat ledger, is a violation."""
    assert check(LISTED[name](real_ledger)) != []


def test_the_plugin_rule_ids_are_all_in_the_verifier_vocabulary() -> None:
    """Every stop/cancel/recovery rule the harness can write is one verify accepts (no merge can drift)."""
    known = set().union(*RULES.values())
    for module in (tick_plugin, tick_ledger):
        for name, value in vars(module).items():
            if name.startswith(("STOP_", "CANCEL_", "RECOVER_")) and isinstance(value, str):
                assert value in known, f"{module.__name__}.{name} = {value!r}"


def _alterations(rec: Record) -> Iterator[tuple[str, Record]]:
    """Semantic edits of one record: each changes what the ledger claims happened."""
    if isinstance(rec.get("step"), int):
        yield "step+1", {**rec, "step": rec["step"] + 1}
        yield "step-1", {**rec, "step": rec["step"] - 1}
    if "status" in rec:
        for status in ("completed", "error", "interrupted", "unknown"):
            if status != rec["status"]:
                changed = {**rec, "status": status}
                if status != "completed":
                    changed.pop("usageReported", None)
                yield f"status={status}", changed
    if "runId" in rec:
        yield "runId", {**rec, "runId": "f" * 32}
        yield "policy", {**rec, "timeStepBytes": rec["timeStepBytes"] + 1}
    if rec["type"] == "loop_armed":
        yield "requested+1", {**rec, "requested": rec["requested"] + 1}
        yield (
            "resumeBoundary",
            {**rec, "resume": True, "resumeBoundary": True, "rule": "admit.resume_boundary"},
        )
    if "steps" in rec:
        yield "steps+1", {**rec, "steps": rec["steps"] + 1}
    kind = RecordType(rec["type"])
    if kind is not RecordType.COMMAND_REJECTED and kind in RULES and "rule" in rec:
        for rule in sorted(RULES[kind] - {rec["rule"]}):
            yield f"rule={rule}", {**rec, "rule": rule}
    yield "type", {**rec, "type": "loop_stopped" if rec["type"] != "loop_stopped" else "loop_complete"}


def _mutations(records: list[Record]) -> Iterator[tuple[str, list[Record]]]:
    for i, rec in enumerate(records):
        if rec["type"] != "command_rejected":  # a refusal changes no run: dropping one is not wrong
            yield f"drop {i}", records[:i] + records[i + 1 :]
            yield f"duplicate {i}", [*records[: i + 1], rec, *records[i + 1 :]]
        if i + 1 < len(records) and "command_rejected" not in (rec["type"], records[i + 1]["type"]):
            yield f"swap {i}", [*records[:i], records[i + 1], rec, *records[i + 2 :]]
        for what, changed in _alterations(rec):
            yield f"{what} at {i}", [*records[:i], changed, *records[i + 1 :]]


def _only_unobservable(name: str, records: list[Record], mutated: list[Record]) -> bool:
    """Edits whose result is itself a ledger the protocol could have written, so not wrong by the ledger
    alone (`audit replay` catches the first two against the transcript):

    - one non-completed status for another, on a terminal that stopped its run;
    - the requested count of a run that stopped before reaching it;
    - one stop rule for another that can equally end a run after a failed terminal (a crash found on
      reopen, a token budget, a window check that comes first);
    - any close turned into ``recover.orphaned_run``: a crash can fall between any two records.
    """
    if [canonical(r) for r in records] == [canonical(r) for r in mutated]:
        return True
    what, _, where = name.partition(" at ")
    if not where:
        return False
    rec = records[int(where)]
    if what in ("status=interrupted", "status=unknown", "status=error") and rec.get("status") != "completed":
        return True
    if what == "requested+1" and _closed_by(records, rec["runId"]) == "loop_stopped":
        return True
    if what == "rule=recover.orphaned_run" and rec["type"] == "loop_stopped":
        return True
    failed_stop = {"rule=next.count_out_of_window", "rule=stop.token_budget"}
    return (
        what in failed_stop and rec["type"] == "loop_stopped" and rec["rule"] == "next.terminal_not_completed"
    )


def _closed_by(records: list[Record], run_id: str) -> str | None:
    return next(
        (
            r["type"]
            for r in records
            if r.get("runId") == run_id and r["type"].startswith("loop_") and r["type"] != "loop_armed"
        ),
        None,
    )


def test_the_rich_ledger_is_clean_and_holds_cancels_and_stops(rich_ledger: list[Record]) -> None:
    """The in-process session's ledger verifies under --strict and has every cancel and stop it set out to."""
    assert check(rich_ledger) == []
    rules = {(r["type"], r.get("rule")) for r in rich_ledger}
    assert ("tick_cancelled_before_enqueue", "cancel.person_message") in rules
    assert ("tick_cancelled_before_enqueue", "stop.user") in rules
    assert ("tick_cancelled_before_enqueue", "stop.disposed") in rules
    assert ("command_rejected", "stop.no_active_run") in rules
    assert ("loop_stopped", "next.terminal_not_completed") in rules


@pytest.mark.parametrize("which", ["real", "rich"])
def test_generated_mutations_of_a_real_ledger_are_all_caught(
    real_ledger: list[Record], rich_ledger: list[Record], which: str
) -> None:
    """Drops, duplicates, swaps and field edits of a real chat ledger (seq renumbered, no chain) all fail."""
    ledger = real_ledger if which == "real" else rich_ledger
    missed, total = [], 0
    for name, mutated in _mutations(ledger):
        if _only_unobservable(name, ledger, mutated):
            continue
        total += 1
        if not check(mutated):
            missed.append(name)
    assert total > 150
    assert missed == [], f"{len(missed)} of {total} mutations verified clean: {missed}"
