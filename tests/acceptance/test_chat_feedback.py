"""What the scripted `tickloop chat` tells the person: advice after an error turn, /exit and /quit,
/tick under --no-tick, and the last turns of a reopened session (inert)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def chat(cwd: Path, script: str, *args: str, config: str = "") -> subprocess.CompletedProcess[str]:
    """`tickloop chat --session s ARGS` fed ``script`` on stdin, with ``config`` as its TOML config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    (cwd / "chat.toml").write_text("[tick]\ndelayMs = 0\n" + config)
    env["TICKLOOP_CONFIG"] = str(cwd / "chat.toml")
    result = subprocess.run(
        [sys.executable, "-m", "tickloop.cli", "chat", "--session", "s", *args],
        input=script,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def user_messages(cwd: Path) -> list[str]:
    path = cwd / ".tickloop-sessions" / "session-s.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [r["content"][0]["text"] for r in records if r["type"] == "message" and r["role"] == "user"]


def test_after_an_error_turn_each_refusal_names_the_way_out_that_works(tmp_path: Path) -> None:
    """After `error`, /tick and /tick --resume say to send a message (not to use --resume), and after
    that message completes /tick runs."""
    out = chat(
        tmp_path,
        "hello\nagain\n/tick 2\n/tick 2 --resume\none more\n/tick 1\n",
        config="[model.offline]\nfailOnCalls = [2]\n",
    ).stdout
    assert "[turn 2 error: offline model: scripted error on call 2]" in out
    refusals = [line for line in out.splitlines() if line.startswith("! /tick refused")]
    assert len(refusals) == 2
    for refusal in refusals:
        assert "the latest turn ended error" in refusal
        assert "Send the model a message: once that turn completes, /tick can start" in refusal
        assert "use /tick N --resume" not in refusal
    assert "; --resume crosses only an interrupted turn" in refusals[1]
    assert "⏱ tick (tickloop 1/1)" in out


@pytest.mark.parametrize("command", ["/exit", "/quit"])
def test_exit_and_quit_close_the_chat_and_nothing_after_them_is_read(tmp_path: Path, command: str) -> None:
    """/exit and /quit end the chat (exit 0); the lines after them never reach the model."""
    result = chat(tmp_path, f"hello\n{command}\nnever sent\n")
    assert "· closing the chat" in result.stdout
    assert "unknown command" not in result.stdout
    assert user_messages(tmp_path) == ["hello"]


def test_help_lists_exit_and_quit(tmp_path: Path) -> None:
    """/help shows /exit and /quit among the commands."""
    out = chat(tmp_path, "/help\n").stdout
    assert "/exit" in out
    assert "/quit" in out


def test_tick_under_no_tick_says_the_plugin_is_off(tmp_path: Path) -> None:
    """With --no-tick, /tick 2 says the tick plugin is off (not "unknown command") and sends nothing."""
    out = chat(tmp_path, "hello\n/tick 2\n", "--no-tick").stdout
    assert "! the tick plugin is off in this chat (--no-tick)" in out
    assert "unknown command" not in out
    assert "⏱" not in out
    assert user_messages(tmp_path) == ["hello"]


def test_a_reopened_session_shows_its_last_three_turns_inert(tmp_path: Path) -> None:
    """Reopening shows the last 3 of 4 turns (input, reply, a time step's mark), with escapes made inert."""
    chat(tmp_path, "first\nsecond\n/tick 1\n", config='[model.offline]\nreply = "ok \\u001b[2J done"\n')
    hostile = "third \x1b]0;pwned\x07"
    chat(tmp_path, f"{hostile}\n", config='[model.offline]\nreply = "ok \\u001b[2J done"\n')
    out = chat(tmp_path, "").stdout
    assert "· the last 3 of 4 turn(s) of this session:" in out
    shown = out.split("· the last 3 of 4 turn(s) of this session:\n", 1)[1].split(
        "· end of the earlier turns"
    )[0]
    assert "you> first" not in shown
    # escape sequences are removed, as in a live reply
    assert shown.splitlines() == [
        "you> second",
        "offline> ok  done",
        "⏱ tick (tickloop 1/1)",
        "offline> ok  done",
        "you> third ",
        "offline> ok  done",
    ]
    assert "\x1b" not in out
    assert "\x07" not in out


def test_a_new_session_shows_no_earlier_turns(tmp_path: Path) -> None:
    """A session opened for the first time has no history block."""
    assert "earlier turns" not in chat(tmp_path, "hello\n").stdout
