"""``tickloop audit verify|show``: check and read a ledger."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tickloop.audit import read_ledger, verify_file
from tickloop.inert import inert
from tickloop.protocol.ledger import decode


@click.group()
def audit() -> None:
    """Read and verify JSONL audit ledgers."""


@audit.command()
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False))
def verify(path: Path) -> None:
    """Replay a ledger and check the Tick Protocol's invariants.

    Exits 0 with a one-line summary when it holds; exits 1 listing each violation with its line
    number and rule id.
    """
    report, read = verify_file(path)
    torn = f" (torn final line of {len(read.torn_tail)} bytes ignored)" if read.torn_tail else ""
    if report.ok:
        click.echo(f"{path}: {report.summary()}{torn}")
        return
    for violation in report.violations:
        click.echo(f"{path}:{violation.line}: {violation.rule}: {violation.message}")
    click.echo(f"{path}: {report.summary()}{torn}")
    sys.exit(1)


@audit.command()
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False))
def show(path: Path) -> None:
    """Print a ledger as a readable table."""
    from rich.console import Console  # noqa: PLC0415  (heavy; only this command renders)
    from rich.markup import escape  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    def cell(value: object) -> str:
        # A ledger file is input: no escape sequence, control character or rich markup in it acts.
        return escape(inert(str(value), keep_newlines=False))

    read = read_ledger(path)
    table = Table(title=cell(path), show_lines=False)
    for name in ("seq", "time (UTC)", "type", "run", "step", "status / rule", "policy"):
        table.add_column(name, no_wrap=True)
    for lineno, raw in read.lines:
        try:
            rec = decode(raw)
        except Exception as exc:  # noqa: BLE001  (show every line, even a bad one)
            table.add_row(str(lineno), "", "[red]unreadable[/]", "", "", cell(str(exc)[:60]), "")
            continue
        sha = str(rec.get("timeStepSha256", ""))[:8]
        table.add_row(
            cell(rec["seq"]),
            cell(str(rec["recordedAt"]).partition("T")[2].rstrip("Z")),
            cell(rec["type"]),
            cell(str(rec.get("runId", ""))[:12]),
            cell(rec.get("step", "")),
            cell(rec.get("status") or rec.get("rule") or ""),
            cell(f"{rec.get('policyId', '')} {sha}".strip()),
        )
    console = Console()
    if not console.is_terminal:  # rich assumes 80 columns when piped; a ledger row needs more
        console = Console(width=140)
    console.print(table)
    if read.torn_tail:
        console.print(f"[yellow]torn final line ({len(read.torn_tail)} bytes) ignored[/]")
