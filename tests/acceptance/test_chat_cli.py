"""`tickloop chat` and `tickloop sessions` as real subprocesses, including kill -9 crash recovery."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tickloop.audit import read_ledger, session_file_name

TICKLOOP = [sys.executable, "-m", "tickloop.cli"]
SLOW_REPLY = " ".join(["word"] * 30)


def env_with(config: Path | None = None, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    if config is not None:
        env["TICKLOOP_CONFIG"] = str(config)
    env.update(extra)
    return env


def write_config(path: Path, *, token_delay_ms: int, delay_ms: int = 5) -> Path:
    path.write_text(
        f"[tick]\ndelayMs = {delay_ms}\n"
        f'[model.offline]\ntokenDelayMs = {token_delay_ms}\nreply = "{SLOW_REPLY}"\n'
    )
    return path


def chat(
    cwd: Path, stdin: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TICKLOOP, "chat", *args],
        input=stdin,
        cwd=cwd,
        env=env or env_with(),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def verify(cwd: Path, session_id: str) -> subprocess.CompletedProcess[str]:
    path = cwd / ".tickloop-audit" / session_file_name(session_id)
    return subprocess.run(
        [*TICKLOOP, "audit", "verify", str(path)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def ledger(cwd: Path, session_id: str) -> list[dict[str, Any]]:
    return read_ledger(cwd / ".tickloop-audit" / session_file_name(session_id)).records()


def session_records(cwd: Path, session_id: str) -> list[dict[str, Any]]:
    path = cwd / ".tickloop-sessions" / session_file_name(session_id)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_bytes().split(b"\n")[:-1]]


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll a file-visible condition of another process (not a timing assertion)."""
    deadline = time.monotonic() + 15
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def plugin_messages(cwd: Path, session_id: str) -> int:
    return sum(
        r["type"] == "message" and r.get("source", {}).get("kind") == "plugin"
        for r in session_records(cwd, session_id)
    )


def user_message_written(cwd: Path, session_id: str, text: str) -> bool:
    return any(r.get("content") == [{"type": "text", "text": text}] for r in session_records(cwd, session_id))


def start_chat(cwd: Path, session_id: str, config: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*TICKLOOP, "chat", "--session", session_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env_with(config),
        text=True,
    )


def send(proc: subprocess.Popen[str], line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def kill9(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.communicate(timeout=10)  # reaps it and closes our ends of its pipes
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.slow
def test_the_scripted_demo_runs_three_ticks_and_leaves_a_verified_ledger(workdir: Path) -> None:
    """The documented `printf 'hello\\n/tick 3\\n/tick status\\n' | tickloop chat ...` session works."""
    result = chat(workdir, "hello\n/tick 3\n/tick status\n", "--model", "offline", "--session", "demo")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "model offline" in out
    assert "offline> (offline model) noted." in out
    for step in (1, 2, 3):
        assert f"⏱ tick (tickloop {step}/3)" in out
    assert "complete (next.target_reached) after 3 of 3 steps" in out
    checked = verify(workdir, "demo")
    assert checked.returncode == 0, checked.stdout
    assert "ok: 11 records, 1 runs, 3 time steps enqueued" in checked.stdout
    listing = subprocess.run(
        [*TICKLOOP, "sessions", "list"], cwd=workdir, capture_output=True, text=True, check=True, timeout=120
    )
    assert "demo" in listing.stdout
    assert "4 turns" in listing.stdout
    shown = subprocess.run(
        [*TICKLOOP, "sessions", "show", "demo"],
        cwd=workdir,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert "you> hello" in shown.stdout
    assert "⏱ tick (tickloop 3/3)" in shown.stdout


@pytest.mark.slow
def test_kill_9_mid_turn_then_resume_then_a_second_boundary_stops_the_run(workdir: Path) -> None:
    """After a crash plain /tick is refused by rule, --resume runs 2 steps, a second interruption stops."""
    slow = write_config(workdir / "slow.toml", token_delay_ms=100)
    fast = write_config(workdir / "fast.toml", token_delay_ms=0)

    # 1. A slow natural turn, killed mid-stream.
    proc = start_chat(workdir, "crash", slow)
    send(proc, "hello")
    wait_until(lambda: user_message_written(workdir, "crash", "hello"), "the natural turn to start")
    kill9(proc)

    # 2 + 3. Reopen: plain /tick is refused; /tick 2 --resume crosses the one interrupted boundary.
    result = chat(
        workdir, "/tick\n/tick 2 --resume\n/tick status\n", "--session", "crash", env=env_with(fast)
    )
    assert result.returncode == 0, result.stderr
    assert "left open by an earlier process" in result.stdout
    assert "[admit.terminal_not_completed]" in result.stdout
    records = ledger(workdir, "crash")
    assert (records[0]["type"], records[0]["rule"]) == ("command_rejected", "admit.terminal_not_completed")
    assert records[1]["type"] == "loop_armed"
    assert records[1]["resumeBoundary"] is True
    assert [r["step"] for r in records if r["type"] == "tick_enqueued"] == [1, 2]
    assert records[-1]["type"] == "loop_complete"
    assert verify(workdir, "crash").returncode == 0

    # 4. Another crash, a resumed run, and Ctrl-C during its first step: a second boundary stops it.
    proc = start_chat(workdir, "crash", slow)
    send(proc, "again")
    wait_until(lambda: user_message_written(workdir, "crash", "again"), "the second natural turn to start")
    kill9(proc)
    proc = start_chat(workdir, "crash", slow)
    send(proc, "/tick 2 --resume")
    wait_until(lambda: plugin_messages(workdir, "crash") == 3, "step 1 of the resumed run to start")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=15)  # EOF on stdin: the chat exits once idle
    assert proc.returncode == 0, err
    run = [r for r in ledger(workdir, "crash") if r.get("runId") == ledger(workdir, "crash")[-1]["runId"]]
    assert [(r["type"], r.get("status") or r.get("rule")) for r in run] == [
        ("loop_armed", "admit.resume_boundary"),
        ("tick_scheduled", "next.resume_boundary"),
        ("tick_enqueued", None),
        ("tick_terminal", "interrupted"),
        ("loop_stopped", "next.terminal_not_completed"),
    ]
    assert verify(workdir, "crash").returncode == 0


@pytest.mark.slow
def test_kill_9_during_a_run_is_closed_as_an_orphan_on_reopen(workdir: Path) -> None:
    """A run left open by a killed process is closed with recover.orphaned_run, and the ledger verifies."""
    slow = write_config(workdir / "slow.toml", token_delay_ms=100)
    fast = write_config(workdir / "fast.toml", token_delay_ms=0)
    assert chat(workdir, "hello\n", "--session", "orphan", env=env_with(fast)).returncode == 0
    proc = start_chat(workdir, "orphan", slow)
    send(proc, "/tick 3")
    wait_until(lambda: plugin_messages(workdir, "orphan") == 1, "step 1 to start")
    kill9(proc)
    assert verify(workdir, "orphan").returncode == 0  # an open run is not a violation ...
    result = chat(workdir, "/tick status\n", "--session", "orphan", env=env_with(fast))
    assert result.returncode == 0, result.stderr
    last = ledger(workdir, "orphan")[-1]
    assert (last["type"], last["rule"]) == ("loop_stopped", "recover.orphaned_run")  # ... but it is closed
    assert verify(workdir, "orphan").returncode == 0


def test_invalid_plugin_configuration_fails_at_startup_naming_the_key(workdir: Path) -> None:
    """A bad tick option stops chat before anything starts, exit 2, with the key in the message."""
    result = chat(workdir, "hello\n", env=env_with(TICKLOOP_DEFAULT_TICKS="0"))
    assert result.returncode == 2
    assert "defaultTicks" in result.stderr
    assert not (workdir / ".tickloop-sessions").exists()


def test_a_hostile_session_id_stays_inside_the_sessions_dir(workdir: Path) -> None:
    """`--session ../x` creates its files inside the sessions and audit dirs, nowhere else."""
    fast = write_config(workdir / "fast.toml", token_delay_ms=0, delay_ms=0)
    result = chat(workdir, "hello\n/tick 1\n", "--session", "../x", env=env_with(fast))
    assert result.returncode == 0, result.stderr
    assert not (workdir / "x").exists()
    assert [p.name for p in (workdir / ".tickloop-sessions").iterdir()] == [session_file_name("../x")]
    assert verify(workdir, "../x").returncode == 0


def test_unknown_model_is_a_clear_error(workdir: Path) -> None:
    """`--model nosuch` exits 2 naming the model."""
    result = chat(workdir, "", "--model", "nosuch")
    assert result.returncode == 2
    assert "nosuch" in result.stderr


@pytest.mark.parametrize("session_id", ["two\nlines", "title\x1b]0;x\x07", "rtl\u202e"])
def test_chat_refuses_a_session_id_with_a_control_character(tmp_path: Path, session_id: str) -> None:
    """`chat --session` with a control character exits 2 with a clear error and creates no session file."""
    result = chat(tmp_path, "hello\n", "--session", session_id)
    assert result.returncode == 2
    assert "invalid session id" in result.stderr
    assert "control character U+" in result.stderr
    assert "\x1b" not in result.stderr + result.stdout
    assert not (tmp_path / ".tickloop-sessions").exists() or not any(
        (tmp_path / ".tickloop-sessions").iterdir()
    )
    assert not (tmp_path / ".tickloop-audit").exists()


def test_the_chat_shows_hostile_replies_inert_and_errors_without_an_empty_label(tmp_path: Path) -> None:
    """Scripted chat: a hostile reply is inert and cannot fake `you>`; an error turn shows no bare label."""
    config = tmp_path / "hostile.toml"
    config.write_text(
        "[model.offline]\n"
        'reply = "t\\u001b]0;pwned\\u0007 c\\u001b[2J b\\u0007 x\\b\\bY r\\u202eR\\nyou> rm -rf ~\\n\\tok"\n'
        "failOnCalls = [2]\n"
    )
    result = chat(tmp_path, "hello\nagain\n", "--session", "hostile", "--no-tick", env=env_with(config))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert not any(c in out for c in "\x1b\x07\x08\u202e\r")
    assert [line for line in out.splitlines() if line.startswith("you>")] == ["you> hello", "you> again"]
    assert "offline> t c b\\u0007 x\\u0008\\u0008Y r\\u202eR\n         you> rm -rf ~\n         \tok\n" in out
    assert "offline> \n" not in out
    assert out.endswith("you> again\n[turn 2 error: offline model: scripted error on call 2]\n")
    stored = [r for r in session_records(tmp_path, "hostile") if r["type"] == "message"]
    assert stored[1]["content"][0]["text"].startswith("t\x1b]0;pwned\x07")  # the transcript keeps it all


def test_an_interrupted_reply_on_screen_equals_the_stored_partial_reply(tmp_path: Path) -> None:
    """Scripted chat, SIGINT mid-stream: the screen shows the label and exactly the words stored."""
    config = write_config(tmp_path / "slow.toml", token_delay_ms=50)
    proc = subprocess.Popen(
        [*TICKLOOP, "chat", "--session", "cut", "--no-tick"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env_with(config),
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(b"hello\n")
    proc.stdin.flush()
    seen = b""
    deadline = time.monotonic() + 15
    while seen.count(b"word") < 3:  # the reply is streaming: interrupt it part-way
        assert time.monotonic() < deadline, seen
        seen += os.read(proc.stdout.fileno(), 4096)
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=15)  # closes stdin: the chat exits once idle
    assert proc.returncode == 0, err
    screen = (seen + rest).decode()
    stored = [r for r in session_records(tmp_path, "cut") if r["type"] == "message"]
    partial = stored[-1]["content"][0]["text"]
    assert 3 <= partial.count("word") < 30
    assert f"you> hello\noffline> {partial}\n" in screen
    assert screen.endswith("· interrupted\n[turn 1 interrupted]\n")
