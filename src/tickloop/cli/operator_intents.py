"""``tickloop operator intents ...``: list, stage by hand, retry and reconcile intents.

Imported only when invoked. A dry-run outcome is marked as one in the table, the same as on the
dashboard and in the MCP resources: ``approved (dry-run: would be sent)``.
"""

from __future__ import annotations

import click

from tickloop.cli.operator import (
    ROW_ID,
    _emit_json,
    _now,
    _person,
    _profile_store,
    _table,
    json_option,
    profile_option,
)
from tickloop.inert import inert
from tickloop.operator.domain import DecisionKind, Intent, IntentStatus

#: The registered handler types, in the ladder's order (``tickloop.operator.handlers.registry``;
#: a test keeps the two equal, so `--help` does not import every handler).
ACTION_TYPES = ("note", "wiki_write", "draft_prep", "research", "workspace_task", "email", "message", "spend")
#: How the person reconciles a needs_human intent on the command line.
RECONCILE_KINDS = {"done-by-hand": DecisionKind.DONE_BY_HAND, "did-not-happen": DecisionKind.DID_NOT_HAPPEN}


def status_cell(intent: Intent) -> str:
    """The status, with a dry-run outcome marked as one (a dry pass's preview, or a legacy dry ending)."""
    result = intent.result or {}
    preview = result.get("preview")
    if result.get("dry_run") is True and isinstance(preview, dict):
        return f"{intent.status} (dry-run: would be {preview.get('would', '?')})"
    if intent.dry_run and intent.status in (IntentStatus.SENT, IntentStatus.COMPLETED):
        return f"{intent.status} (dry-run)"
    return str(intent.status)


@click.group(invoke_without_command=True)
@profile_option
@click.option("--status", type=click.Choice([s.value for s in IntentStatus]), help="Only this status.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True)
@json_option
@click.pass_context
def intents(ctx: click.Context, *, profile: str, status: str | None, limit: int, as_json: bool) -> None:
    """List intents, newest first (or stage one by hand with `intents add`)."""
    if ctx.invoked_subcommand is not None:
        return
    with _profile_store(profile) as store:
        found = store.list_intents(
            profile, status=None if status is None else IntentStatus(status), limit=limit
        )
    if as_json:
        _emit_json(found)
        return
    rows = [
        (i.id, status_cell(i), i.tier, i.action_type, i.title, i.recipient, i.origin.tick_kind, i.decision_id)
        for i in found
    ]
    columns = ["id", "status", "tier", "type", "title", "recipient", "origin", "decision"]
    _table(f"intents of {profile}", columns, rows)


@intents.command("add")
@profile_option
@click.option("--type", "action_type", required=True, help=f"Action type: one of {', '.join(ACTION_TYPES)}.")
@click.option("--title", required=True)
@click.option("--recipient", default="")
@click.option("--payload", default="{}", help="JSON object.")
@json_option
def intents_add(
    *, profile: str, action_type: str, title: str, recipient: str, payload: str, as_json: bool
) -> None:
    """Stage an action by hand. The gate stamps it at once: ready, waiting for your approval, or blocked."""
    from tickloop.operator import staging  # noqa: PLC0415
    from tickloop.operator.service import parse_payload, stage_draft  # noqa: PLC0415

    draft = staging.Draft(
        action_type=action_type,
        title=title,
        recipient=recipient,
        payload=parse_payload(payload, where="--payload"),
        origin=staging.ORIGIN_CLI,
    )
    with _profile_store(profile) as store:
        made, stamp = stage_draft(store, profile, draft, now=_now())
    if as_json:
        _emit_json(made)
    else:
        reasons = inert("; ".join(stamp.reasons), keep_newlines=False)
        click.echo(f"intent {made.id} staged: {made.status} ({reasons})")


@intents.command("retry")
@profile_option
@click.argument("intent_id", type=ROW_ID)
@click.option("--note", required=True, help="What changed since it failed (the setting you fixed).")
@click.option("--by", default=None, help="Who decided (default: the login name).")
@json_option
def intents_retry(*, profile: str, intent_id: int, note: str, by: str | None, as_json: bool) -> None:
    """Hand a failed or needs_human intent back to the executor (recorded as a decision).

    The retry is kernel-sanctioned: the drift guard does not block it as a repeat."""
    _reconcile(profile, intent_id, DecisionKind.RETRY, note=note, by=by, as_json=as_json)


@intents.command("reconcile")
@profile_option
@click.argument("intent_id", type=ROW_ID)
@click.argument("what", type=click.Choice(sorted(RECONCILE_KINDS)))
@click.option("--note", default="", help="What you found.")
@click.option("--by", default=None, help="Who decided (default: the login name).")
@json_option
def intents_reconcile(
    *, profile: str, intent_id: int, what: str, note: str, by: str | None, as_json: bool
) -> None:
    """Say what became of a needs_human intent: done-by-hand (completed) or did-not-happen (failed)."""
    _reconcile(profile, intent_id, RECONCILE_KINDS[what], note=note, by=by, as_json=as_json)


def _reconcile(
    profile: str, intent_id: int, kind: DecisionKind, *, note: str, by: str | None, as_json: bool
) -> None:
    from tickloop.operator.service import reconcile_intent  # noqa: PLC0415

    with _profile_store(profile) as store:
        made, intent = reconcile_intent(
            store, profile, intent_id, kind, by=by or _person(), note=note, now=_now()
        )
    if as_json:
        _emit_json({"decision": made, "intent": intent})
    else:
        click.echo(f"intent {intent_id}: {kind.value} recorded as decision {made.id}; now {intent.status}")
