"""``tickloop models list [--check]``: the configured models and whether each is reachable."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from typing import Any

import click

from tickloop.config import load_settings
from tickloop.models.registry import Reachability, check_model, known_models


@click.group()
def models() -> None:
    """Models tickloop can talk to: offline, local and [model.endpoints.NAME] in the config."""


@models.command("list")
@click.option("--check", is_flag=True, help="Ask each endpoint for GET /models (short timeout).")
@click.option("--timeout", "timeout_s", type=float, default=3.0, show_default=True, help="Seconds per check.")
def list_models(check: bool, timeout_s: float) -> None:  # noqa: FBT001  (click passes flags positionally)
    """Show name, label, base URL and model id of every configured model.

    With --check, exits 1 if any endpoint is unreachable.
    """
    settings = load_settings()
    infos = known_models(settings)
    results: dict[str, Reachability] = {}
    if check:
        checks = [check_model(info, settings, timeout_s=timeout_s) for info in infos]
        results = {r.name: r for r in asyncio.run(_gather(checks))}
    default = settings.model.name
    for info in infos:
        mark = "*" if info.name == default else " "
        where = f"{info.base_url}  {info.model}" if info.base_url else "(built in, no network)"
        key = f"  key: ${info.api_key_env}" if info.api_key_env else ""
        click.echo(f"{mark} {info.name:<12} {info.label:<28} {where}{key}")
        if info.name in results:
            result = results[info.name]
            click.echo(f"    {'ok' if result.ok else 'UNREACHABLE'}: {result.detail}")
    if any(not r.ok for r in results.values()):
        sys.exit(1)


async def _gather(checks: list[Coroutine[Any, Any, Reachability]]) -> list[Reachability]:
    return list(await asyncio.gather(*checks))
