"""``experiment run --processes N``: N shard processes on one machine, each with its own event loop.

One event loop uses one core. To use a machine's cores, the parent splits its share of the grid
(all of it, or its ``--shard K/N``) into N sub-shards and runs each in a child ``tickloop experiment
run`` process writing into the SAME run directory: every session has its own transcript and ledger,
and manifest records are single ``O_APPEND`` lines, so the children never write the same bytes. The
directory is then what one process would have written (``export`` and ``report`` read it as is),
and it resumes with any process count, since a session's key decides whether it still runs.

Sub-shard ``j`` of ``K/N`` split ``P`` ways is ``(K + j*N)/(N*P)``: a key's hash modulo ``N*P`` is
``K - 1 + j*N`` exactly when it is ``K - 1`` modulo ``N`` for one ``j``, so the sub-shards are disjoint
and their union is ``K/N``'s share.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tickloop.config import Settings
from tickloop.errors import ConfigError
from tickloop.experiment.runner import RunSummary, prepare_run
from tickloop.experiment.spec import Shard, Spec


def sub_shards(shard: Shard, processes: int) -> list[Shard]:
    """The ``processes`` disjoint parts of ``shard``'s share, whose union is that share."""
    if not 1 <= processes <= 256:
        raise ConfigError(f"--processes {processes}: expected 1..256")
    if shard.count * processes > 10_000:
        raise ConfigError(
            f"--shard {shard.index}/{shard.count} with --processes {processes}: more than 10000 shares"
        )
    return [Shard(shard.index + j * shard.count, shard.count * processes) for j in range(processes)]


def child_command(spec_path: Path, out: Path, shard: Shard, options: Sequence[str]) -> list[str]:
    """The argv of one child: this same tickloop, printing its summary as JSON instead of a bar."""
    return [sys.executable, "-m", "tickloop", "experiment", "run", str(spec_path), "--out", str(out),
            "--shard", f"{shard.index}/{shard.count}", "--summary-json", *options]  # fmt: skip


def run_processes(
    spec: Spec,
    spec_path: Path,
    out: Path,
    *,
    processes: int,
    shard: Shard,
    settings: Settings,
    options: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> tuple[RunSummary, int]:
    """Run the children to the end; their summaries summed, and the first non-zero exit code (0).

    The parent prepares the run once, before any child starts: the preflight (a missing key, a dead
    endpoint, a missing workspace root stop it with nothing started, said once rather than by each
    child), then ``spec.toml``, ``run.json`` and ``run.key``, which no child races to write."""
    asyncio.run(prepare_run(spec, out, settings, os.environ if env is None else env))
    children = [
        subprocess.Popen(child_command(spec_path, out, part, options), stdout=subprocess.PIPE, env=env)  # noqa: S603
        for part in sub_shards(shard, processes)
    ]
    previous = signal.signal(signal.SIGTERM, lambda *_: _terminate(children))
    try:
        outputs = [child.communicate()[0] for child in children]
    finally:
        signal.signal(signal.SIGTERM, previous)
        _terminate(children)
    # a child ended by a signal reports -N; a shell would say 128 + N
    codes = [128 - c if c < 0 else c for c in (child.returncode for child in children)]
    return _merge([_summary(o) for o in outputs]), next((c for c in codes if c != 0), 0)


def _terminate(children: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM each child still running (each ends its sessions as a killed run does), then reap."""
    for child in children:
        if child.poll() is None:
            child.terminate()
    for child in children:
        child.wait()


def _summary(output: bytes) -> dict[str, Any]:
    lines = output.decode("utf-8", "replace").strip().splitlines()
    try:
        return dict(json.loads(lines[-1])) if lines else {}
    except ValueError:
        return {}


def _merge(summaries: list[dict[str, Any]]) -> RunSummary:
    statuses: dict[str, int] = {}
    for part in summaries:
        for status, count in part.get("statuses", {}).items():
            statuses[status] = statuses.get(status, 0) + int(count)
    return RunSummary(
        ran=sum(int(p.get("ran", 0)) for p in summaries),
        skipped=sum(int(p.get("skipped", 0)) for p in summaries),
        abandoned=sum(int(p.get("abandoned", 0)) for p in summaries),
        statuses=statuses,
    )
