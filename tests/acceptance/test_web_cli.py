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


def start_web(env: dict[str, str], *args: str) -> tuple[subprocess.Popen[str], int]:
    """`tickloop web --port N ARGS` running, listening."""
    port = free_port()
    proc = subprocess.Popen([*TICKLOOP, "web", "--port", str(port), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc, port
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"the server never listened: {proc.communicate(timeout=10)}")


def stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    proc.send_signal(signal.SIGINT)
    return proc.communicate(timeout=15)


def test_login_url_without_a_running_server_says_so(tmp_path: Path) -> None:
    """`tickloop web --login-url` with no dashboard running exits 1 saying so, and mints nothing."""
    done = subprocess.run([*TICKLOOP, "web", "--login-url"], env=env_for(tmp_path), capture_output=True,
                          text=True, check=False, timeout=30)  # fmt: skip
    assert done.returncode == 1
    assert "no dashboard is running" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "state" / "web" / "login-tokens.json").exists()


def test_concurrent_login_urls_all_carry_the_running_servers_port_and_all_work(tmp_path: Path) -> None:
    """Ten `--login-url` runs at once (no --port given) against a server on a random port: none
    crashes, each prints a URL at that port, and each URL logs in exactly once."""
    env = env_for(tmp_path)
    assert tickloop(env, "operator", "init", "--goal", "g").returncode == 0
    proc, port = start_web(env)
    try:
        runs = [subprocess.Popen([*TICKLOOP, "web", "--login-url"], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(10)]  # fmt: skip
        printed = [run.communicate(timeout=60) for run in runs]
        assert [run.returncode for run in runs] == [0] * 10, printed
        urls = [out.strip() for out, _ in printed]
        assert all(url.startswith(f"http://127.0.0.1:{port}/login?token=") for url in urls), urls
        for url in urls:
            assert login_status(url) == 303, url
            assert login_status(url) in {403, 429}, "a login URL worked twice"
    finally:
        stop(proc)


def login_status(url: str) -> int:
    """Log in with a login URL as a browser would (form, its CSRF cookie); the POST's status."""
    import re  # noqa: PLC0415

    import httpx  # noqa: PLC0415

    base, token = url.split("/login?token=")
    with httpx.Client(base_url=base, timeout=20) as client:
        form = client.get(f"/login?token={token}")
        pre = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert pre is not None
        return client.post("/login", data={"csrf": pre.group(1), "token": token}).status_code


def test_a_public_url_is_the_login_base_and_its_host_is_allowed(tmp_path: Path) -> None:
    """Behind a TLS proxy at https://dash.example.org the printed URL is the proxy's, a request with
    that Host is served, another Host still gets 400; plain http:// without --insecure-http exits 2."""
    import httpx  # noqa: PLC0415

    env = env_for(tmp_path)
    assert tickloop(env, "operator", "init", "--goal", "g").returncode == 0
    refused = tickloop(env, "web", "--public-url", "http://192.168.1.5:8765")
    assert refused.returncode == 2
    assert "--insecure-http" in refused.stderr
    proc, port = start_web(env, "--public-url", "https://dash.example.org", "--no-qr")
    try:
        local = f"http://127.0.0.1:{port}"
        assert (
            httpx.get(f"{local}/login", headers={"Host": "dash.example.org"}, timeout=10).status_code == 200
        )
        assert httpx.get(f"{local}/login", headers={"Host": "evil.example"}, timeout=10).status_code == 400
        assert httpx.get(f"{local}/login", timeout=10).status_code == 200
        again = tickloop(env, "web", "--login-url")
        assert again.stdout.startswith("https://dash.example.org/login?token=")
    finally:
        out, _ = stop(proc)
    assert "log in (once, within 24 h) at https://dash.example.org/login?token=" in out
    assert "█" not in out  # --no-qr
    assert not (tmp_path / "state" / "web" / "server.json").exists()


def test_the_login_url_is_shown_as_a_qr_code_with_qr(tmp_path: Path) -> None:
    """With --qr (the default on a terminal) a block-character QR code follows the login URL."""
    env = env_for(tmp_path)
    assert tickloop(env, "operator", "init", "--goal", "g").returncode == 0
    proc, _ = start_web(env, "--qr")
    out, _ = stop(proc)
    after = out.split("login?token=")[1].splitlines()[1:]
    blocks = [line for line in after if line.strip()]
    assert len(blocks) > 10
    assert all(set(line) <= {" ", "█", "▀", "▄"} for line in blocks)
