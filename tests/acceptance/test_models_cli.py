"""`tickloop models list` and the test server's process mode, as real subprocesses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def server_process(tmp_path: Path) -> Iterator[tuple[str, Path, subprocess.Popen[str]]]:
    """The OpenAI-compatible test server as a process: (base URL, record file, process)."""
    record = tmp_path / "requests.jsonl"
    args = ["--port", "0", "--reply", "from a process", "--chunk-delay", "0.01", "--record", str(record)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tickloop.testing.openai_server", *args], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    yield url, record, proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    proc.stdout.close()


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tickloop.cli", *args],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=30,
    )


def test_server_process_answers_records_and_stops_on_sigterm(
    server_process: tuple[str, Path, subprocess.Popen[str]],
) -> None:
    """The process prints its base URL, answers chat completions, records bodies and exits 0 on SIGTERM."""
    url, record, proc = server_process
    assert url.startswith("http://127.0.0.1:")
    request = urllib.request.Request(
        f"{url}/chat/completions",
        data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        answer = json.load(response)
    assert answer["choices"][0]["message"]["content"] == "from a process"
    assert json.loads(record.read_text().splitlines()[0])["messages"][0]["content"] == "hi"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=5) == 0


def test_models_list_shows_configured_models_and_checks_them(
    tmp_path: Path, server_process: tuple[str, Path, subprocess.Popen[str]]
) -> None:
    """`models list --check` shows each model's URL and id, says which are reachable, exits 0 if all are."""
    url, _, _ = server_process
    config = tmp_path / "config.toml"
    config.write_text(
        f'[model]\nname = "mine"\n[model.endpoints.mine]\nbaseUrl = "{url}"\nmodel = "tickloop-test"\n'
        f'[model.endpoints.local]\nbaseUrl = "{url}"\nmodel = "smollm2"\n',
        encoding="utf-8",
    )
    result = run_cli("models", "list", "--check", env={"TICKLOOP_CONFIG": str(config)})
    assert result.returncode == 0, result.stderr
    assert "* mine" in result.stdout
    assert url in result.stdout
    assert "reachable, serves it" in result.stdout
    assert "does not list 'smollm2'" in result.stdout


def test_models_list_check_exits_1_when_an_endpoint_is_down(tmp_path: Path) -> None:
    """An unreachable endpoint is reported with what to check, and the command exits 1."""
    config = tmp_path / "config.toml"
    config.write_text('[model.endpoints.local]\nbaseUrl = "http://127.0.0.1:9/v1"\nmodel = "x"\n')
    result = run_cli("models", "list", "--check", "--timeout", "1", env={"TICKLOOP_CONFIG": str(config)})
    assert result.returncode == 1
    assert "UNREACHABLE" in result.stdout
    assert "cannot connect" in result.stdout


def test_models_list_reports_a_missing_key_without_calling(tmp_path: Path) -> None:
    """An endpoint whose key variable is unset is reported as such, naming the variable."""
    config = tmp_path / "config.toml"
    config.write_text(
        '[model.endpoints.ds]\nbaseUrl = "https://api.deepseek.com/v1"\nmodel = "deepseek-chat"\n'
        'apiKeyEnv = "DEEPSEEK_API_KEY"\n'
    )
    env = {"TICKLOOP_CONFIG": str(config), "DEEPSEEK_API_KEY": ""}
    result = run_cli("models", "list", "--check", "--timeout", "1", env=env)
    assert "key: $DEEPSEEK_API_KEY" in result.stdout
    assert "needs an API key: set DEEPSEEK_API_KEY" in result.stdout


def test_models_list_check_skips_builtin_endpoints_nothing_uses(tmp_path: Path) -> None:
    """On a fresh machine (the offline model, no endpoints) `--check` passes: the built-in `local`
    endpoint nobody uses is listed as not checked instead of failing the command."""
    config = tmp_path / "config.toml"
    config.write_text("")
    result = run_cli("models", "list", "--check", "--timeout", "1", env={"TICKLOOP_CONFIG": str(config)})
    assert result.returncode == 0, result.stdout + result.stderr
    local = result.stdout.split("  local ", 1)[1]
    assert local.splitlines()[1].strip() == "not checked: not in use (--all checks it)"
    assert "ok: built in" in result.stdout  # offline, the model in use


def test_models_list_check_all_checks_every_builtin_endpoint(tmp_path: Path) -> None:
    """`--check --all` checks the built-in `local` endpoint too, and its result decides the exit code."""
    config = tmp_path / "config.toml"
    config.write_text("")
    result = run_cli(
        "models", "list", "--check", "--all", "--timeout", "1", env={"TICKLOOP_CONFIG": str(config)}
    )
    local = result.stdout.split("  local ", 1)[1].splitlines()[1].strip()
    assert local.startswith(("ok:", "UNREACHABLE:")), result.stdout
    assert result.returncode == (1 if local.startswith("UNREACHABLE") else 0)


def test_models_list_check_fails_when_the_model_in_use_is_down(tmp_path: Path) -> None:
    """The endpoint `[model] name` picks is in use: unreachable, the command exits 1."""
    config = tmp_path / "config.toml"
    config.write_text('[model]\nname = "env"\n')
    env = {
        "TICKLOOP_CONFIG": str(config),
        "TICKLOOP_MODEL_BASE_URL": "http://127.0.0.1:9/v1",
        "TICKLOOP_MODEL_ID": "m",
    }
    result = run_cli("models", "list", "--check", "--timeout", "1", env=env)
    assert result.returncode == 1
    assert "UNREACHABLE: model 'env'" in result.stdout
