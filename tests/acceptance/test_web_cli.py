"""`tickloop web` as a subprocess: exposure refusals, the printed login URL, and lazy imports."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

TICKLOOP = [sys.executable, "-m", "tickloop"]


def env_for(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env.update(TICKLOOP_STORE=f"sqlite:///{tmp_path / 's.db'}", TICKLOOP_STATE_DIR=str(tmp_path / "state"))
    return env


def tickloop(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TICKLOOP, *args], env=env, capture_output=True, text=True, check=False, timeout=120
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_non_loopback_host_is_refused_without_allow_remote_and_tls(tmp_path: Path) -> None:
    """`--host 0.0.0.0` alone, or with --allow-remote but no TLS, exits 2 naming what is missing."""
    env = env_for(tmp_path)
    alone = tickloop(env, "web", "--host", "0.0.0.0")
    assert alone.returncode == 2
    assert "--allow-remote" in alone.stderr
    no_tls = tickloop(env, "web", "--host", "0.0.0.0", "--allow-remote")
    assert no_tls.returncode == 2
    assert "--tls-cert" in no_tls.stderr
    assert tickloop(env, "web", "--profile", "a", "--all").returncode == 2


def test_insecure_http_on_all_interfaces_warns_then_serves_and_stops_on_sigint(tmp_path: Path) -> None:
    """With --allow-remote --insecure-http the server starts, prints the warning and a login URL,
    stores only a 0600 hash, and exits on SIGINT."""
    env = env_for(tmp_path)
    assert tickloop(env, "operator", "init", "--goal", "g").returncode == 0
    port = free_port()
    proc = subprocess.Popen([*TICKLOOP, "web", "--host", "0.0.0.0", "--port", str(port), "--allow-remote",
                             "--insecure-http"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        else:
            raise AssertionError("the server never listened")
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    assert "WARNING: serving over plain HTTP" in err
    token = out.split("login?token=")[1].split()[0]
    tokens = tmp_path / "state" / "web" / "login-tokens.json"
    assert token not in tokens.read_text()
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600


def test_the_web_stack_is_imported_only_when_the_server_starts() -> None:
    """The CLI command table, the dashboard's pages, auth and server modules load no Starlette,
    Jinja2 or uvicorn: only `tickloop web` starting a server pays for them."""
    code = (
        "import sys, tickloop.cli.app, tickloop.cli.web, tickloop.web.pages, tickloop.web.auth, "
        "tickloop.web.server, tickloop.web.timeline\n"
        "print(sorted(m for m in ('starlette', 'jinja2', 'uvicorn') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.strip() == "[]"
