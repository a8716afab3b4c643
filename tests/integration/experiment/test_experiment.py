"""Experiments end to end: real harness sessions on the offline model and the scripted HTTP server."""

from __future__ import annotations

import getpass
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tickloop.audit.ledger import verify_file
from tickloop.audit.replay import replay
from tickloop.config import load_settings
from tickloop.experiment.export import export
from tickloop.experiment.report import PLOTS, plots, summarise
from tickloop.experiment.runner import Manifest, Runner
from tickloop.experiment.spec import Shard, parse_spec
from tickloop.testing.openai_server import OpenAIServer, Reply

GRID = """
name = "grid"
opening = ["Tidy the README, then wait for time steps."]
policies = ["default", "brief"]
models = ["offline", "scripted"]
steps = 4
replicates = 3
[inlinePolicies]
brief = "tick (one sentence)"
"""


@pytest.fixture
def scripted() -> Iterator[OpenAIServer]:
    with OpenAIServer(default=Reply.text("scripted answer with five words", chunks=3)) as server:
        yield server


def _config(tmp_path: Path, base_url: str, extra: str = "") -> Path:
    path = tmp_path / "config.toml"
    path.write_text(
        f'[model.endpoints.scripted]\nbaseUrl = "{base_url}"\nmodel = "tickloop-test"\n{extra}',
        encoding="utf-8",
    )
    return path


def _transcript_replies(path: Path) -> dict[int, str]:
    out: dict[int, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec.get("type") == "message" and rec.get("role") == "assistant":
            out[rec["turn"]] = "".join(p["text"] for p in rec["content"])
    return out


async def test_a_grid_runs_real_sessions_whose_ledgers_verify(tmp_path: Path, scripted: OpenAIServer) -> None:
    """2 policies x 2 models x 3 replicates x 4 steps: 12 sessions, 48 steps, every ledger verifies,
    the dataset agrees with the transcripts, and the plots are written."""
    settings = load_settings(env={}, path=_config(tmp_path, scripted.base_url))
    spec = parse_spec(GRID.encode(), where="spec")
    out = tmp_path / "run"
    summary = await Runner(spec, out, settings=settings, env={}, concurrency=4).run()
    assert (summary.ran, summary.skipped, summary.statuses) == (12, 0, {"complete": 12})
    ledgers = sorted((out / "ledgers").iterdir())
    assert len(ledgers) == 12
    for ledger in ledgers:
        report, _ = verify_file(ledger)
        assert report.violations == [], ledger
        # ... and each ledger agrees with its session transcript (audit replay)
        replayed = replay(ledger, out / "sessions")
        assert replayed.ok, [d.render() for d in replayed.disagreements]
    counts = export([out], tmp_path / "x", "jsonl")
    assert counts == {"sessions": 12, "steps": 12 * 5, "runs": 2}  # steps 0 (the opening) to 4
    rows = [json.loads(line) for line in (tmp_path / "x" / "steps.jsonl").read_text().splitlines()]
    transcripts = {p.name: _transcript_replies(p) for p in (out / "sessions").iterdir()}
    finished = {
        r["sessionId"]: r for r in Manifest(out / "manifest.jsonl").read() if r["event"] == "finished"
    }
    for row in rows:
        step = next(s for s in finished[row["session"]]["steps"] if s["step"] == row["step"])
        text = transcripts[f"session-{row['session']}.jsonl"][step["turn"]]
        assert (row["text_length"], row["response_words"]) == (len(text), len(text.split()))
        assert row["status"] == "completed"
        assert row["usage_reported"] is True
        assert row["policy_sha256"].startswith("sha256:")
    by_model = {r["model"] for r in rows}
    assert by_model == {"offline", "scripted"}
    assert len(scripted.bodies()) == 6 * (1 + 4)  # opening turn + 4 steps for each scripted session
    name, cells = summarise([out])
    assert (name, sorted(cells)) == (
        "grid",
        ["offline/brief", "offline/default", "scripted/brief", "scripted/default"],
    )
    assert all(c.sessions == 3 and c.completion_rate == 1.0 for c in cells.values())
    for png in plots(cells, tmp_path / "plots"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.stat().st_size > 2000
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == sorted(PLOTS)


async def test_a_model_error_ends_only_that_session(tmp_path: Path, scripted: OpenAIServer) -> None:
    """A provider failure ends its session with an error terminal; the other sessions run on."""
    scripted.script(Reply.text("ok"), Reply.error(500, "boom"))
    settings = load_settings(env={}, path=_config(tmp_path, scripted.base_url))
    spec = parse_spec(GRID.replace('["default", "brief"]', '["default"]').encode(), where="s")
    out = tmp_path / "run"
    summary = await Runner(spec, out, settings=settings, env={}, concurrency=1).run()
    assert summary.ran == 6
    assert summary.statuses == {"complete": 5, "stopped": 1}
    stopped = [r for r in Manifest(out / "manifest.jsonl").read() if r.get("status") == "stopped"]
    assert [(s["step"], s["status"]) for s in stopped[0]["steps"]] == [(0, "completed"), (1, "error")]


def _cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tickloop", "experiment", *args],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _env(config: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")},
        "TICKLOOP_CONFIG": str(config),
    }


def test_resume_after_kill_9_counts_no_session_twice(tmp_path: Path) -> None:
    """A run killed with SIGKILL mid-session resumes: complete sessions are skipped, the open one is
    recorded abandoned and run afresh as a new session, and the dataset has each key exactly once."""
    config = tmp_path / "config.toml"
    config.write_text("[model.offline]\ntokenDelayMs = 40\n", encoding="utf-8")
    spec = tmp_path / "spec.toml"
    spec.write_text(GRID.replace('["offline", "scripted"]', '["offline"]'), encoding="utf-8")
    out = tmp_path / "run"
    manifest = Manifest(out / "manifest.jsonl")
    proc = _cli("run", str(spec), "--out", str(out), "--concurrency", "1", env=_env(config), cwd=tmp_path)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        events = [r["event"] for r in manifest.read()] if manifest.path.exists() else []
        if events.count("finished") >= 2 and events[-1] == "started":
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    before = list(manifest.read())
    finished_before = {r["key"] for r in before if r["event"] == "finished"}
    open_session = before[-1]["sessionId"]
    assert before[-1]["event"] == "started"
    assert 2 <= len(finished_before) < 6
    done = _cli("run", str(spec), "--out", str(out), env=_env(config), cwd=tmp_path)
    stdout, stderr = done.communicate(timeout=120)
    assert done.returncode == 0, stderr
    assert f"skipped {len(finished_before)} complete; 1 abandoned" in stdout
    after = list(manifest.read())
    assert [r["sessionId"] for r in after if r["event"] == "abandoned"] == [open_session]
    finished = [r for r in after if r["event"] == "finished"]
    assert sorted(r["key"] for r in finished) == sorted({r["key"] for r in finished})
    assert len(finished) == 6
    assert open_session not in {r["sessionId"] for r in finished}
    assert export([out], tmp_path / "x", "csv") == {"sessions": 6, "steps": 30, "runs": 1}


def test_shards_run_apart_and_export_merges_them(tmp_path: Path) -> None:
    """Three shard directories together hold every session once; export merges them into one dataset."""
    spec_text = GRID.replace('["offline", "scripted"]', '["offline"]')
    spec = tmp_path / "spec.toml"
    spec.write_text(spec_text, encoding="utf-8")
    (tmp_path / "empty.toml").write_text("", encoding="utf-8")
    env = _env(tmp_path / "empty.toml")
    dirs = []
    for k in (1, 2, 3):
        out = tmp_path / f"shard-{k}"
        run = _cli("run", str(spec), "--out", str(out), "--shard", f"{k}/3", env=env, cwd=tmp_path)
        _, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
        dirs.append(out)
    keys = [
        {r["key"] for r in Manifest(d / "manifest.jsonl").read() if r["event"] == "finished"}
        if d.exists()
        else set()
        for d in dirs
    ]
    parsed = parse_spec(spec_text.encode(), where="s")
    expected = [{p.key for p in parsed.sessions() if Shard(k, 3).owns(p)} for k in (1, 2, 3)]
    assert keys == expected
    merged = _cli(
        "export", *map(str, dirs), "--format", "jsonl", "--out", str(tmp_path / "m"), env=env, cwd=tmp_path
    )
    _, err = merged.communicate(timeout=60)
    assert merged.returncode == 0, err
    rows = (tmp_path / "m" / "sessions.jsonl").read_text().splitlines()
    assert sorted(json.loads(r)["session"] for r in rows) == sorted(
        p.session_id("grid", 1) for p in parsed.sessions()
    )


SECRET_KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
#: provider keys that only the prefix rule catches: too short for the 40-character rule, not 32 hex digits
SHORT_KEYS = ("sk-proj-Zq9xW2vLmN4p", "ghp_Ab12Cd34Ef56Gh78", "xoxb-Tq7Rw3Yz8Ks2")
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
@pytest.mark.parametrize("keep_text", [False, True])
async def test_redacted_export_leaks_nothing_planted(tmp_path: Path, fmt: str, keep_text: bool) -> None:
    """Secrets, paths, addresses, this machine's host and user names where they name it, and
    wall-clock times planted in a run appear in no exported byte, in any format, with or without
    --keep-text; with --keep-text the prose around them survives."""
    host, user = socket.gethostname(), getpass.getuser()
    planted = [
        SECRET_KEY,
        AWS_KEY,
        "/home/alice/private/notes.md",
        "/srv/backtick/x.py",
        f"{user}@{host}",
        f"/home/{user}/",
        f"{host}:8080",
        "hunter2pass",
        "tok3n-value",
        "192.168.7.31",
        "fe80::1ff:fe23:4567:890a",
        "https://api.example.org/v1/x",
        *SHORT_KEYS,
    ]
    policy = (
        f"tick; keys {' '.join(SHORT_KEYS)} key {SECRET_KEY} aws {AWS_KEY} path /home/alice/private/notes.md "
        f"in `/srv/backtick/x.py` login {user}@{host} home /home/{user}/ port {host}:8080 "
        f"password=hunter2pass token=tok3n-value ip 192.168.7.31 and fe80::1ff:fe23:4567:890a "
        f"url https://api.example.org/v1/x root cause"
    )
    spec_text = f"""
name = "leak"
opening = ["My key is {SECRET_KEY}, my notes are in /home/alice/private/notes.md on {host}."]
policies = ["planted"]
models = ["offline"]
steps = 2
replicates = 2
[inlinePolicies]
planted = "{policy}"
"""
    config = tmp_path / "config.toml"
    config.write_text("[model.offline]\necho = true\n", encoding="utf-8")
    settings = load_settings(env={}, path=config)
    out = tmp_path / "run"
    await Runner(parse_spec(spec_text.encode(), where="s"), out, settings=settings, env={}).run()
    # The raw run does hold the planted text: the test would fail if the export were a copy.
    raw = b"".join(p.read_bytes() for p in (out / "sessions").iterdir())
    assert all(secret.encode() in raw for secret in planted)
    target = tmp_path / "export"
    export([out], target, fmt, keep_text=keep_text)  # type: ignore[arg-type]
    exported = [p.read_bytes() for p in target.iterdir()]
    if fmt == "parquet":
        import pyarrow.parquet as pq  # noqa: PLC0415  (only the parquet case reads it back)

        exported += [json.dumps(pq.read_table(p).to_pylist()).encode() for p in target.glob("*.parquet")]
    blob = b"\n".join(exported)
    for secret in planted:
        assert secret.encode() not in blob, f"{secret!r} leaked"
    assert (out / "run.key").read_bytes().strip() not in blob, "the run's secret leaked"
    assert not re.search(rb"20\d\d-\d\d-\d\dT\d\d:\d\d", blob), "a wall-clock timestamp leaked"
    report = (target / "REDACTION.md").read_text()
    if keep_text:
        assert b"root cause" in blob  # ordinary prose is not redacted
        # what was scrubbed is marked where it stood, in every format (Parquet decoded above)
        for placeholder in (b"<secret>", b"<path>", b"<ip>", b"<url>", b"<user@host>"):
            assert placeholder in blob, placeholder
        for kind in ("aws_key", "secret", "assignment", "ip", "path", "user_at_host", "url"):
            assert re.search(rf"\| {kind} \| [1-9]", report), kind
    else:
        # 2 sessions x (the opening turn + 2 steps)
        assert re.search(r"\| text \(replaced by keyed digest and length\) \| 6 \|", report)


def test_token_budget_stops_a_chat_run_with_its_own_rule(tmp_path: Path) -> None:
    """`[tick] maxTokensPerRun` stops `/tick 10` with `stop.token_budget`, and the ledger verifies."""
    config = tmp_path / "config.toml"
    config.write_text("[tick]\ndelayMs = 0\nmaxTokensPerRun = 60\n", encoding="utf-8")
    chat = subprocess.run(
        [sys.executable, "-m", "tickloop", "chat", "--session", "budget"],
        input="hello\n/tick 10\n",
        env=_env(config),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    ledger = tmp_path / ".tickloop-audit" / "session-budget.jsonl"
    records = [json.loads(line) for line in ledger.read_text().splitlines()]
    stop = records[-1]
    assert (stop["type"], stop["rule"], stop["usageEstimated"]) == (
        "loop_stopped",
        "stop.token_budget",
        False,
    )
    assert stop["tokens"] > 60
    assert 1 <= stop["steps"] < 10
    report, _ = verify_file(ledger)
    assert report.violations == [], chat.stdout


async def test_token_budget_without_reported_usage_uses_an_estimate(tmp_path: Path) -> None:
    """A server that reports no usage is charged an estimate, and the stop record says so."""
    with OpenAIServer(default=Reply(content="word " * 40, report_usage=False)) as server:
        settings = load_settings(env={}, path=_config(tmp_path, server.base_url))
        spec = parse_spec(
            GRID.replace('["offline", "scripted"]', '["scripted"]')
            .replace('["default", "brief"]', '["default"]')
            .replace("replicates = 3", "replicates = 1")
            .replace("steps = 4", "steps = 8\nmaxTokensPerSession = 100")
            .encode(),
            where="s",
        )
        out = tmp_path / "run"
        summary = await Runner(spec, out, settings=settings, env={}).run()
    assert summary.statuses == {"stopped": 1}
    ledger = next((out / "ledgers").iterdir())
    stop = json.loads(ledger.read_text().splitlines()[-1])
    assert (stop["rule"], stop["usageEstimated"]) == ("stop.token_budget", True)
    assert stop["steps"] < 8
    finished = [r for r in Manifest(out / "manifest.jsonl").read() if r["event"] == "finished"]
    assert finished[0]["endRule"] == "stop.token_budget"


async def test_an_experiment_with_the_workspace_toolset_counts_tool_calls(tmp_path: Path) -> None:
    """tools = ["workspace"] offers the jailed toolset to every session; each time step's tool call is
    in the ledger and in the dataset's tool_calls column, and the ledgers still verify."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("hello\n", encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text(f'[tools.workspace]\nroot = "{workspace}"\n', encoding="utf-8")
    spec = parse_spec(
        b'name = "tools"\nopening = ["Wait for time steps."]\npolicies = ["lister"]\nmodels = ["offline"]\n'
        b'steps = 2\nreplicates = 1\ntools = ["workspace"]\n[inlinePolicies]\nlister = "tick: list files"\n',
        where="s",
    )
    out = tmp_path / "run"
    summary = await Runner(spec, out, settings=load_settings(env={}, path=config), env={}).run()
    assert summary.statuses == {"complete": 1}
    ledger = next((out / "ledgers").iterdir())
    assert verify_file(ledger)[0].violations == []
    export([out], tmp_path / "x", "jsonl")
    rows = [json.loads(line) for line in (tmp_path / "x" / "steps.jsonl").read_text().splitlines()]
    assert [(r["step"], r["tool_calls"]) for r in rows] == [(0, 0), (1, 1), (2, 1)]


FACTORIAL = b"""
name = "fx"
policies = ["default"]
models = ["scripted"]
steps = 2
replicates = 1
tools = ["none", "workspace"]
temperature = [0.0, 0.9]
[openings]
alpha = ["Alpha opening."]
beta = ["Beta opening.", "Beta second line."]
"""


async def test_a_factorial_grid_sends_each_sessions_levels_and_tables_name_them(
    tmp_path: Path, scripted: OpenAIServer
) -> None:
    """openings x tools x temperature: every request carries its session's temperature and offers tools
    exactly on the workspace level; every table has a column per factor; report groups by any factor."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    extra = f'[tools.workspace]\nroot = "{workspace}"\n'
    settings = load_settings(env={}, path=_config(tmp_path, scripted.base_url, extra))
    out = tmp_path / "run"
    summary = await Runner(parse_spec(FACTORIAL, where="s"), out, settings=settings, env={}).run()
    assert summary.statuses == {"complete": 8}
    groups: dict[tuple[str, bool, float], int] = {}
    for request in scripted.requests:
        body = request.body or {}
        first = body["messages"][0]["content"]
        key = (first, "tools" in body, body["temperature"])
        groups[key] = groups.get(key, 0) + 1
    # each session: its opening lines, then 2 time steps; the first message names the opening
    assert groups == {
        (opening, tools, temp): lines + 2
        for opening, lines in (("Alpha opening.", 1), ("Beta opening.", 2))
        for tools in (False, True)
        for temp in (0.0, 0.9)
    }
    export([out], tmp_path / "x", "jsonl")
    sessions = [json.loads(line) for line in (tmp_path / "x" / "sessions.jsonl").read_text().splitlines()]
    steps = [json.loads(line) for line in (tmp_path / "x" / "steps.jsonl").read_text().splitlines()]
    levels = {(r["opening"], r["tools"], r["temperature"]) for r in sessions}
    assert levels == {
        (o, t, temp) for o in ("alpha", "beta") for t in ("none", "workspace") for temp in (0.0, 0.9)
    }
    assert {(r["opening"], r["tools"], r["temperature"]) for r in steps} == levels
    assert {r["cell"] for r in sessions} >= {
        "scripted/default/alpha/none/t0",
        "scripted/default/beta/workspace/t0.9",
    }
    for by, expected in (("tools", {"none": 4, "workspace": 4}), ("temperature", {"0.0": 4, "0.9": 4})):
        _, grouped = summarise([out], by=by)
        assert {level: stats.sessions for level, stats in grouped.items()} == expected


def test_report_by_a_factor_from_the_command_line(tmp_path: Path, scripted: OpenAIServer) -> None:
    """``tickloop experiment report DIR --by opening`` prints one row per opening variant; an unknown
    factor is a usage error (exit 2) that lists the factors."""
    config = _config(tmp_path, scripted.base_url)
    spec = tmp_path / "spec.toml"
    spec.write_bytes(FACTORIAL.replace(b'tools = ["none", "workspace"]\n', b""))
    env = _env(config)
    run = [sys.executable, "-m", "tickloop", "experiment"]
    done = subprocess.run(
        [*run, "run", str(spec), "--out", str(tmp_path / "r")],
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    shown = subprocess.run(
        [*run, "report", str(tmp_path / "r"), "--by", "opening"], env={**env, "COLUMNS": "200"},
        capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    rows = [line for line in shown.stdout.splitlines() if "alpha" in line or "beta" in line]
    assert len(rows) == 2
    assert "opening" in shown.stdout
    bad = subprocess.run(
        [*run, "report", str(tmp_path / "r"), "--by", "colour"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert bad.returncode == 2
    assert "temperature" in bad.stderr
