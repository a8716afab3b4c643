"""``tickloop audit verify|replay|seal|show``: check, cross-check, seal and read a ledger."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import click

from tickloop.audit import DEFAULT_MAX_RECORD_BYTES, audit_key, read_ledger, seal_file, verify_file
from tickloop.errors import LedgerError
from tickloop.inert import inert
from tickloop.protocol.ledger import MAX_REPORTED, Oversized, Seal, decode
from tickloop.protocol.report import VerifyReport

_ledger_path = click.argument("path", type=click.Path(path_type=Path))
_ledger_paths = click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
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
_require_chain = click.option(
    "--require-chain", is_flag=True, help="Every record must be in the hash chain (else verify.unchained)."
)
_require_key = click.option(
    "--require-key",
    is_flag=True,
    help="Every record must carry a mac checked against --key-env (else verify.unkeyed).",
)


@click.group()
def audit() -> None:
    """Read, verify, replay and seal JSONL audit ledgers."""


def ledger_files(paths: tuple[Path, ...]) -> list[Path]:
    """The files named, a directory standing for every ``*.jsonl`` file directly inside it (sorted)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.glob("*.jsonl") if p.is_file())
            if not found:
                raise LedgerError(f"{path}: no *.jsonl ledger in this directory")
            files += found
        else:
            files.append(path)
    return files


@dataclass(slots=True)
class _Tally:
    """Across the files of one command: how many held, how many did not, how many could not be read."""

    files: int = 0
    failed: int = 0
    unreadable: int = 0
    records: int = 0
    problems: int = 0

    def exit_code(self) -> int:
        return 2 if self.unreadable else (1 if self.failed else 0)

    def line(self, what: str) -> str:
        held = self.files - self.failed - self.unreadable
        unread = f", {self.unreadable} unreadable" if self.unreadable else ""
        return (
            f"total: {self.files} files, {held} ok, {self.failed} with {what}{unread}; "
            f"{self.records} records, {self.problems} {what}"
        )


@audit.command()
@_ledger_paths
@click.option(
    "--strict",
    is_flag=True,
    help="A run still open at the end, a torn last line, or an empty file is a violation.",
)
@_key_env
@_require_chain
@_require_key
@click.option(
    "--sealed", metavar="LINE", help="A line printed by `tickloop audit seal`: the file must match it."
)
@_max_record
def verify(
    paths: tuple[Path, ...],
    *,
    strict: bool,
    key_env: str | None,
    require_chain: bool,
    require_key: bool,
    sealed: str | None,
    max_record_bytes: int,
) -> None:
    """Replay ledgers through the run state machine and check the Tick Protocol's rules.

    PATHS are ledger files or directories of them. Each file gets its violations (the first 100,
    then a count), each with its line number and rule id, then one summary line; several files end
    with a total. Exits 0 when every file holds, 1 when one has a violation, 2 when one cannot be read.
    """
    if require_key and not key_env:
        raise click.UsageError("--require-key needs --key-env NAME (the key to check the macs with)")
    key = audit_key(key_env) if key_env else None
    seal = Seal.parse(sealed) if sealed is not None else None
    files = ledger_files(paths)
    tally = _Tally()
    for path in files:
        tally.files += 1
        name = inert(str(path), keep_newlines=False)
        try:
            report, read = verify_file(
                path,
                max_record_bytes=max_record_bytes,
                key=key,
                seal=seal,
                strict=strict,
                require_chain=require_chain,
                require_key=require_key,
            )
        except LedgerError as exc:
            if len(files) == 1:
                raise
            click.echo(inert(f"{name}: {exc}", keep_newlines=False))
            tally.unreadable += 1
            continue
        _print_verified(name, report, read.torn_size if not strict else 0)
        tally.records += report.records
        tally.problems += report.violation_count
        tally.failed += not report.ok
    if len(files) > 1:
        click.echo(tally.line("violation(s)"))
    sys.exit(tally.exit_code())


def _print_verified(name: str, report: VerifyReport, torn_size: int) -> None:
    for violation in report.violations:
        click.echo(
            inert(f"{name}:{violation.line}: {violation.rule}: {violation.message}", keep_newlines=False)
        )
    hidden = report.violation_count - len(report.violations)
    if hidden:
        click.echo(f"{name}: ... and {hidden} more violation(s) not listed (the first {MAX_REPORTED} are)")
    torn = f" (torn final line of {torn_size} bytes ignored)" if torn_size else ""
    click.echo(inert(f"{name}: {report.summary()}{torn}", keep_newlines=False))


@audit.command()
@_ledger_path
@_max_record
def seal(path: Path, *, max_record_bytes: int) -> None:
    """Print one line (record count and sha256 of those lines) to publish or store elsewhere.

    `tickloop audit verify --sealed LINE` later proves the file has not changed up to that point.
    """
    click.echo(seal_file(path, max_record_bytes=max_record_bytes).line())


@audit.command()
@_ledger_paths
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
@_require_chain
@_require_key
@_max_record
def replay(
    paths: tuple[Path, ...],
    *,
    sessions_dir: Path,
    key_env: str | None,
    require_chain: bool,
    require_key: bool,
    max_record_bytes: int,
) -> None:
    """Read ledgers against their session transcripts: was each scheduling decision right?

    PATHS are ledger files or directories of them. Prints each disagreement on one line
    (file:line: what); for one file, a per-run table and a summary; for several, one summary line per
    file and a total. Exits 0 when every pair agrees, 1 otherwise, 2 when a file cannot be read.
    """
    from tickloop.audit.replay import replay as run_replay  # noqa: PLC0415

    if require_key and not key_env:
        raise click.UsageError("--require-key needs --key-env NAME (the key to check the macs with)")
    key = audit_key(key_env) if key_env else None
    files = ledger_files(paths)
    tally = _Tally()
    for path in files:
        tally.files += 1
        try:
            report = run_replay(
                path,
                sessions_dir,
                max_record_bytes=max_record_bytes,
                key=key,
                require_chain=require_chain,
                require_key=require_key,
            )
        except LedgerError as exc:
            if len(files) == 1:
                raise
            click.echo(inert(f"{path}: {exc}", keep_newlines=False))
            tally.unreadable += 1
            continue
        for item in report.disagreements:
            click.echo(inert(item.render(), keep_newlines=False))
        hidden = report.disagreement_count - len(report.disagreements)
        if hidden:
            click.echo(f"... and {hidden} more disagreement(s) not listed (the first {MAX_REPORTED} are)")
        if len(files) == 1:
            for line in report.table():
                click.echo(inert(line, keep_newlines=False))
            click.echo(inert(report.summary(), keep_newlines=False))
        else:
            click.echo(inert(f"{path}: {report.summary()}", keep_newlines=False))
        tally.records += report.records
        tally.problems += report.disagreement_count
        tally.failed += not report.ok
    if len(files) > 1:
        click.echo(tally.line("disagreement(s)"))
    sys.exit(tally.exit_code())


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
