"""``tickloop operator ...``: set up and inspect the operator's store (thin: parse, call, render).

The store URL comes from ``TICKLOOP_STORE`` or ``[store] url`` in the config file, never from a
flag: a PostgreSQL URL can carry a password, and argv is visible to every user on the machine.
"""

from __future__ import annotations

import getpass
import json
import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from tickloop.cli.app import LazyGroup
from tickloop.errors import ValidationError
from tickloop.inert import inert
from tickloop.operator.domain import DecisionKind, check_timezone
from tickloop.operator.store import Store
from tickloop.operator.store._rows import iso as utc_iso

F = TypeVar("F", bound=Callable[..., Any])

profile_option = click.option(
    "--profile",
    envvar="TICKLOOP_PROFILE",
    default="default",
    show_default=True,
    help="Whose operator (env TICKLOOP_PROFILE).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
#: Row ids are positive 64-bit integers; anything else cannot name a row.
ROW_ID = click.IntRange(1, 2**63 - 1)


def _now() -> datetime:
    # The CLI is the edge where time enters; tickloop.clock is not imported (it pulls in asyncio).
    return datetime.now(UTC)


def _store(*, create: bool = False) -> Store:
    from tickloop.operator.service import open_configured_store  # noqa: PLC0415

    return open_configured_store(create=create)


def _profile_store(profile: str) -> Store:
    """The store, after checking the profile exists (so every command names a wrong profile)."""
    store = _store()
    try:
        store.get_profile(profile)
    except BaseException:
        store.close()
        raise
    return store


def _plain(value: Any) -> Any:
    from tickloop.operator.service import plain  # noqa: PLC0415

    return plain(value)


def _emit_json(value: Any) -> None:
    click.echo(json.dumps(_plain(value), ensure_ascii=True, indent=2, sort_keys=True))


def _table(title: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    from rich.console import Console  # noqa: PLC0415  (heavy; only a listing renders)
    from rich.markup import escape  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    table = Table(title=escape(inert(title, keep_newlines=False)))
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(escape(_cell(v)) for v in row))
    Console().print(table)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return utc_iso(value)
    # Titles, payloads and subjects are untrusted: no escape sequence, control or bidi override
    # reaches the terminal, and a newline cannot start a fake row.
    text = inert(str(value).encode("utf-8", "backslashreplace").decode("utf-8"), keep_newlines=False)
    return text if len(text) <= 80 else text[:77] + "..."


#: Operator subcommands that live in their own modules, imported only when invoked: a one-shot tick
#: must not pay for the monitor's or the scheduler's imports.
OPERATOR_COMMANDS = {
    "tick": "tickloop.cli.operator_tick:tick",
    "run": "tickloop.cli.operator_run:run",
    "install": "tickloop.cli.operator_install:install",
    "status": "tickloop.cli.operator_status:status",
    "monitor": "tickloop.cli.operator_monitor:monitor",
    "attention": "tickloop.cli.operator_monitor:attention",
    "digest": "tickloop.cli.operator_monitor:digest",
    "eval": "tickloop.cli.operator_eval:eval_command",
    "intents": "tickloop.cli.operator_intents:intents",
    "profile": "tickloop.cli.operator_profile:profile",
}


@click.group(cls=LazyGroup, lazy=OPERATOR_COMMANDS)
def operator() -> None:
    """Set up and inspect the operator's store: profiles, goals, board, plan, intents, progress.

    The store is TICKLOOP_STORE (or [store] url): sqlite:///path, postgresql://..., memory://;
    empty means a SQLite file in the user data directory.
    """


@operator.command()
@profile_option
@click.option("--goal", "goal_title", help="Title of the first goal model (made active).")
@click.option("--body", default="", help="Goal model text.")
@click.option("--display-name", default="", help="The person's name.")
@click.option("--timezone", default="UTC", show_default=True, help="The person's IANA timezone.")
@click.option(
    "--from",
    "from_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="TOML file: [profile] display_name, timezone; [goal] title, body, [goal.data].",
)
@click.option("--task", "tasks", multiple=True, help="A first board task (repeat for more).")
@click.option("--quiet", help="Quiet hours START-END in the person's timezone, e.g. 22-7.")
@click.option("--channel", help="Notifications: console, an email address, or apprise:VARIABLE.")
@json_option
def init(
    *,
    profile: str,
    goal_title: str | None,
    body: str,
    display_name: str,
    timezone: str,
    from_file: Path | None,
    tasks: tuple[str, ...],
    quiet: str | None,
    channel: str | None,
    as_json: bool,
) -> None:
    """Create a profile, its first active goal model and board tasks, and (optionally) quiet hours
    and a notification channel in the config file. With no --goal or --from on a terminal, asks."""
    from tickloop.operator import onboarding  # noqa: PLC0415
    from tickloop.operator.service import InitSpec, init_profile, read_init_file  # noqa: PLC0415

    if from_file is not None and goal_title is not None:
        raise ValidationError("give either --from FILE or --goal TITLE, not both")
    if from_file is None and goal_title is None:
        if not sys.stdin.isatty():
            raise ValidationError("say what the goal is: --goal TITLE or --from FILE.toml")
        goal_title, body, tasks, quiet, channel, timezone = _wizard(timezone)
    spec = (
        read_init_file(from_file)
        if from_file is not None
        else InitSpec(str(goal_title), body, {}, display_name, timezone)
    )
    check_timezone(spec.timezone)  # before anything is created or written
    quiet_hours = onboarding.parse_quiet(quiet) if quiet else None
    picked = onboarding.parse_channel(channel) if channel else None
    with _store(create=True) as store:
        made, goal = init_profile(store, profile, spec, now=_now())
        added = [
            store.add_task(profile, title, now=_now(), priority=len(tasks) - i)
            for i, title in enumerate(tasks)
        ]
    written, skipped = _write_onboarding(onboarding.snippet(quiet_hours, picked, made.timezone), profile)
    if as_json:
        _emit_json(
            {
                "profile": made,
                "goal": goal,
                "tasks": added,
                "configWritten": written,
                "configSkipped": skipped,
            }
        )
        return
    click.echo(
        f"profile {made.name!r} created; goal model v{goal.version} active: "
        f"{inert(goal.title, keep_newlines=False)}"
    )
    click.echo(
        f"{len(added)} board task(s) added" if added else "no board tasks yet: tickloop operator task add"
    )
    for name in skipped:
        click.echo(f"[{name}] already in the config file: left as is (merge your settings by hand)")


def _write_onboarding(sections: dict[str, str], profile: str) -> tuple[list[str], list[str]]:
    from tickloop.config import CONFIG_ENV, default_config_path  # noqa: PLC0415
    from tickloop.operator.onboarding import write_settings  # noqa: PLC0415

    if not sections:
        return [], []
    path = Path(os.environ[CONFIG_ENV]) if os.environ.get(CONFIG_ENV) else default_config_path()
    return write_settings(path, sections, profile=profile)


def _wizard(timezone: str) -> tuple[str, str, tuple[str, ...], str, str, str]:
    """Ask for the goal, the first tasks, quiet hours, a channel and the timezone."""
    click.echo("Setting up the operator. It works on one goal; you can change it later.")
    goal = click.prompt("What is the goal?", type=str).strip()
    body = click.prompt("Say more (optional)", default="", show_default=False)
    tasks: list[str] = []
    while task := click.prompt(
        f"First board task #{len(tasks) + 1} (empty to finish)", default="", show_default=False
    ):
        tasks.append(task.strip())
    zone = click.prompt("Your timezone (IANA name)", default=timezone)
    quiet = click.prompt("Quiet hours, START-END", default="22-7")
    channel = click.prompt(
        "Notify you via: console, your email address, or apprise:VARIABLE", default="console"
    )
    return goal, body, tuple(tasks), quiet, channel, zone


@operator.command()
def migrate() -> None:
    """Apply pending schema migrations (they also run on first use)."""
    from tickloop.operator.service import open_configured_store  # noqa: PLC0415

    with open_configured_store(migrate=False, create=True) as store:
        applied = store.migrate()
        version = store.schema_version()
    done = ", ".join(f"{v:04d}" for v in applied) or "nothing to apply"
    click.echo(f"{store.url}: {done}; schema version {version}")


# -- goal ------------------------------------------------------------------------------------------


@operator.group()
def goal() -> None:
    """Show, write and activate goal models."""


@goal.command("show")
@profile_option
@json_option
def goal_show(*, profile: str, as_json: bool) -> None:
    """Show every goal model version; the active one is marked."""
    with _profile_store(profile) as store:
        goals = store.list_goal_models(profile)
    if as_json:
        _emit_json(goals)
        return
    rows = [(g.version, g.status, g.title, g.body, g.activated_at) for g in goals]
    _table(f"goal models of {profile}", ["version", "status", "title", "body", "activated"], rows)


@goal.command("set")
@profile_option
@click.argument("title")
@click.option("--body", default="", help="Goal model text.")
@click.option("--activate", is_flag=True, help="Make it active at once (default: a draft).")
@json_option
def goal_set(*, profile: str, title: str, body: str, activate: bool, as_json: bool) -> None:
    """Write a new goal model version (a draft unless --activate)."""
    from tickloop.operator.service import set_goal  # noqa: PLC0415

    with _profile_store(profile) as store:
        made = set_goal(store, profile, title=title, body=body, now=_now(), activate=activate)
    if as_json:
        _emit_json(made)
    else:
        click.echo(f"goal model v{made.version} written ({made.status})")


@goal.command("activate")
@profile_option
@click.argument("version", type=ROW_ID)
def goal_activate(profile: str, version: int) -> None:
    """Make VERSION the active goal model (the previous one is retired)."""
    with _profile_store(profile) as store:
        made = store.activate_goal_model(profile, version, now=_now())
    click.echo(f"goal model v{made.version} active: {inert(made.title, keep_newlines=False)}")


# -- board and plan --------------------------------------------------------------------------------


@operator.command()
@profile_option
@json_option
def board(*, profile: str, as_json: bool) -> None:
    """Show the board, highest priority first, with its hash."""
    with _profile_store(profile) as store:
        tasks, digest = store.list_tasks(profile), store.board_hash(profile)
    if as_json:
        _emit_json({"hash": digest, "tasks": tasks})
        return
    rows = [(t.id, t.priority, t.status, t.title, t.notes) for t in tasks]
    _table(f"board of {profile} ({digest[:19]})", ["id", "priority", "status", "title", "notes"], rows)


@operator.group()
def task() -> None:
    """Add tasks to the board and change their status."""


@task.command("add")
@profile_option
@click.argument("title")
@click.option("--priority", type=click.IntRange(-1_000_000, 1_000_000), default=0, show_default=True)
@click.option("--notes", default="")
@json_option
def task_add(*, profile: str, title: str, priority: int, notes: str, as_json: bool) -> None:
    """Add a task to the board."""
    from tickloop.operator.service import add_task  # noqa: PLC0415

    with _profile_store(profile) as store:
        made = add_task(store, profile, title, priority=priority, notes=notes, now=_now())
    if as_json:
        _emit_json(made)
    else:
        click.echo(f"task {made.id} added")


def _set_task(profile: str, task_id: int, action: str) -> None:
    from tickloop.operator.service import change_task  # noqa: PLC0415

    with _profile_store(profile) as store:
        made = change_task(store, profile, task_id, action, now=_now())
    click.echo(f"task {made.id} is {made.status}")


@task.command("block")
@profile_option
@click.argument("task_id", type=ROW_ID)
def task_block(profile: str, task_id: int) -> None:
    """Mark a task blocked (its plan steps become blocked, never done)."""
    _set_task(profile, task_id, "block")


@task.command("done")
@profile_option
@click.argument("task_id", type=ROW_ID)
def task_done(profile: str, task_id: int) -> None:
    """Mark a task done."""
    _set_task(profile, task_id, "done")


@task.command("unblock")
@profile_option
@click.argument("task_id", type=ROW_ID)
def task_unblock(profile: str, task_id: int) -> None:
    """Put a blocked task back to todo (refused unless it is blocked)."""
    _set_task(profile, task_id, "unblock")


@operator.command()
@profile_option
@json_option
def plan(*, profile: str, as_json: bool) -> None:
    """Show the active goal model's plan; the first pending step is the current one."""
    from tickloop.operator.service import current_plan  # noqa: PLC0415

    with _profile_store(profile) as store:
        active, steps = current_plan(store, profile)
    if as_json:
        _emit_json({"goal": active, "steps": steps})
        return
    title = f"plan of {profile}: " + (
        f"v{active.version} {active.title}" if active else "no active goal model"
    )
    _table(
        title,
        ["id", "pos", "status", "step", "task"],
        [(s.id, s.position, s.status, s.title, s.task_id) for s in steps],
    )


# -- intents ---------------------------------------------------------------------------------------


def _decide(
    *, profile: str, intent_id: int, kind: DecisionKind, note: str, by: str | None, as_json: bool
) -> None:
    with _profile_store(profile) as store:
        made = store.decide(profile, intent_id, kind, by=by or _person(), note=note, now=_now())
    if as_json:
        _emit_json(made)
    else:
        click.echo(f"intent {intent_id}: {kind.value} recorded as decision {made.id}")


def _person() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "person"


@operator.command()
@profile_option
@click.argument("intent_id", type=ROW_ID)
@click.option("--note", default="", help="Why.")
@click.option("--by", default=None, help="Who decided (default: the login name).")
@json_option
def approve(*, profile: str, intent_id: int, note: str, by: str | None, as_json: bool) -> None:
    """Approve an intent that requires approval (a blocked one never can be)."""
    _decide(
        profile=profile, intent_id=intent_id, kind=DecisionKind.APPROVE, note=note, by=by, as_json=as_json
    )


@operator.command()
@profile_option
@click.argument("intent_id", type=ROW_ID)
@click.option("--note", default="", help="Why.")
@click.option("--by", default=None, help="Who decided (default: the login name).")
@json_option
def deny(*, profile: str, intent_id: int, note: str, by: str | None, as_json: bool) -> None:
    """Deny an intent that requires approval."""
    _decide(profile=profile, intent_id=intent_id, kind=DecisionKind.DENY, note=note, by=by, as_json=as_json)


@operator.command()
@profile_option
@click.option("--last", type=click.IntRange(1, 10_000), default=20, show_default=True)
@json_option
def progress(*, profile: str, last: int, as_json: bool) -> None:
    """Show the newest progress rows, one per tick."""
    with _profile_store(profile) as store:
        rows = store.recent_progress(profile, limit=last)
    if as_json:
        _emit_json(rows)
        return
    table = [(r.id, r.tick_kind, r.outcome, r.started_at, r.ended_at, r.intent_id, r.error) for r in rows]
    _table(f"progress of {profile}", ["id", "tick", "outcome", "started", "ended", "intent", "error"], table)
