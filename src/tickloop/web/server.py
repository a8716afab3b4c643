"""Starting the dashboard: exposure rules, the one-time login URL, and uvicorn.

Loopback by default. Any other address needs ``allow_remote`` and either TLS (certificate and key)
or ``insecure_http``, which prints a warning: the dashboard approves email and purchases.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tickloop.errors import ConfigError
from tickloop.system import is_loopback_host
from tickloop.web.auth import TokenStore

DEFAULT_PORT = 8765
INSECURE_WARNING = (
    "tickloop web: WARNING: serving over plain HTTP on a non-loopback address. The login token and "
    "the session cookie cross the network in clear text; anyone on the path can approve for you."
)


@dataclass(frozen=True, slots=True)
class Exposure:
    """Where and how the server listens."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    allow_remote: bool = False
    tls_cert: Path | None = None
    tls_key: Path | None = None
    insecure_http: bool = False
    public_url: str = ""  #: where the person opens it (a LAN name, a reverse proxy, a tailnet name)

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    @property
    def secure(self) -> bool:
        """Whether the browser reaches the dashboard over TLS (directly, or through a proxy)."""
        return self.tls or self.public_url.startswith("https://")

    @property
    def base(self) -> str:
        """The address the person opens: ``public_url``, else this server's own."""
        if self.public_url:
            return self.public_url.rstrip("/")
        host = "127.0.0.1" if self.host in {"0.0.0.0", "::"} else self.url_host()  # noqa: S104
        return f"{self.scheme}://{host}:{self.port}"

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    def url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host


def check_public_url(url: str, *, insecure_http: bool) -> None:
    """A public URL is ``https://host[:port]`` (``http://`` only with ``--insecure-http``), no path."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unbalanced [ ] around an IPv6 address
        parts = urlsplit("")
    if parts.scheme not in {"http", "https"} or not parts.hostname or not url.isprintable() or " " in url:
        raise ConfigError(f"--public-url {url!r} must be an address like https://host or https://host:8443")
    if parts.username or parts.password or parts.query or parts.fragment or parts.path not in {"", "/"}:
        raise ConfigError(
            f"--public-url {url!r}: give the scheme, host and port only (no path, query or login)"
        )
    try:
        parts.port  # noqa: B018  (validates the port)
    except ValueError:
        raise ConfigError(f"--public-url {url!r}: the port is not a number from 1 to 65535") from None
    if parts.scheme == "http" and not insecure_http:
        raise ConfigError(
            f"--public-url {url!r} is plain HTTP: the login token and the session cookie would cross "
            "the network in clear text; use https:// (TLS here or at a proxy), or add --insecure-http"
        )


def check_exposure(exposure: Exposure) -> list[str]:
    """Refuse an unsafe exposure with ``ConfigError``; return the warnings to print."""
    if exposure.public_url:
        check_public_url(exposure.public_url, insecure_http=exposure.insecure_http)
    if (exposure.tls_cert is None) != (exposure.tls_key is None):
        raise ConfigError("--tls-cert and --tls-key go together: give both or neither")
    for path in (exposure.tls_cert, exposure.tls_key):
        if path is not None and not path.is_file():
            raise ConfigError(f"TLS file {path} does not exist")
    if is_loopback_host(exposure.host):
        return []
    if not exposure.allow_remote:
        raise ConfigError(
            f"--host {exposure.host} is not a loopback address: the dashboard can approve email and "
            "purchases, so another host needs --allow-remote and --tls-cert/--tls-key "
            "(or --insecure-http, not recommended)"
        )
    if exposure.tls:
        return []
    if not exposure.insecure_http:
        raise ConfigError(
            f"--host {exposure.host} with --allow-remote needs TLS: give --tls-cert and --tls-key, "
            "or accept plain HTTP with --insecure-http"
        )
    return [INSECURE_WARNING]


def state_dir(env: dict[str, str] | None = None) -> Path:
    """The dashboard's state dir: ``$TICKLOOP_STATE_DIR/web`` or ``$XDG_STATE_HOME/tickloop/web``."""
    env = dict(os.environ) if env is None else env
    folder = env.get("TICKLOOP_STATE_DIR")
    if folder:
        return Path(folder) / "web"
    from tickloop.dirs import user_state_path  # noqa: PLC0415

    return user_state_path() / "web"


def login_url(base: str, folder: Path, *, now: datetime | None = None) -> str:
    """Mint a one-time login token (only its hash is stored) and return the URL under ``base``."""
    token = TokenStore(folder).mint(now=now or datetime.now(UTC))
    return f"{base}/login?token={token}"


def allowed_hosts(exposure: Exposure) -> set[str]:
    """The Host header values this server answers: loopback and ``--host`` at its port, and the
    public URL's host (with and without its port, as browsers omit a default one)."""
    names = {"127.0.0.1", "localhost", "[::1]", exposure.url_host()}
    hosts = {f"{n}:{exposure.port}" for n in names}
    if exposure.public_url:
        parts = urlsplit(exposure.public_url)
        host = parts.hostname or ""
        name = f"[{host}]" if ":" in host else host
        default = 443 if parts.scheme == "https" else 80
        hosts.add(f"{name}:{parts.port or default}")
        if parts.port in {None, default}:
            hosts.add(name)
    return hosts


def exposure_config(exposure: Exposure) -> dict[str, Any]:
    """What the app's guards need to know of the exposure (``WebConfig`` fields)."""
    return {
        "allowed_hosts": allowed_hosts(exposure),
        "tls": exposure.tls,
        "public_origin": public_origin(exposure),
        "secure_cookies": exposure.secure,
    }


def public_origin(exposure: Exposure) -> str:
    """The Origin a browser sends from the public URL ("" without one)."""
    if not exposure.public_url:
        return ""
    parts = urlsplit(exposure.public_url)
    return f"{parts.scheme}://{parts.netloc.lower()}"


# -- the running server's address, for ``--login-url`` ---------------------------------------------

RUNNING_FILE = "server.json"


def announce(folder: Path, exposure: Exposure) -> Path:
    """Write where this server answers (0600, replaced atomically) so ``--login-url`` can find it."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / RUNNING_FILE
    tmp = folder / f".{RUNNING_FILE}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"pid": os.getpid(), "base": exposure.base, "port": exposure.port}, out)
    tmp.replace(path)
    return path


def withdraw(folder: Path) -> None:
    """Remove this process's announcement (another server's stays)."""
    path = folder / RUNNING_FILE
    if _running(path).get("pid") == os.getpid():
        path.unlink(missing_ok=True)


def running_base(folder: Path) -> str | None:
    """The base URL of the dashboard running on this state dir, or None when none is."""
    found = _running(folder / RUNNING_FILE)
    pid, base = found.get("pid"), found.get("base")
    if not isinstance(pid, int) or not isinstance(base, str) or not _alive(pid):
        return None
    return base


def _running(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid > 0


def qr_lines(url: str) -> str:
    """The URL as a QR code drawn with block characters, for a phone to scan off the terminal."""
    import io  # noqa: PLC0415

    import segno  # noqa: PLC0415

    out = io.StringIO()
    segno.make(url, error="l").terminal(out=out, compact=True)
    return out.getvalue()


def serve(app: object, exposure: Exposure) -> None:
    """Run uvicorn until interrupted (SIGINT/SIGTERM end it gracefully)."""
    import uvicorn  # noqa: PLC0415

    config = uvicorn.Config(
        app,  # type: ignore[arg-type]
        host=exposure.host,
        port=exposure.port,
        ssl_certfile=str(exposure.tls_cert) if exposure.tls_cert else None,
        ssl_keyfile=str(exposure.tls_key) if exposure.tls_key else None,
        log_level="warning",
        proxy_headers=False,  # the client address is the socket's: the rate limit must not trust headers
        server_header=False,
        timeout_graceful_shutdown=3,  # open event streams must not hold a shutdown
    )
    uvicorn.Server(config).run()
    sys.stdout.flush()
