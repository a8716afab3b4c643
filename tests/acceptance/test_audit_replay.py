"""`tickloop audit replay` on real chat sessions (crashes and --resume included), and the edits it catches."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tests.chat_process import run_chat

from tickloop.audit import session_file_name

TICKLOOP = [sys.executable, "-m", "tickloop.cli"]
SLOW_REPLY = " ".join(["word"] * 30)


def config(path: Path, *, token_delay_ms: int, delay_ms: int = 50) -> dict[str, str]:
    path.write_text(
        f"[tick]\ndelayMs = {delay_ms}\nchain = true\n"
        f'[model.offline]\ntokenDelayMs = {token_delay_ms}\nreply = "{SLOW_REPLY}"\n'
    )
    return {**os.environ, "TICKLOOP_CONFIG": str(path)}


def chat(cwd: Path, session: str, script: str, env: dict[str, str]) -> None:
    run_chat(cwd, session, script, env)


def transcript(cwd: Path, session: str) -> Path:
    return cwd / ".tickloop-sessions" / session_file_name(session)


def ledger(cwd: Path, session: str) -> Path:
    return cwd / ".tickloop-audit" / session_file_name(session)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll a file-visible condition of another process (not a timing assertion)."""
    deadline = time.monotonic() + 20
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def replay(cwd: Path, session: str, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *TICKLOOP,
            "audit",
            "replay",
            str(path or ledger(cwd, session)),
            "--sessions-dir",
            ".tickloop-sessions",
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def start(cwd: Path, session: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*TICKLOOP, "chat", "--session", session],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        text=True,
    )


def send(proc: subprocess.Popen[str], line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def kill9(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL


def plugin_messages(cwd: Path, session: str) -> int:
    if not transcript(cwd, session).exists():
        return 0
    return sum(r.get("source", {}).get("kind") == "plugin" for r in records(transcript(cwd, session)))


def started(cwd: Path, session: str, text: str) -> bool:
    path = transcript(cwd, session)
    return path.exists() and any(r.get("content") == [{"type": "text", "text": text}] for r in records(path))


@pytest.fixture(scope="module")
def crashed_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session with a crash mid-turn, a --resume run, a crash mid-run (orphan), and a normal run."""
    cwd = tmp_path_factory.mktemp("replay")
    slow = config(cwd / "slow.toml", token_delay_ms=100)
    fast = config(cwd / "fast.toml", token_delay_ms=0)
    proc = start(cwd, "s", slow)
    send(proc, "hello")
    wait_until(lambda: started(cwd, "s", "hello"), "the natural turn to start")
    kill9(proc)
    chat(cwd, "s", "/tick\n/tick 2 --resume\n", fast)
    proc = start(cwd, "s", slow)
    send(proc, "/tick 3")
    wait_until(lambda: plugin_messages(cwd, "s") == 3, "step 1 of the second run to start")
    kill9(proc)
    chat(cwd, "s", "/tick status\nonce more\n/tick 2\n", fast)
    return cwd


def test_a_real_session_with_crashes_and_resume_replays_clean(crashed_session: Path) -> None:
    """Crash recovery, a --resume boundary and an orphaned run all agree between ledger and transcript."""
    cwd = crashed_session
    result = replay(cwd, "s")
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "run",
        "policy",
        "requested",
        "enqueued",
        "in",
        "transcript",
        "closed",
        "disagreements",
    ]
    assert len(lines) == 1 + 3 + 1  # header, three runs, summary
    assert "complete (next.target_reached)" in lines[1]
    assert "stopped (recover.orphaned_run)" in lines[2]
    assert lines[-1].startswith("replay ok: ")
    assert lines[-1].endswith("3 runs, 5 steps matched")
    kinds = [r["type"] for r in records(ledger(cwd, "s"))]
    assert kinds.count("loop_armed") == 3
    assert any(r.get("resumeBoundary") for r in records(ledger(cwd, "s")))


def _edit_transcript(
    cwd: Path, tmp: Path, edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
) -> Path:
    """A copy of the crashed session's files with the transcript edited; returns the copied ledger."""
    (tmp / ".tickloop-sessions").mkdir()
    recs = edit(records(transcript(cwd, "s")))
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)
    (tmp / ".tickloop-sessions" / session_file_name("s")).write_text(body)
    copied = tmp / "ledger.jsonl"
    copied.write_bytes(ledger(cwd, "s").read_bytes())
    return copied


def _plugin_index(recs: list[dict[str, Any]], n: int) -> int:
    return [i for i, r in enumerate(recs) if r.get("source", {}).get("kind") == "plugin"][n]


def _renumber(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turn numbers made contiguous again, so only the edit's meaning is left to catch."""
    out, turn, seen = [], 0, None
    for rec in recs:
        if rec.get("type") == "message" and rec.get("role") == "user":
            turn += 1
            seen = turn
        out.append({**rec, "turn": seen} if "turn" in rec else rec)
    return out


def _edited_text(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    i = _plugin_index(recs, 1)
    recs[i] = {**recs[i], "content": [{"type": "text", "text": "tick, and now do something else"}]}
    return recs


def _dropped(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    i = _plugin_index(recs, 4)
    turn = recs[i]["turn"]
    return _renumber([r for r in recs if r.get("turn") != turn])


def _added_human(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A human turn slipped in between step 1 and step 2 of the last run."""
    i = _plugin_index(recs, 3)
    while recs[i].get("type") != "terminal":
        i += 1
    human = {"type": "message", "turn": 0, "role": "user", "content": [{"type": "text", "text": "psst"}]}
    human |= {"source": {"kind": "user"}, "at": recs[i]["at"]}
    reply = {"type": "message", "turn": 0, "role": "assistant", "content": [{"type": "text", "text": "ok"}]}
    reply |= {"source": {"kind": "assistant"}, "at": recs[i]["at"]}
    done = {"type": "terminal", "turn": 0, "status": "completed", "usageReported": False, "at": recs[i]["at"]}
    return _renumber([*recs[: i + 1], human, reply, done, *recs[i + 1 :]])


def _added_plugin(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A plugin time step no ledger record accounts for, appended at the end."""
    i = _plugin_index(recs, 0)
    extra = {**recs[i], "meta": {"runId": "f" * 32, "step": 1, "of": 1}}
    done = {
        "type": "terminal",
        "turn": 0,
        "status": "completed",
        "usageReported": False,
        "at": recs[-1]["at"],
    }
    return _renumber([*recs, extra, done])


def _status_changed(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    i = _plugin_index(recs, 0)
    while recs[i].get("type") != "terminal":
        i += 1
    recs[i] = {**recs[i], "status": "error"}
    recs[i].pop("usageReported", None)
    return recs


def _human_during_delay(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A human turn, appended at the end, whose time falls inside a step's delay (an edited clock)."""
    armed = [r for r in records(_LEDGER[0]) if r["type"] == "tick_scheduled"][-1]
    start = datetime.fromisoformat(armed["recordedAt"])
    due = datetime.fromisoformat(armed["dueAt"])
    at = (start + (due - start) / 2).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert armed["recordedAt"] < at < armed["dueAt"]
    human = {"type": "message", "turn": 0, "role": "user", "content": [{"type": "text", "text": "psst"}]}
    done = {"type": "terminal", "turn": 0, "status": "completed", "usageReported": False, "at": at}
    return _renumber([*recs, {**human, "source": {"kind": "user"}, "at": at}, done])


TRANSCRIPT_EDITS = {
    "a plugin message's text edited": (_edited_text, "is not the run's policy text"),
    "a plugin message dropped": (_dropped, "has no plugin message in the transcript"),
    "a human message added between two steps": (_added_human, "came between step 1 and step 2"),
    "a plugin message added": (_added_plugin, "has no tick_enqueued in the ledger"),
    "a terminal's status edited": (_status_changed, "the transcript says turn"),
    "a human message timed inside a step's delay": (
        _human_during_delay,
        "and the ledger enqueued it instead",
    ),
}
_LEDGER: list[Path] = []  #: the crashed session's ledger, for edits that read it


@pytest.mark.parametrize("name", sorted(TRANSCRIPT_EDITS))
def test_each_transcript_edit_is_caught(crashed_session: Path, tmp_path: Path, name: str) -> None:
    """An edited, dropped or added transcript message makes replay exit 1 naming the disagreement."""
    edit, expected = TRANSCRIPT_EDITS[name]
    _LEDGER[:] = [ledger(crashed_session, "s")]
    copied = _edit_transcript(crashed_session, tmp_path, edit)
    result = replay(tmp_path, "s", copied)
    assert result.returncode == 1, result.stdout
    assert expected in result.stdout
    assert "disagreement(s)" in result.stdout.splitlines()[-1]


def _ledger_edit(cwd: Path, tmp: Path, edit: Callable[[list[bytes]], list[bytes]]) -> Path:
    (tmp / ".tickloop-sessions").mkdir()
    name = session_file_name("s")
    (tmp / ".tickloop-sessions" / name).write_bytes(transcript(cwd, "s").read_bytes())
    lines = ledger(cwd, "s").read_bytes().splitlines()
    copied = tmp / "ledger.jsonl"
    copied.write_bytes(b"".join(line + b"\n" for line in edit(lines)))
    return copied


def _index(lines: list[bytes], kind: str, n: int = 0) -> int:
    return [i for i, line in enumerate(lines) if f'"type":"{kind}"'.encode() in line][n]


LEDGER_EDITS: dict[str, Callable[[list[bytes]], list[bytes]]] = {
    "a tick_enqueued's step edited": lambda ls: [
        line.replace(b'"step":2', b'"step":3') if i == _index(ls, "tick_enqueued", 1) else line
        for i, line in enumerate(ls)
    ],
    "a tick_enqueued dropped": lambda ls: [
        line for i, line in enumerate(ls) if i != _index(ls, "tick_enqueued", 1)
    ],
    "a tick_enqueued added": lambda ls: [
        *ls[: _index(ls, "tick_enqueued", 1) + 1],
        ls[_index(ls, "tick_enqueued", 1)],
        *ls[_index(ls, "tick_enqueued", 1) + 1 :],
    ],
    "a tick_terminal's status edited": lambda ls: [
        line.replace(b'"status":"completed"', b'"status":"unknown"')
        if i == _index(ls, "tick_terminal", 0)
        else line
        for i, line in enumerate(ls)
    ],
}


@pytest.mark.parametrize("name", sorted(LEDGER_EDITS))
def test_each_ledger_edit_is_caught(crashed_session: Path, tmp_path: Path, name: str) -> None:
    """The ledger's record of the same messages, edited, dropped or added, makes replay exit 1."""
    copied = _ledger_edit(crashed_session, tmp_path, LEDGER_EDITS[name])
    result = replay(tmp_path, "s", copied)
    assert result.returncode == 1, result.stdout
    assert "disagreement(s)" in result.stdout.splitlines()[-1]


def test_another_sessions_transcript_is_refused(crashed_session: Path, tmp_path: Path) -> None:
    """A transcript whose header names another session is a clear error (exit 2), not a comparison."""
    (tmp_path / ".tickloop-sessions").mkdir()
    recs = records(transcript(crashed_session, "s"))
    recs[0] = {**recs[0], "id": "someone-else"}
    body = "".join(json.dumps(r) + "\n" for r in recs)
    (tmp_path / ".tickloop-sessions" / session_file_name("s")).write_text(body)
    result = replay(tmp_path, "s", ledger(crashed_session, "s"))
    assert result.returncode == 2
    assert "transcript of session 'someone-else'" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_directory_or_device_as_transcript_is_a_clear_error(crashed_session: Path, tmp_path: Path) -> None:
    """Where the transcript should be, a directory gives a clear error and exit 2."""
    (tmp_path / ".tickloop-sessions" / session_file_name("s")).mkdir(parents=True)
    result = replay(tmp_path, "s", ledger(crashed_session, "s"))
    assert result.returncode == 2
    assert "is a directory" in result.stderr
