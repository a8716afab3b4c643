"""`tickloop chat` with tools as a real subprocess: kill -9 during a tool call, recovery, --resume."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tickloop.audit import read_ledger, session_file_name
from tickloop.testing.openai_server import OpenAIServer, Reply

TICKLOOP = [sys.executable, "-m", "tickloop.cli"]
MCP_SERVER = Path(__file__).parents[1] / "integration" / "harness" / "mcp_counter_server.py"


def config(path: Path, base_url: str, work: Path) -> Path:
    env = {"COUNTER_FILE": str(work / "counter"), "PID_FILE": str(work / "mcp.pid"), "SLOW_S": "60"}
    path.write_text(
        "[tick]\ndelayMs = 0\n"
        '[model]\nname = "scripted"\n'
        f'[model.endpoints.scripted]\nbaseUrl = "{base_url}"\nmodel = "tickloop-test"\ntimeoutS = 90\n'
        "[tools.mcp.counter]\n"
        f"command = {json.dumps([sys.executable, str(MCP_SERVER)])}\n"
        f"env = {{ {', '.join(f'{k} = {json.dumps(v)}' for k, v in env.items())} }}\n"
    )
    return path


def environment(cfg: Path) -> dict[str, str]:
    return {**os.environ, "TICKLOOP_CONFIG": str(cfg)}


def start_chat(work: Path, cfg: Path, *, stdout: int) -> subprocess.Popen[str]:
    """`tickloop chat --session k` in ``work``, its stdin open for the test to type into."""
    return subprocess.Popen(
        [*TICKLOOP, "chat", "--session", "k"],
        stdin=subprocess.PIPE,
        stdout=stdout,
        stderr=subprocess.PIPE,
        cwd=work,
        env=environment(cfg),
        text=True,
    )


def session_records(work: Path) -> list[dict[str, Any]]:
    path = work / ".tickloop-sessions" / session_file_name("k")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_for(condition: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def counted(work: Path) -> list[str]:
    path = work / "counter"
    return path.read_text().splitlines() if path.exists() else []


def test_kill_9_during_a_tool_call_then_recovery_and_resume_never_repeat_the_call(tmp_path: Path) -> None:
    """A call cut off by kill -9 is recorded outcome unknown on reopen and never runs again."""
    step = [Reply.tool_calls(("fast-1", "counter__bump", '{"label": "fast"}')), Reply.text("step one done")]
    slow = Reply.tool_calls(("slow-2", "counter__bump", '{"label": "slow"}'))
    with OpenAIServer(default=Reply.text("resumed")) as server:
        server.script(Reply.text("hello there"), *step, slow)
        cfg = config(tmp_path / "config.toml", server.base_url, tmp_path)
        proc = start_chat(tmp_path, cfg, stdout=subprocess.DEVNULL)
        try:
            assert proc.stdin is not None
            proc.stdin.write("hello\n/tick 3\n")
            proc.stdin.flush()
            wait_for(lambda: counted(tmp_path) == ["fast", "slow"])
            mcp_pid = int((tmp_path / "mcp.pid").read_text())
            proc.kill()
            proc.communicate(timeout=10)
            assert proc.returncode == -signal.SIGKILL
        finally:
            with contextlib.suppress(ProcessLookupError, FileNotFoundError, ValueError):
                os.kill(int((tmp_path / "mcp.pid").read_text()), signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(mcp_pid, signal.SIGKILL)
        before = session_records(tmp_path)
        assert before[-1]["type"] == "tool_calls"
        assert before[-1]["calls"][0]["id"] == "slow-2"

        resumed = subprocess.run(
            [*TICKLOOP, "chat", "--session", "k"],
            input="/tick 1 --resume\n",
            cwd=tmp_path,
            env=environment(cfg),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert resumed.returncode == 0, resumed.stderr
        last_body = server.bodies()[-1]

    assert counted(tmp_path) == ["fast", "slow"]  # the side effect ran once: never re-run
    assert "outcome unknown; it is not re-run" in resumed.stdout
    after = session_records(tmp_path)
    (cut,) = [r for r in after if r["type"] == "tool_result" and r["id"] == "slow-2"]
    assert (cut["status"], cut["outcome"]) == ("unknown", "unknown")
    recovered = next(r for r in after if r["type"] == "terminal" and r.get("recovered"))
    assert (recovered["status"], recovered["toolCalls"], recovered["toolErrors"]) == ("interrupted", 1, 1)
    tool_texts = [m["content"] for m in last_body["messages"] if m["role"] == "tool"]
    assert "outcome unknown" in tool_texts[-1]

    ledger = tmp_path / ".tickloop-audit" / session_file_name("k")
    verified = subprocess.run(
        [*TICKLOOP, "audit", "verify", str(ledger)], capture_output=True, text=True, check=False, timeout=120
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    terminals = [r for r in read_ledger(ledger).records() if r["type"] == "tick_terminal"]
    assert (terminals[0]["toolCalls"], terminals[0]["toolErrors"]) == (1, 0)

    shown = subprocess.run(
        [*TICKLOOP, "sessions", "show", "k"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert "⚙ counter__bump" in shown.stdout
    assert "outcome unknown" in shown.stdout
    log = Path(os.environ["XDG_STATE_HOME"], "tickloop", "mcp-logs", "counter.log")
    assert log.is_file()
    assert f"MCP server counter: its stderr is in {log}" in shown.stdout.splitlines()


def test_ctrl_c_during_a_tool_call_interrupts_the_turn_and_stops_the_call(tmp_path: Path) -> None:
    """SIGINT mid-call ends that turn interrupted (outcome unknown) and the chat carries on to exit 0."""
    slow = Reply.tool_calls(("slow-1", "counter__bump", '{"label": "slow"}'))
    with OpenAIServer(default=Reply.text("back")) as server:
        server.script(slow)
        cfg = config(tmp_path / "config.toml", server.base_url, tmp_path)
        proc = start_chat(tmp_path, cfg, stdout=subprocess.PIPE)
        try:
            assert proc.stdin is not None
            proc.stdin.write("go slowly\n")
            proc.stdin.flush()
            wait_for(lambda: counted(tmp_path) == ["slow"])
            mcp_pid = int((tmp_path / "mcp.pid").read_text())
            started = time.monotonic()
            proc.send_signal(signal.SIGINT)
            wait_for(lambda: any(r.get("status") == "interrupted" for r in session_records(tmp_path)), 20)
            interrupted_after = time.monotonic() - started
            out, err = proc.communicate("and now?\n", timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert interrupted_after < 10  # the 60 s tool was cancelled, not waited for
    assert "interrupted" in out
    assert "⚙ counter__bump" in out
    (cut,) = [r for r in session_records(tmp_path) if r["type"] == "tool_result"]
    assert (cut["status"], cut["outcome"]) == ("unknown", "unknown")
    assert counted(tmp_path) == ["slow"]
    wait_for(lambda: not _alive(mcp_pid), 15)  # the server went with the chat


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
