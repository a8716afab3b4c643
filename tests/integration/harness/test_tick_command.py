"""/tick status, /tick policies, /tick stop, and garbage /tick lines: answered, audited, never model input."""

from __future__ import annotations

import hashlib
import re

import pytest

from tickloop.models import OfflineModel

from .conftest import ChatFactory


async def test_status_shows_run_policy_progress_state_and_next_due_time(
    make_chat: ChatFactory,
) -> None:
    """/tick status names the run id, policy with a sha256 prefix, "k of n", the state and the due time."""
    chat = await make_chat(delay_ms=60_000)
    await chat.say("hello")
    chat.agent.submit("/tick 4")
    result = chat.agent.submit("/tick status")
    assert result is not None
    run_id = chat.records()[0]["runId"]
    sha = hashlib.sha256(b"tick").hexdigest()
    assert f"run {run_id}" in result.text
    assert f"policy default sha256:{sha[:12]}" in result.text
    assert "step 0 of 4" in result.text
    assert "state scheduled" in result.text
    assert re.search(r"next step due \d{4}-\d\d-\d\dT[0-9:.]+Z \(in \d+ ms\)", result.text)
    assert len(chat.model.calls) == 1


async def test_policies_lists_id_bytes_and_sha256(make_chat: ChatFactory) -> None:
    """/tick policies shows each compiled policy with its UTF-8 size and full sha256."""
    text = "a time step — continue"
    chat = await make_chat(policies={"dash": text})
    result = chat.agent.submit("/tick policies")
    assert result is not None
    lines = result.text.splitlines()
    assert len(lines) == 2
    assert lines[1].split()[:2] == ["dash", str(len(text.encode()))]
    assert lines[1].endswith("sha256:" + hashlib.sha256(text.encode()).hexdigest())


async def test_stop_without_a_run_is_refused_and_recorded(make_chat: ChatFactory) -> None:
    """/tick stop with nothing to stop says so and leaves a command_rejected record."""
    chat = await make_chat()
    await chat.say("/tick stop")
    assert [(r["type"], r["rule"]) for r in chat.records()] == [("command_rejected", "stop.no_active_run")]


async def test_stop_during_a_step_turn_lets_the_turn_finish_and_disarms(make_chat: ChatFactory) -> None:
    """/tick stop while a time step's turn runs never steers it: the turn completes, no further step comes."""
    chat = await make_chat(model=OfflineModel(reply="a b c d", token_delay=0.02))
    await chat.say("hello")
    chat.agent.submit("/tick 3")
    while len(chat.agent.session.turns) < 2:
        await chat.streaming()
    chat.agent.submit("/tick stop")
    await chat.idle()
    assert chat.agent.session.turns[-1].terminal is not None
    assert chat.agent.session.turns[-1].terminal.status == "completed"
    assert [(r["type"], r.get("rule")) for r in chat.records()][-1] == ("loop_stopped", "stop.user")
    assert sum(r["type"] == "tick_enqueued" for r in chat.records()) == 1
    assert len(chat.model.calls) == 2


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        ("/tick 0", "command.count_out_of_range"),
        ("/tick 257", "command.count_out_of_range"),
        ("/tick 99999999999999999999999", "command.count_out_of_range"),
        ("/tick -3", "command.count_out_of_range"),
        ("/tick 3x", "command.count_not_integer"),
        ("/tick \uff13", "command.count_not_integer"),  # a full-width digit three
        ("/tick ∞", "command.count_not_integer"),
        ("/tick 2 2", "command.extra_argument"),
        ("/tick --policy", "command.missing_value"),
        ("/tick --policy ../etc", "command.invalid_policy_id"),
        ("/tick --resume --resume", "command.duplicate_option"),
        ("/tick --resume=yes", "command.option_takes_no_value"),
        ("/tick --force", "command.unknown_option"),
        ("/tick status now", "command.extra_argument"),
        ("/tick \x00", "command.count_not_integer"),
    ],
)
async def test_garbage_tick_lines_are_refused_with_their_rule_before_any_model_message(
    make_chat: ChatFactory, line: str, rule: str
) -> None:
    """Every malformed /tick is refused naming its rule, recorded, and creates no model-facing message."""
    chat = await make_chat()
    await chat.say("hello")
    result = chat.agent.submit(line)
    await chat.idle()
    assert result is not None
    assert not result.ok
    assert f"[{rule}]" in result.text
    assert [(r["type"], r["rule"]) for r in chat.records()] == [("command_rejected", rule)]
    assert len(chat.model.calls) == 1
