"""`tickloop audit replay` on sessions whose turns called tools: every record the harness writes."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.chat_process import run_chat

from tickloop.audit import session_file_name
from tickloop.audit.transcript import TRANSCRIPT_TYPES
from tickloop.testing.openai_server import OpenAIServer, Reply

TICKLOOP = [sys.executable, "-m", "tickloop.cli"]
SESSION_WRITER = Path(__file__).parents[2] / "src/tickloop/harness/session.py"


def _written_types() -> set[str]:
    """Every ``"type": "<literal>"`` a dict display in the session writer holds."""
    tree = ast.parse(SESSION_WRITER.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "type" and isinstance(value, ast.Constant):
                    found.add(str(value.value))
    return found


def test_replay_knows_every_record_type_the_session_writer_writes() -> None:
    """A transcript record type the harness can write is one replay reads (none reported as unknown)."""
    written = _written_types()
    assert {"session", "message", "terminal", "tool_calls", "tool_result"} <= written
    assert written <= TRANSCRIPT_TYPES


def _config(path: Path, base_url: str) -> dict[str, str]:
    path.write_text(
        "[tick]\ndelayMs = 0\nchain = true\n"
        '[tools]\nenabled = ["workspace"]\n'
        '[model]\nname = "scripted"\n'
        f'[model.endpoints.scripted]\nbaseUrl = "{base_url}"\nmodel = "tickloop-test"\ntimeoutS = 60\n'
    )
    return {**os.environ, "TICKLOOP_CONFIG": str(path)}


def _replay(cwd: Path, ledger: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TICKLOOP, "audit", "replay", str(ledger), "--sessions-dir", ".tickloop-sessions"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture(scope="module")
def tool_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A chat with --tools workspace whose natural turn and both time steps call tools."""
    cwd = tmp_path_factory.mktemp("tools")
    (cwd / "notes.txt").write_text("a note\n")
    listing = Reply.tool_calls(
        ("c1", "list_dir", '{"path": "."}'), ("c2", "read_file", '{"path": "notes.txt"}')
    )
    with OpenAIServer(default=Reply.text("done")) as server:
        server.script(
            listing,
            Reply.text("hello there"),
            Reply.tool_calls(("c3", "list_dir", '{"path": "."}')),
            Reply.text("step one"),
            Reply.tool_calls(("c4", "read_file", '{"path": "missing.txt"}')),
            Reply.text("step two"),
        )
        env = _config(cwd / "config.toml", server.base_url)
        run_chat(cwd, "t", "look around\n/tick 2\n", env)
    return cwd


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def _ledger(cwd: Path) -> Path:
    return cwd / ".tickloop-audit" / session_file_name("t")


def _transcript(cwd: Path) -> Path:
    return cwd / ".tickloop-sessions" / session_file_name("t")


def test_a_session_with_tool_calls_replays_clean(tool_session: Path) -> None:
    """Replay passes on a real tool-using session, the README's promise, and counts its steps."""
    kinds = [r["type"] for r in _records(_transcript(tool_session))]
    assert kinds.count("tool_calls") == 3
    assert kinds.count("tool_result") == 4
    result = _replay(tool_session, _ledger(tool_session))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "unknown transcript record type" not in result.stdout
    assert result.stdout.splitlines()[-1].endswith("2 steps matched")


def _copy_with(cwd: Path, tmp: Path, recs: list[dict[str, Any]]) -> Path:
    (tmp / ".tickloop-sessions").mkdir()
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)
    (tmp / ".tickloop-sessions" / session_file_name("t")).write_text(body)
    (tmp / ".tickloop-audit").mkdir()
    copied = tmp / ".tickloop-audit" / session_file_name("t")
    copied.write_bytes(_ledger(cwd).read_bytes())
    return copied


def _first(recs: list[dict[str, Any]], kind: str) -> int:
    return next(i for i, r in enumerate(recs) if r["type"] == kind)


def _result_before_call(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    i = _first(recs, "tool_calls")
    return [*recs[:i], recs[i + 1], recs[i], *recs[i + 2 :]]


def _result_unmatched(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    i = _first(recs, "tool_result")
    recs[i] = {**recs[i], "id": "c9"}
    return recs


def _result_twice(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    i = _first(recs, "tool_result")
    return [*recs[: i + 1], recs[i], *recs[i + 1 :]]


def _result_dropped(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    i = _first(recs, "tool_result")
    return [*recs[:i], *recs[i + 1 :]]


def _last_of(recs: list[dict[str, Any]], kind: str, **match: Any) -> int:
    return max(
        i for i, r in enumerate(recs) if r["type"] == kind and all(r.get(k) == v for k, v in match.items())
    )


def _reply_edited(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The assistant's text of the last time step, edited (its turn structure untouched)."""
    i = _last_of(recs, "message", role="assistant")
    recs[i] = {**recs[i], "content": [{"type": "text", "text": "step two, and something I never said"}]}
    return recs


def _result_text_edited(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A tool result's text edited, its recorded sha256 left as it was."""
    i = _last_of(recs, "tool_result")
    recs[i] = {**recs[i], "result": "nothing here", "resultChars": len("nothing here")}
    return recs


def _result_rehashed(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A tool result's text edited and its sha256 recomputed: only the ledger's digest can tell."""
    i = _last_of(recs, "tool_result")
    text = "nothing here"
    digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    recs[i] = {**recs[i], "result": text, "resultChars": len(text), "resultSha256": digest}
    return recs


def _usage_edited(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The token count of the last step's terminal, edited in the transcript."""
    i = _last_of(recs, "terminal")
    recs[i] = {**recs[i], "usage": {"inputTokens": 1, "outputTokens": 1}}
    recs[i].pop("usageReported", None)
    return recs


TOOL_EDITS = {
    "a result written before its call": (_result_before_call, "before any tool_calls"),
    "a result for a call its round did not make": (_result_unmatched, "did not make"),
    "a call answered twice": (_result_twice, "already answered"),
    "a call left without a result": (_result_dropped, "has no tool_result"),
    "a reply's text edited": (_reply_edited, "the transcript has a reply with sha256"),
    "a tool result's text edited": (_result_text_edited, "is not its resultSha256"),
    "a tool result edited and rehashed": (_result_rehashed, "tool result digest(s) are not"),
    "a terminal's token usage edited": (_usage_edited, "is not the transcript's 1 in / 1 out"),
}


@pytest.mark.parametrize("name", sorted(TOOL_EDITS))
def test_each_tool_record_edit_is_caught(tool_session: Path, tmp_path: Path, name: str) -> None:
    """A tool result out of order, unmatched, doubled or missing makes replay exit 1 saying so."""
    edit, expected = TOOL_EDITS[name]
    copied = _copy_with(tool_session, tmp_path, edit(_records(_transcript(tool_session))))
    result = _replay(tmp_path, copied)
    assert result.returncode == 1, result.stdout
    assert expected in result.stdout


def test_replay_of_a_directory_prints_one_line_per_ledger_and_a_total(tool_session: Path) -> None:
    """Replay of the audit dir: each ledger on one summary line, then the total; exit 2 names the
    ledger whose transcript is missing, the others still replayed."""
    audit = tool_session / ".tickloop-audit"
    stray = audit / session_file_name("golden")
    stray.write_bytes((Path(__file__).parents[1] / "golden/ledgers/valid.jsonl").read_bytes())
    try:
        result = _replay(tool_session, audit)
    finally:
        stray.unlink()
    lines = result.stdout.splitlines()
    assert result.returncode == 2, result.stdout
    assert lines[0].startswith(f"{stray}: cannot read transcript")
    assert lines[1].startswith(f"{_ledger(tool_session)}: replay ok: session 't' (")
    assert lines[1].endswith("2 steps matched")
    assert lines[2].startswith("total: 2 files, 1 ok, 0 with disagreement(s), 1 unreadable;")


def test_the_ledger_records_each_steps_reply_and_tool_result_digests(tool_session: Path) -> None:
    """tick_terminal carries the sha256 of the reply text and of each tool result, in order."""
    terminals = [r for r in _records(_ledger(tool_session)) if r["type"] == "tick_terminal"]
    results = [r for r in _records(_transcript(tool_session)) if r["type"] == "tool_result"]
    assert [t["replySha256"] for t in terminals] == [
        hashlib.sha256(text.encode()).hexdigest() for text in ("step one", "step two")
    ]
    assert [t["toolResultSha256s"] for t in terminals] == [
        [results[2]["resultSha256"].removeprefix("sha256:")],
        [results[3]["resultSha256"].removeprefix("sha256:")],
    ]


def test_a_relabelled_run_is_caught_by_the_policy_its_messages_were_sent_under(
    tool_session: Path, tmp_path: Path
) -> None:
    """The ledger's policyId rewritten on every record of a run: replay names the policy actually sent."""
    copied = _copy_with(tool_session, tmp_path, _records(_transcript(tool_session)))
    lines = [
        line.replace(b'"policyId":"default"', b'"policyId":"relabelled"')
        for line in copied.read_bytes().splitlines()
    ]
    copied.write_bytes(b"".join(line + b"\n" for line in lines))
    result = _replay(tmp_path, copied)
    assert result.returncode == 1
    assert "was sent under policy 'default'; the ledger says run" in result.stdout
