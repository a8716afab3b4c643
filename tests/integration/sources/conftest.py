"""Real components for the source tests: git repositories, Maildirs, a local HTTP server, Dovecot."""

from __future__ import annotations

import grp
import http.server
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sources_support import HttpServer, Imap, Repo, make_maildir
from tests.certs import self_signed


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """An empty git repository on branch main."""
    return Repo(tmp_path / "repo")


@pytest.fixture
def maildir(tmp_path: Path) -> Path:
    """An empty Maildir (cur/new/tmp)."""
    return make_maildir(tmp_path / "Maildir")


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    """An HTTP server on 127.0.0.1 serving whatever the test puts in ``routes``."""
    state = HttpServer(port=0)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.hits.append(self.path)
            if self.path == "/slow":
                time.sleep(3)
            status, body = state.routes.get(self.path, (404, b"not found"))
            self.send_response(status)
            self.send_header("Content-Type", "text/calendar")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002  (stdlib signature)
            """Keep the test output quiet."""

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


# --- Dovecot ---------------------------------------------------------------------------------------

DOVECOT_INSTALL = "apt-get install -y dovecot-imapd"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _users() -> tuple[str, str, str]:
    """(internal user, login user, mail user): Dovecot refuses to run logins or mail as root."""
    if os.geteuid() != 0:
        me = pwd.getpwuid(os.geteuid()).pw_name
        return me, me, me
    return "dovecot", "dovenull", "dovecot"


def _dovecot_config(root: Path, tls_port: int, plain_port: int) -> str:
    internal, login, mail_user = _users()
    entry = pwd.getpwnam(mail_user)
    return f"""
protocols = imap
listen = 127.0.0.1
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
ssl = required
ssl_cert = <{root}/cert.pem
ssl_key = <{root}/key.pem
auth_mechanisms = plain
auth_failure_delay = 0
default_internal_user = {internal}
default_internal_group = {grp.getgrgid(pwd.getpwnam(internal).pw_gid).gr_name}
default_login_user = {login}
first_valid_uid = {entry.pw_uid}
mail_location = maildir:{root}/mail/%u
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root}/passwd
}}
userdb {{
  driver = static
  args = uid={entry.pw_uid} gid={entry.pw_gid} home={root}/mail/%u
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    port = {plain_port}
  }}
  inet_listener imaps {{
    port = {tls_port}
    ssl = yes
  }}
}}
service anvil {{
  chroot =
  # an unusable penalty socket switches the failed-login back-off off (tests log in wrongly on purpose)
  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
"""


def _make_cert(root: Path) -> None:
    self_signed(root, days=2)


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"dovecot exited with {process.returncode}: {log.read_text(errors='replace')}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    pytest.fail(f"dovecot did not listen on {port} within 10 s")


@pytest.fixture(scope="session")
def dovecot() -> Iterator[Imap]:
    """A real Dovecot IMAP server on 127.0.0.1 with a self-signed certificate and one user."""
    binary = shutil.which("dovecot") or ("/usr/sbin/dovecot" if Path("/usr/sbin/dovecot").exists() else None)
    if binary is None or shutil.which("openssl") is None:
        pytest.skip(f"DOVECOT IS NOT INSTALLED: the IMAP tests need it ({DOVECOT_INSTALL})")
    # Not pytest's tmp dir: Dovecot's unprivileged processes must be able to traverse the path.
    root = Path(tempfile.mkdtemp(prefix="tickloop-dovecot-"))
    root.chmod(0o755)
    _, _, mail_user = _users()
    (root / "mail").mkdir()
    shutil.chown(root / "mail", mail_user, pwd.getpwnam(mail_user).pw_gid)
    _make_cert(root)
    (root / "passwd").write_text("alice:{PLAIN}wonderland-42::::::\n", encoding="utf-8")
    tls_port, plain_port = _free_port(), _free_port()
    (root / "dovecot.conf").write_text(_dovecot_config(root, tls_port, plain_port), encoding="utf-8")
    log = root / "dovecot.log"
    process = subprocess.Popen(
        [binary, "-F", "-c", str(root / "dovecot.conf")], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    try:
        _wait_for_port(tls_port, process, log)
        yield Imap("127.0.0.1", tls_port, plain_port, "alice", "wonderland-42", str(root / "cert.pem"))
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)
