"""Starting the dashboard: exposure rules, the one-time login URL, and uvicorn.

Loopback by default. Any other address needs ``allow_remote`` and either TLS (certificate and key)
or ``insecure_http``, which prints a warning: the dashboard approves email and purchases.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

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

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    def url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host


def check_exposure(exposure: Exposure) -> list[str]:
    """Refuse an unsafe exposure with ``ConfigError``; return the warnings to print."""
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


def login_url(exposure: Exposure, folder: Path, *, now: datetime | None = None) -> str:
    """Mint a one-time login token (only its hash is stored) and return the URL that carries it."""
    token = TokenStore(folder).mint(now=now or datetime.now(UTC))
    host = "127.0.0.1" if exposure.host in {"0.0.0.0", "::"} else exposure.url_host()  # noqa: S104
    return f"{exposure.scheme}://{host}:{exposure.port}/login?token={token}"


def allowed_hosts(exposure: Exposure) -> set[str]:
    names = {"127.0.0.1", "localhost", "[::1]", exposure.url_host()}
    return {f"{n}:{exposure.port}" for n in names}


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
