"""``tickloop experiment report``: a summary table per cell, PNG plots, and one shareable HTML file.

A pure function of the run directories: it reads the same redacted rows as ``export`` (text never
enters a report) and aggregates them in one pass. Plots use matplotlib's Agg backend (extra
``research``), imported only here.
"""

from __future__ import annotations

import base64
import html
import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tickloop.errors import ConfigError
from tickloop.experiment.dataset import rows
from tickloop.experiment.export import experiment_name
from tickloop.experiment.redaction import Redactor
from tickloop.experiment.spec import FACTORS

PLOTS = ("response_length.png", "tokens.png", "outcomes.png", "latency.png")


@dataclass(slots=True)
class CellStats:
    """Aggregates of one cell (model/policy)."""

    sessions: int = 0
    complete: int = 0
    steps_completed: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    chars_by_step: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    tokens_by_step: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    latency: list[float] = field(default_factory=list)

    @property
    def completion_rate(self) -> float:
        return self.complete / self.sessions if self.sessions else 0.0


#: what ``report --by`` groups on: the cell, or any one factor (its column in the tables)
BY: dict[str, str] = {"cell": "cell", **{f: "policy_id" if f == "policy" else f for f in FACTORS}}


def summarise(directories: Sequence[Path], *, by: str = "cell") -> tuple[str, dict[str, CellStats]]:
    """The experiment's name and the aggregates of each cell, or of each level of the factor ``by``."""
    if by not in BY:
        raise ConfigError(f"--by {by!r}: expected one of {', '.join(BY)}")
    name = experiment_name(directories[0])
    cells: dict[str, CellStats] = defaultdict(CellStats)
    for session, steps in rows(directories, name, Redactor()):
        level = session[BY[by]]
        cell = cells["-" if level is None else str(level)]
        cell.sessions += 1
        cell.complete += session["status"] == "complete"
        cell.steps_completed.append(int(session["steps_completed"]))
        if session["input_tokens"] is not None and session["output_tokens"] is not None:
            cell.tokens.append(int(session["input_tokens"]) + int(session["output_tokens"]))
        cell.outcomes[str(session["end_rule"] or session["status"])] += 1
        for step in steps:
            cell.chars_by_step[int(step["step"])].append(int(step["text_length"]))
            out = step["output_tokens"]
            if out is not None:
                cell.tokens_by_step[int(step["step"])].append(int(out))
            if step["latency_ms"] is not None:
                cell.latency.append(float(step["latency_ms"]))
    return name, dict(sorted(cells.items()))


def table(cells: dict[str, CellStats], *, by: str = "cell") -> list[list[str]]:
    """Header and rows of the summary table (the first column names the groups: ``by``)."""
    out = [[by, "sessions", "completion", "steps completed", "mean tokens", "mean chars by step"]]
    for name, c in cells.items():
        by_step = " ".join(
            f"{step}:{statistics.fmean(v):.0f}" for step, v in sorted(c.chars_by_step.items()) if v
        )
        out.append(
            [
                name,
                str(c.sessions),
                f"{c.completion_rate:.2f}",
                f"{statistics.fmean(c.steps_completed):.2f}" if c.steps_completed else "-",
                f"{statistics.fmean(c.tokens):.0f}" if c.tokens else "-",
                by_step or "-",
            ]
        )
    return out


def plots(cells: dict[str, CellStats], out: Path) -> list[Path]:
    """Write the four PNG plots into ``out``; return their paths."""
    import matplotlib  # noqa: PLC0415  (extra `research`, only on this path)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for filename, title, ylabel, attribute in (
        (PLOTS[0], "Response length by step", "characters", "chars_by_step"),
        (PLOTS[1], "Output tokens by step", "tokens", "tokens_by_step"),
    ):
        fig, ax = plt.subplots(figsize=(7, 4))
        for name, cell in cells.items():
            data: dict[int, list[int]] = getattr(cell, attribute)
            xs = sorted(s for s in data if data[s])
            means = [statistics.fmean(data[s]) for s in xs]
            spread = [statistics.pstdev(data[s]) for s in xs]
            ax.errorbar(xs, means, yerr=spread, marker="o", capsize=3, label=name)
        ax.set(title=title, xlabel="time step", ylabel=ylabel)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if cells:
            ax.legend(fontsize="small")
        written.append(_save(fig, out / filename, plt))
    fig, ax = plt.subplots(figsize=(7, 4))
    outcomes = sorted({o for c in cells.values() for o in c.outcomes})
    bottom = [0] * len(cells)
    for outcome in outcomes:
        heights = [c.outcomes.get(outcome, 0) for c in cells.values()]
        ax.bar(list(cells), heights, bottom=bottom, label=outcome)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set(title="How sessions ended", ylabel="sessions")
    if outcomes:
        ax.legend(fontsize="small")
    ax.tick_params(axis="x", labelrotation=20)
    written.append(_save(fig, out / PLOTS[2], plt))
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.boxplot([c.latency or [0.0] for c in cells.values()], tick_labels=list(cells))
    ax.set(title="Step latency", ylabel="ms")
    ax.tick_params(axis="x", labelrotation=20)
    written.append(_save(fig, out / PLOTS[3], plt))
    return written


def _save(fig: object, path: Path, plt: object) -> Path:
    fig.tight_layout()  # type: ignore[attr-defined]
    fig.savefig(path, dpi=100)  # type: ignore[attr-defined]
    plt.close(fig)  # type: ignore[attr-defined]
    return path


def html_report(name: str, rows_: list[list[str]], images: Sequence[Path]) -> str:
    """One self-contained HTML file: the table and the plots inlined as data URLs."""
    head, *body = rows_
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r) + "</tr>" for r in body)
    imgs = "".join(
        f'<figure><img alt="{html.escape(p.stem)}" src="data:image/png;base64,'
        f'{base64.b64encode(p.read_bytes()).decode()}"></figure>'
        for p in images
    )
    return (
        "<!doctype html><html lang=en><meta charset=utf-8>"
        f"<title>{html.escape(name)}: tickloop experiment</title>"
        "<style>body{font:15px system-ui,sans-serif;margin:2rem;max-width:60rem}"
        "table{border-collapse:collapse}td,th{border:1px solid #999;padding:.3rem .6rem;text-align:left}"
        "img{max-width:100%}</style>"
        f"<h1>{html.escape(name)}</h1><table><tr>{cells}</tr>{trs}</table>{imgs}</html>\n"
    )
