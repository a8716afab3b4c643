"""``tickloop operator eval``: run the shipped scenario suite against a model and print the table."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from tickloop.inert import inert


@click.command("eval")
@click.option("--model", "model_name", help="The model to evaluate (default: [model] name).")
@click.option(
    "--repeat", type=click.IntRange(1, 1000), default=1, show_default=True, help="Runs per scenario."
)
@click.option("--scenario", "names", multiple=True, help="Only this scenario (repeat for more).")
@click.option("--list", "list_only", is_flag=True, help="List the scenarios and exit.")
@click.option("--json", "as_json", is_flag=True, help="Print the stats and every trial as JSON.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "inspect"]),
    help="table (the default), json (as --json), or inspect: the table, and an Inspect AI log in --out.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("logs"),
    show_default=True,
    help="The directory the Inspect log is written to (--format inspect).",
)
def eval_command(
    *,
    model_name: str | None,
    repeat: int,
    names: tuple[str, ...],
    list_only: bool,
    as_json: bool,
    fmt: str | None,
    out: Path,
) -> None:
    """Is this model good enough to run the operator? Scores it on the scenario suite.

    Each scenario is a goal, a board, a plan, observations (tainted or not), failed actions and
    critiques; its real tick runs against a throwaway store with the executor never run. Prints
    each check's rate with a 95% Wilson interval and the bar the operator needs before you arm the
    executor, then tokens and seconds per tick. With --format inspect, also an Inspect AI eval log
    (one sample per scenario and repeat: the prompt, the answer, each check) for `inspect view`.
    """
    from tickloop.operator.eval.scenarios import load_suite  # noqa: PLC0415

    fmt = _format(as_json=as_json, fmt=fmt)
    scenarios = load_suite(names=list(names))
    if list_only:
        for scenario in scenarios:
            click.echo(f"{scenario.name:<24} {scenario.tick:<12} {scenario.about}")
        return
    _run(scenarios, model_name, repeat, fmt, out)


def _format(*, as_json: bool, fmt: str | None) -> str:
    """The one output format asked for; for inspect, Inspect AI is checked for before anything runs."""
    if as_json and fmt not in (None, "json"):
        raise click.UsageError(f"--json is --format json: give one of --json and --format {fmt}")
    if fmt == "inspect":
        from tickloop.operator.eval.inspect_log import require_inspect  # noqa: PLC0415

        require_inspect()
    return "json" if as_json else fmt or "table"


def _run(scenarios: Any, model_name: str | None, repeat: int, fmt: str, out: Path) -> None:
    from tickloop.config import load_settings  # noqa: PLC0415
    from tickloop.models.registry import get_model  # noqa: PLC0415
    from tickloop.operator.eval import run_suite  # noqa: PLC0415

    settings = load_settings()
    name = model_name or settings.model.name
    model = _with_offline_answers(get_model(name, settings, os.environ))
    label = inert(model.label, keep_newlines=False)
    quiet = fmt == "json"
    if not quiet:
        click.echo(f"evaluating {label}: {len(scenarios)} scenarios x {repeat}", err=True)
    result = run_suite(
        scenarios, model, settings, os.environ, repeat=repeat, progress=None if quiet else _progress
    )
    if quiet:
        json.dump(_plain(result, label), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    _print(result, label, len(scenarios), repeat)
    if fmt == "inspect":
        _write_inspect(result, scenarios, name, repeat, out)


def _write_inspect(result: Any, scenarios: Any, name: str, repeat: int, out: Path) -> None:
    from tickloop.operator.eval.inspect_log import write_inspect  # noqa: PLC0415

    path = write_inspect(result, scenarios, name, repeat=repeat, out=out)
    click.echo(
        inert(f"\nInspect log: {path}\nSee every answer: inspect view --log-dir {out}", keep_newlines=True)
    )


def _with_offline_answers(model: Any) -> Any:
    """The built-in offline model answers the operator's schemas as it does for a tick."""
    from tickloop.models.offline import OfflineModel  # noqa: PLC0415

    if isinstance(model, OfflineModel) and model.json_reply is None:
        from tickloop.operator.offline import answer  # noqa: PLC0415

        model.json_reply = answer
    return model


def _progress(scenario: Any, trial: Any, verdict: dict[str, bool | None]) -> None:
    failed = [name for name, ok in verdict.items() if ok is False]
    said = "ok" if not failed else "failed: " + ", ".join(failed)
    why = f": {trial.error[:200]}" if trial.outcome == "failed" else ""
    line = f"  {scenario.name} #{trial.repeat}: {trial.outcome} ({said}){why}"
    click.echo(inert(line, keep_newlines=False), err=True)


def _print(result: Any, label: str, scenarios: int, repeat: int) -> None:
    from tickloop.operator.eval.report import table_lines, tick_lines  # noqa: PLC0415

    click.echo(f"{label}: {len(result.trials)} ticks ({scenarios} scenarios x {repeat})")
    for line in [*table_lines(result.stats), "", *tick_lines(result.per_tick)]:
        click.echo(line)
    below = [s.check for s in result.stats if s.meets_bar is False]
    verdict = "meets the bar on every check" if not below else f"below the bar on: {', '.join(below)}"
    click.echo(
        f"\n{verdict}.\nArm the executor only for a model that meets the bar (docs/models.md: operator eval)."
    )


def _plain(result: Any, label: str) -> dict[str, Any]:
    import msgspec  # noqa: PLC0415

    stats = [{**msgspec.to_builtins(s), "rate": s.rate, "meetsBar": s.meets_bar} for s in result.stats]
    return {
        "model": label,
        "checks": stats,
        "perTick": msgspec.to_builtins(result.per_tick),
        "trials": [
            {**msgspec.to_builtins(t), "checks": v}
            for t, v in zip(result.trials, result.verdicts, strict=True)
        ],
    }
