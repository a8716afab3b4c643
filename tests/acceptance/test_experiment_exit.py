"""`tickloop experiment run` as a subprocess: failures do not look like success."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tickloop.testing.openai_server import OpenAIServer, Reply

SPEC = """
name = "exits"
opening = ["Wait for time steps."]
policies = ["default"]
models = {models}
steps = 2
replicates = 3
{extra}
"""


def _run(
    tmp_path: Path, config: str, models: str, extra: str = "", *args: str
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "config.toml").write_text(config, encoding="utf-8")
    (tmp_path / "spec.toml").write_text(SPEC.format(models=models, extra=extra), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env["TICKLOOP_CONFIG"] = str(tmp_path / "config.toml")
    # rich draws the progress bar for a terminal only; these make it print its last state here.
    env.update(TTY_COMPATIBLE="1", TTY_INTERACTIVE="0", COLUMNS="120")
    return subprocess.run(
        [sys.executable, "-m", "tickloop", "experiment", "run", "spec.toml", "--out", "run", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_dead_endpoint_stops_the_run_before_any_session(tmp_path: Path) -> None:
    """An endpoint on a closed port fails the preflight: exit 2, the model named, no session run."""
    config = f'[model.endpoints.dead]\nbaseUrl = "http://127.0.0.1:{_closed_port()}/v1"\nmodel = "m"\n'
    done = _run(tmp_path, config, '["offline", "dead"]')
    assert done.returncode == 2, done.stderr
    assert "model 'dead'" in done.stderr
    assert "cannot be reached" in done.stderr
    assert "errors 0" not in done.stderr  # no empty progress bar before the refusal
    assert not (tmp_path / "run" / "manifest.jsonl").exists()


def test_a_dead_endpoint_stops_a_run_of_several_processes_before_any_child(tmp_path: Path) -> None:
    """With --processes 2 the parent's preflight refuses the dead endpoint: exit 2, said once, no
    run directory written (no child started)."""
    config = f'[model.endpoints.dead]\nbaseUrl = "http://127.0.0.1:{_closed_port()}/v1"\nmodel = "m"\n'
    done = _run(tmp_path, config, '["offline", "dead"]', "", "--processes", "2")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("cannot be reached") == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "tools",
    ['tools = ["workspace"]', 'tools = ["none", "ws"]\n[toolsets]\nws = ["workspace"]'],
    ids=["spec-wide", "factorial-level"],
)
def test_a_missing_workspace_root_stops_the_run_before_any_session(tmp_path: Path, tools: str) -> None:
    """A tools level that enables the workspace (spec-wide, or one level of a factorial grid) with a
    root that does not exist: exit 2 naming it, not a grid of crashed sessions."""
    missing = tmp_path / "no-such-dir"
    done = _run(tmp_path, f'[tools.workspace]\nroot = "{missing}"\n', '["offline"]', tools)
    assert done.returncode == 2, done.stderr
    assert "no-such-dir" in done.stderr
    assert not (tmp_path / "run" / "manifest.jsonl").exists()


def test_refused_sessions_exit_3_and_count_as_errors(tmp_path: Path) -> None:
    """A run in which an endpoint refuses its openings (HTTP 429) ends with exit 3, says how many
    sessions failed, and the progress bar's error count includes them."""
    with OpenAIServer(default=Reply.error(429, "rate limited")) as server:
        config = f'[model.endpoints.busy]\nbaseUrl = "{server.base_url}"\nmodel = "m"\n'
        done = _run(tmp_path, config, '["offline", "busy"]')
    assert done.returncode == 3, done.stderr
    assert "complete 3, refused 3" in done.stdout
    assert "3 sessions were refused or crashed (exit 3)" in done.stderr
    assert "errors 3" in done.stderr


def test_refused_sessions_in_child_processes_exit_3(tmp_path: Path) -> None:
    """--processes 2: the children's refused sessions are summed, and the parent exits 3 for them."""
    with OpenAIServer(default=Reply.error(429, "rate limited")) as server:
        config = f'[model.endpoints.busy]\nbaseUrl = "{server.base_url}"\nmodel = "m"\n'
        done = _run(tmp_path, config, '["offline", "busy"]', "", "--processes", "2")
    assert done.returncode == 3, done.stderr
    assert "complete 3, refused 3" in done.stdout
    assert "3 sessions were refused or crashed (exit 3)" in done.stderr


def test_a_clean_run_exits_0(tmp_path: Path) -> None:
    """Every session complete: exit 0 and nothing on stderr but the progress bar."""
    done = _run(tmp_path, "", '["offline"]')
    assert done.returncode == 0, done.stderr
    assert "complete 3" in done.stdout
    assert "errors 0" in done.stderr
