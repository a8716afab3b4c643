"""``tickloop experiment run|export|report|k8s``: thin commands over ``tickloop.experiment``."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from tickloop.inert import inert

_DIR = click.Path(path_type=Path, file_okay=False)
#: ``experiment run`` finished, but some sessions were refused or crashed (docs/exit-codes.md).
EXIT_SESSIONS_FAILED = 3


@click.group()
def experiment() -> None:
    """Run the Tick Protocol over many sessions x policies x models; export and plot the result."""


@experiment.command()
@click.argument("spec_path", metavar="SPEC.toml", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--out", type=_DIR, help="Run directory (default: ./experiments/<name>).")
@click.option("--concurrency", type=click.IntRange(1, 4096), default=8, show_default=True)
@click.option("--per-endpoint", type=click.IntRange(1, 4096), help="Concurrent requests per model endpoint.")
@click.option("--shard", default="1/1", show_default=True, help="Run the K-th of N deterministic shares.")
@click.option(
    "--processes",
    type=click.IntRange(1, 256),
    default=1,
    show_default=True,
    help="Shard processes on this machine into the same run directory, each with its own event loop "
    "and --concurrency sessions.",
)
@click.option("--summary-json", is_flag=True, hidden=True, help="No bar; the summary as one JSON line.")
def run(
    spec_path: Path,
    out: Path | None,
    *,
    concurrency: int,
    per_endpoint: int | None,
    shard: str,
    processes: int,
    summary_json: bool,
) -> None:
    """Run every session of SPEC.toml (complete ones are skipped when run again).

    Exit 2 if what the sessions need (models, keys, endpoints, the workspace) is missing: nothing
    runs. Exit 3 if the run finished but sessions were refused or crashed."""
    from tickloop.config import load_settings  # noqa: PLC0415
    from tickloop.experiment.runner import Runner  # noqa: PLC0415
    from tickloop.experiment.spec import Shard, load_spec  # noqa: PLC0415

    settings = load_settings()
    spec = load_spec(spec_path, configured=dict(settings.tick.policies))
    target = out if out is not None else Path("experiments") / spec.name
    if processes > 1:
        options = [
            "--concurrency",
            str(concurrency),
            *(["--per-endpoint", str(per_endpoint)] if per_endpoint else []),
        ]
        _processes(spec, spec_path, target, processes=processes, shard=Shard.parse(shard), options=options,
                   settings=settings)  # fmt: skip
        return
    bar = None if summary_json else _Bar()
    runner = Runner(
        spec,
        target,
        settings=settings,
        env=os.environ,
        concurrency=concurrency,
        per_endpoint=per_endpoint,
        shard=Shard.parse(shard),
        progress=bar,
    )
    with bar or contextlib.nullcontext():
        summary = asyncio.run(runner.run())
    if summary_json:
        click.echo(json.dumps(dataclasses.asdict(summary)))
        return
    _said(spec.name, summary, target)


def _processes(
    spec: Any, spec_path: Path, target: Path, *, processes: int, shard: Any, options: list[str], settings: Any
) -> None:
    from tickloop.experiment.processes import run_processes  # noqa: PLC0415

    click.echo(f"{spec.name}: {processes} processes -> {target}", err=True)
    summary, code = run_processes(
        spec, spec_path, target, processes=processes, shard=shard, options=options, settings=settings
    )
    _said(spec.name, summary, target, code=code)


def _said(name: str, summary: Any, target: Path, *, code: int = 0) -> None:
    """The run's summary line; exit ``code`` (a child process's), else 3 if sessions failed."""
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(summary.statuses.items())) or "none"
    click.echo(
        f"{name}: ran {summary.ran} sessions ({statuses}); skipped {summary.skipped} complete; "
        f"{summary.abandoned} abandoned attempts re-run as new sessions -> {target}"
    )
    if code:
        raise SystemExit(code)
    if summary.failed:
        click.echo(
            f"{name}: {summary.failed} sessions were refused or crashed (exit {EXIT_SESSIONS_FAILED}); "
            "`tickloop experiment export` shows each one's cause",
            err=True,
        )
        sys.exit(EXIT_SESSIONS_FAILED)


class _Bar:
    """A rich progress bar of sessions and steps with a live error count (stderr). It draws from
    ``planned`` on: a run stopped by its preflight shows no empty bar."""

    def __enter__(self) -> _Bar:
        self._progress: Any = None
        self._errors = 0
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(None, None, None)

    def planned(self, cells: Mapping[str, int], skipped: int, steps_each: int) -> None:
        from rich.console import Console  # noqa: PLC0415
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn  # noqa: PLC0415

        from tickloop.experiment.runner import FAILED  # noqa: PLC0415

        self._failing = FAILED
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[note]}"),
            console=Console(stderr=True),  # stdout keeps only the summary line, for scripts
        )
        self._progress.__enter__()
        self._left = dict(cells)
        sessions = sum(cells.values())
        self._cells = self._progress.add_task("cells", total=len(cells), note="")
        self._sessions = self._progress.add_task(
            "sessions", total=sessions, note=f"({skipped} already complete)"
        )
        self._steps = self._progress.add_task("steps", total=sessions * steps_each, note="errors 0")

    def step_done(self, *, error: bool) -> None:
        self._errors += error
        self._progress.update(self._steps, advance=1, note=f"errors {self._errors}")

    def session_done(self, cell: str, status: str) -> None:
        # A refused or crashed session is an error however many of its steps ran (usually none: the
        # steps bar then ends short of its total, showing the steps that never ran).
        failed = status in self._failing
        self._errors += failed
        self._progress.update(self._sessions, advance=1)
        if failed:
            self._progress.update(self._steps, note=f"errors {self._errors}")
        self._left[cell] -= 1
        if self._left[cell] == 0:
            self._progress.update(self._cells, advance=1)


@experiment.command("export")
@click.argument("dirs", nargs=-1, required=True, type=_DIR)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["parquet", "jsonl", "csv", "inspect"]),
    default="parquet",
    show_default=True,
    help="inspect: one Inspect AI eval log (.eval) per cell (extra `inspect`).",
)
@click.option("--out", type=_DIR, help="Where to write (default: DIR/export).")
@click.option("--no-redact", is_flag=True, help="Export raw text and details. Never publish such an export.")
@click.option(
    "--keep-text", is_flag=True, help="Keep reply text (scrubbed) instead of its sha256 and length."
)
def export_command(
    dirs: tuple[Path, ...], fmt: Any, out: Path | None, *, no_redact: bool, keep_text: bool
) -> None:
    """Export run directories (shards of one run merge) as one dataset, redacted by default."""
    from tickloop.experiment.export import export  # noqa: PLC0415

    target = out if out is not None else dirs[0] / "export"
    if fmt == "inspect":
        from tickloop.experiment.inspect_log import export_inspect  # noqa: PLC0415

        logs = export_inspect(list(dirs), target, redact=not no_redact, keep_text=keep_text)
        click.echo(f"{logs['sessions']} sessions, {logs['logs']} Inspect logs -> {target} (see REDACTION.md)")
        return
    counts = export(list(dirs), target, fmt, redact=not no_redact, keep_text=keep_text)
    click.echo(
        f"{counts['sessions']} sessions, {counts['steps']} steps, {counts['runs']} models -> {target} "
        "(see REDACTION.md)"
    )


@experiment.command()
@click.argument("dirs", nargs=-1, required=True, type=_DIR)
@click.option(
    "--html", "html_path", type=click.Path(path_type=Path, dir_okay=False), help="Write one HTML file."
)
@click.option("--plots", "plots_dir", type=_DIR, help="Where the PNG plots go (default: DIR/plots).")
@click.option(
    "--by",
    type=click.Choice(["cell", "model", "policy", "opening", "tools", "temperature"]),
    default="cell",
    show_default=True,
    help="Group the table and the plots by one factor instead of by cell.",
)
def report(dirs: tuple[Path, ...], html_path: Path | None, plots_dir: Path | None, by: str) -> None:
    """Print the summary table per cell and write PNG plots (and, with --html, one shareable file)."""
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    from tickloop.experiment.report import html_report, plots, summarise, table  # noqa: PLC0415

    name, cells = summarise(list(dirs), by=by)
    head, *body = table(cells, by=by)
    shown = Table(*(inert(h) for h in head), title=inert(name))
    for row in body:
        shown.add_row(*(inert(v, keep_newlines=False) for v in row))
    Console().print(shown)
    images = plots(cells, plots_dir if plots_dir is not None else dirs[0] / "plots")
    for image in images:
        click.echo(f"plot {image}")
    if html_path is not None:
        html_path.write_text(html_report(name, [head, *body], images), encoding="utf-8")
        click.echo(f"report {html_path}")


@experiment.command()
@click.argument("spec_path", metavar="SPEC.toml", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--image", required=True, help="Container image with tickloop installed.")
@click.option("--shards", type=click.IntRange(1, 10_000), required=True)
@click.option(
    "--claim", default="tickloop-experiments", show_default=True, help="PersistentVolumeClaim name."
)
@click.option("--secret", help="Secret holding each endpoint's apiKeyEnv variable (one key per variable).")
def k8s(spec_path: Path, image: str, shards: int, claim: str, secret: str | None) -> None:
    """Print a ConfigMap and an Indexed Job that run SPEC.toml in SHARDS pods (kubectl apply -f -).

    The ConfigMap is not secret: it holds the spec, the opening and policies verbatim, and the
    endpoints' URLs and model ids. Keys reach the pods only from --secret."""
    from tickloop.config import load_settings  # noqa: PLC0415
    from tickloop.experiment.k8s import indexed_job  # noqa: PLC0415
    from tickloop.experiment.spec import load_spec  # noqa: PLC0415

    settings = load_settings()
    spec = load_spec(spec_path, configured=dict(settings.tick.policies))
    manifest = indexed_job(spec, settings, image=image, shards=shards, claim=claim, secret=secret)
    click.echo(manifest, nl=False)
