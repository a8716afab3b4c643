"""``tickloop audit verify|replay|seal|show``: check, cross-check, seal and read a ledger."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tickloop.audit import DEFAULT_MAX_RECORD_BYTES, audit_key, read_ledger, seal_file, verify_file
from tickloop.inert import inert
from tickloop.protocol.ledger import MAX_REPORTED, Oversized, Seal, decode

_ledger_path = click.argument("path", type=click.Path(path_type=Path))
_max_record = click.option(
    "--max-record-bytes",
    type=click.IntRange(min=64),
    default=DEFAULT_MAX_RECORD_BYTES,
    show_default=True,
    help="Largest record read; a longer line is a violation, skipped in bounded memory.",
)
_key_env = click.option(
    "--key-env",
    metavar="NAME",
    help="Environment variable holding the HMAC key ([tick] auditKeyEnv): check every record's mac.",
)


@click.group()
def audit() -> None:
    """Read, verify, replay and seal JSONL audit ledgers."""


@audit.command()
@_ledger_path
@click.option(
    "--strict", is_flag=True, help="A run still open at the end, or a torn last line, is a violation."
)
@_key_env
@click.option(
    "--sealed", metavar="LINE", help="A line printed by `tickloop audit seal`: the file must match it."
)
@_max_record
def verify(
    path: Path, *, strict: bool, key_env: str | None, sealed: str | None, max_record_bytes: int
) -> None:
    """Replay a ledger through the run state machine and check the Tick Protocol's rules.

    Exits 0 with a one-line summary when it holds; exits 1 listing each violation (the first 100,
    then a count) with its line number and rule id.
    """
    key = audit_key(key_env) if key_env else None
    seal = Seal.parse(sealed) if sealed is not None else None
    report, read = verify_file(path, max_record_bytes=max_record_bytes, key=key, seal=seal, strict=strict)
    torn = f" (torn final line of {read.torn_size} bytes ignored)" if read.torn_size and not strict else ""
    name = inert(str(path), keep_newlines=False)
    for violation in report.violations:
        click.echo(
            inert(f"{name}:{violation.line}: {violation.rule}: {violation.message}", keep_newlines=False)
        )
    hidden = report.violation_count - len(report.violations)
    if hidden:
        click.echo(f"{name}: ... and {hidden} more violation(s) not listed (the first {MAX_REPORTED} are)")
    click.echo(f"{name}: {report.summary()}{torn}")
    if not report.ok:
        sys.exit(1)


@audit.command()
@_ledger_path
@_max_record
def seal(path: Path, *, max_record_bytes: int) -> None:
    """Print one line (record count and sha256 of those lines) to publish or store elsewhere.

    `tickloop audit verify --sealed LINE` later proves the file has not changed up to that point.
    """
    click.echo(seal_file(path, max_record_bytes=max_record_bytes).line())


@audit.command()
@_ledger_path
@click.option(
    "--sessions-dir",
    type=click.Path(path_type=Path),
    default=".tickloop-sessions",
    show_default=True,
    envvar="TICKLOOP_SESSIONS_DIR",
    show_envvar=True,
    help="Directory of session transcripts.",
)
@_key_env
@_max_record
def replay(path: Path, *, sessions_dir: Path, key_env: str | None, max_record_bytes: int) -> None:
    """Read a ledger against its session transcript: was each scheduling decision right?

    Prints each disagreement on one line (file:line: what), then a per-run table and a summary.
    Exits 0 when the two files agree, 1 otherwise.
    """
    from tickloop.audit.replay import replay as run_replay  # noqa: PLC0415

    key = audit_key(key_env) if key_env else None
    report = run_replay(path, sessions_dir, max_record_bytes=max_record_bytes, key=key)
    for item in report.disagreements:
        click.echo(inert(item.render(), keep_newlines=False))
    hidden = report.disagreement_count - len(report.disagreements)
    if hidden:
        click.echo(f"... and {hidden} more disagreement(s) not listed (the first {MAX_REPORTED} are)")
    for line in report.table():
        click.echo(inert(line, keep_newlines=False))
    click.echo(report.summary())
    if not report.ok:
        sys.exit(1)


@audit.command()
@_ledger_path
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
            if isinstance(raw, Oversized):
                raise ValueError(f"{raw.size} bytes: over the record cap")  # noqa: TRY301, TRY004
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
    if read.torn_size:
        console.print(f"[yellow]torn final line ({read.torn_size} bytes) ignored[/]")


def _cell(value: object) -> str:
    """A ledger value as inert table text (no escape sequences, no rich markup)."""
    from rich.markup import escape  # noqa: PLC0415

    return escape(inert(str(value), keep_newlines=False))
