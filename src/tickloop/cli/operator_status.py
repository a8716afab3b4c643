"""``tickloop operator status``: a one-screen overview of one profile."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from tickloop.operator.status import Overview

from tickloop.cli.operator import _emit_json, _profile_store, json_option, profile_option
from tickloop.inert import inert


@click.command()
@profile_option
@json_option
def status(profile: str, as_json: bool) -> None:  # noqa: FBT001  (click flag)
    """Active goal, current plan step, last tick of each kind, intents waiting for approval, monitor
    conditions, and attention spent today."""
    from tickloop.operator.status import overview  # noqa: PLC0415

    with _profile_store(profile) as store:
        view = overview(store, profile, now=datetime.now(UTC))
    if as_json:
        _emit_json(view)
        return
    _render(view)


def _render(view: Overview) -> None:
    from rich.console import Console  # noqa: PLC0415  (only this command renders)
    from rich.markup import escape  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    console = Console()
    if not console.is_terminal:  # rich assumes 80 columns when piped; the overview needs more
        console = Console(width=140)

    def safe(text: str) -> str:
        # Untrusted text (goal, step, titles, tick errors): inert, then no rich markup either.
        return escape(inert(text, keep_newlines=False))

    console.print(
        f"[bold]{safe(view.profile)}[/]  goal: {safe(view.goal or 'none (run tickloop operator init)')}"
    )
    console.print(f"current step: {safe(view.current_step or 'no plan yet (the slow review writes it)')}")
    ticks = Table(title="last tick of each kind")
    for column in ("kind", "outcome", "ended", "detail"):
        ticks.add_column(column)
    for kind, row in view.last_ticks.items():
        if row is None:
            ticks.add_row(kind, "-", "never", "")
        else:
            ticks.add_row(
                kind,
                row.outcome.value,
                row.ended_at.isoformat(timespec="seconds"),
                safe((row.error or row.detail)[:60]),
            )
    console.print(ticks)
    waiting = ", ".join(f"#{i} {t} '{safe(title[:40])}'" for i, t, title in view.waiting_approval) or "none"
    console.print(f"waiting for your approval: {waiting}")
    active = [name for name, on in view.conditions.items() if on]
    console.print(f"monitor conditions: {', '.join(active) if active else 'all clear'}")
    console.print(f"attention spent today: {view.attention_today}")
