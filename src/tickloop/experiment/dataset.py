"""The dataset of a run directory (or of several shard directories): pure functions of the files.

Two tables, described in ``schema`` (the README prints them): one row per turn of a time step (step
0 is the opening turn) and one row per session. Only the last ``finished`` attempt of each session
key counts; an abandoned attempt is never a row. A key found in several directories (the same
directory given twice, overlapping shards) is one row; two attempts of one key that disagree are
refused.

Redaction is on by default (``redaction``), for what raw traces must not publish: paths,
timestamps, provider data and workspace details. Wall-clock times are never read into a row (only
offsets from the session's start, measured on a monotonic clock); base URLs, request ids, system
fingerprints and response headers are never read at all.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tickloop.audit import read_ledger, session_file_name
from tickloop.errors import ConfigError, LedgerError
from tickloop.experiment.manifest import MANIFEST, Manifest
from tickloop.experiment.provenance import read_run_record
from tickloop.experiment.redaction import Redactor
from tickloop.experiment.runner import LEDGERS, SESSIONS
from tickloop.protocol.ledger import loads_bounded


@dataclass(frozen=True, slots=True)
class Finished:
    """One session's last finished attempt, as the manifest recorded it."""

    directory: Path
    record: dict[str, Any]
    started: dict[str, Any]


def _fingerprint(rec: dict[str, Any]) -> tuple[Any, ...]:
    """What tells two finished attempts of one key apart (a copy of a directory agrees on all of it;
    two runs never do: each attempt has its own session id or its own timings)."""
    steps = rec.get("steps") or []
    return (rec.get("sessionId"), rec.get("status"), rec.get("endRule"), rec.get("wallMs"), len(steps),
            tuple(s.get("latencyMs") for s in steps))  # fmt: skip


def _unique_dirs(directories: Iterable[Path]) -> list[Path]:
    seen: dict[Path, Path] = {}
    for d in directories:
        seen.setdefault(d.resolve(), d)
    return list(seen.values())


def _spec_digest(directory: Path, digest: str | None) -> str:
    if not (directory / MANIFEST).is_file():
        raise ConfigError(f"{directory}: no {MANIFEST}: not an experiment run directory")
    held = (directory / "spec.sha256").read_text(encoding="utf-8").strip()
    if digest is not None and held != digest:
        raise ConfigError(f"{directory}: a run of another spec ({held}, expected {digest}); cannot merge")
    return held


def _last_finished(directory: Path) -> dict[str, Finished]:
    starts: dict[str, dict[str, Any]] = {}
    last: dict[str, Finished] = {}
    for rec in Manifest(directory / MANIFEST).read():
        if rec.get("event") == "started":
            starts[str(rec["sessionId"])] = rec
        elif rec.get("event") == "finished":
            last[str(rec["key"])] = Finished(directory, rec, starts.get(str(rec["sessionId"]), {}))
    return last


def finished_sessions(directories: Iterable[Path]) -> Iterator[Finished]:
    """The last finished attempt of every key, once, across run directories of ONE spec."""
    dirs = _unique_dirs(directories)
    digest: str | None = None
    for directory in dirs:
        digest = _spec_digest(directory, digest)
    seen: dict[str, tuple[Path, tuple[Any, ...]]] = {}
    for directory in dirs:
        for key, done in _last_finished(directory).items():
            mark = _fingerprint(done.record)
            if key in seen:
                if seen[key][1] != mark:
                    raise ConfigError(
                        f"session {key!r} finished differently in {seen[key][0]} and {directory}: "
                        "two runs of one key disagree; export only one of them"
                    )
                continue
            seen[key] = (directory, mark)
            yield done


def _replies(transcript: Path) -> dict[int, str]:
    """Assistant text per turn number, from the session transcript."""
    replies: dict[int, str] = {}
    if not transcript.is_file():
        return replies
    with transcript.open("rb") as handle:
        for line in handle:
            try:
                rec = loads_bounded(line)
            except LedgerError:
                continue  # a torn tail (the harness reader tolerates it the same way) or a hostile line
            if isinstance(rec, dict) and rec.get("type") == "message" and rec.get("role") == "assistant":
                text = "".join(str(p.get("text", "")) for p in rec.get("content", []) if isinstance(p, dict))
                replies[int(rec["turn"])] = replies.get(int(rec["turn"]), "") + text
    return replies


def _ledger_facts(ledger: Path) -> tuple[str | None, dict[int, int]]:
    """The run's policy sha256 and the tool calls of each step, from the ledger."""
    sha, tools = None, {}
    if ledger.is_file():
        for rec in read_ledger(ledger).records():
            if rec.get("type") == "loop_armed":
                sha = rec.get("timeStepSha256")
            elif rec.get("type") == "tick_terminal" and isinstance(rec.get("step"), int):
                tools[int(rec["step"])] = int(rec.get("toolCalls", 0) or 0)
    return (None if sha is None else f"sha256:{sha}"), tools


_CAUSES = (
    (re.compile(r"\bHTTP (\d{3})\b"), "http_{0}"),
    (re.compile(r"context exceeded"), "context_exceeded"),
    (re.compile(r"no answer within|timed out"), "timeout"),
    (re.compile(r"cannot connect"), "connect"),
    (re.compile(r"connection was lost|closed the connection"), "connection_lost"),
)


def cause_code(status: str, detail: str | None, error: str | None) -> str | None:
    """A refused or crashed session's cause as a short code: ``http_429``, ``connect``, ``timeout``,
    ``crash.FileNotFoundError``, ... (null for a session that neither refused nor crashed)."""
    if status == "crashed":
        return "crash." + (error or "unknown").split(":", 1)[0]
    if status != "refused":
        return None
    for pattern, code in _CAUSES:
        found = pattern.search(detail or "")
        if found:
            return code.format(*found.groups())
    return "model_error" if detail else "refused"


@dataclass(slots=True)
class _Totals:
    """Running sums over a session's steps; None once a figure is unknown."""

    inp: int | None = 0
    out: int | None = 0
    previous: str | None = None
    latency: list[float] = field(default_factory=list)
    ttft: list[float] = field(default_factory=list)

    def add(self, step: dict[str, Any]) -> None:
        self.inp = _plus(self.inp, step.get("inputTokens"))
        self.out = _plus(self.out, step.get("outputTokens"))
        if step.get("latencyMs") is not None:
            self.latency.append(float(step["latencyMs"]))
        if step.get("ttftMs") is not None:
            self.ttft.append(float(step["ttftMs"]))


def _short(value: object) -> str | None:
    """A provider's word (a finish reason), bounded: it is the server's text."""
    return value[:40] if isinstance(value, str) else None


def _plus(total: int | None, value: int | None) -> int | None:
    return None if total is None or value is None else total + value


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 3) if values else None


def _step_row(
    common: dict[str, Any],
    step: dict[str, Any],
    text: str,
    totals: _Totals,
    *,
    tools: int,
    redactor: Redactor,
) -> dict[str, Any]:
    totals.add(step)
    number = int(step["step"])
    changed = None if totals.previous is None else text != totals.previous
    totals.previous = text
    return {
        **common,
        "step": number,
        "status": step.get("status"),
        "finish_reason": _short(step.get("finishReason")),
        "input_tokens": step.get("inputTokens"),
        "output_tokens": step.get("outputTokens"),
        "usage_reported": bool(step.get("usageReported")),
        "cumulative_input_tokens": totals.inp,
        "cumulative_output_tokens": totals.out,
        "start_offset_ms": step.get("startMs"),
        "ttft_ms": step.get("ttftMs"),
        "latency_ms": step.get("latencyMs"),
        "response_words": len(text.split()),
        "tool_calls": tools,
        "changed_from_previous": changed,
        "text_length": len(text),
        **redactor.text_fields(text, "text"),
    }


def failure_text(rec: dict[str, Any]) -> str | None:
    """The text of a session's failure: a crash's error, or the opening turn's provider error."""
    if rec.get("error") is not None:
        return str(rec["error"])
    details = [s.get("detail") for s in rec.get("steps", []) if s.get("detail")]
    return str(details[0]) if details else None


def rows(
    directories: Iterable[Path], experiment: str, redactor: Redactor
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """For each session: its session row and its step rows, redacted."""
    plans: dict[Path, dict[str, Any]] = {}
    for done in finished_sessions(directories):
        if done.directory not in plans:
            plans[done.directory] = read_run_record(done.directory)
        yield _session(done, experiment, plans[done.directory], redactor)


def _session(
    done: Finished, experiment: str, run: dict[str, Any], redactor: Redactor
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rec, start = done.record, done.started
    sid = str(rec["sessionId"])
    name = session_file_name(sid)
    replies = _replies(done.directory / SESSIONS / name)
    policy_sha, tools = _ledger_facts(done.directory / LEDGERS / name)
    policy = start.get("policy")
    common = {
        "experiment": experiment,
        "cell": start.get("cell"),
        "replicate": start.get("replicate"),
        "session": sid,
        "model": start.get("model"),
        "policy_id": policy,
        "policy_sha256": policy_sha or run.get("policies", {}).get(policy),
        # the factors of a factorial spec (issue 28); a run made before them has none
        **{factor: start.get(factor) for factor in ("opening", "tools", "temperature")},
    }
    totals, steps = _Totals(), []
    for step in rec.get("steps", []):
        text = replies.get(int(step.get("turn", -1)), "")
        calls = int(step.get("toolCalls", tools.get(int(step["step"]), 0)))
        row = _step_row(common, step, text, totals, tools=calls, redactor=redactor)
        steps.append({**row, "end_rule": rec.get("endRule")})
    status, failure = str(rec.get("status")), failure_text(rec)
    session = {
        **common,
        "attempt": start.get("attempt", 1),
        "status": status,
        "end_rule": rec.get("endRule"),
        "steps_planned": int(rec.get("stepsPlanned", run.get("steps", 0))),
        "steps_completed": sum(1 for s in steps if s["step"] > 0 and s["status"] == "completed"),
        "input_tokens": totals.inp if steps else None,
        "output_tokens": totals.out if steps else None,
        "usage_reported": all(s["usage_reported"] for s in steps) if steps else None,
        "tool_calls": sum(s["tool_calls"] for s in steps),
        "mean_latency_ms": _mean(totals.latency),
        "mean_ttft_ms": _mean(totals.ttft),
        "wall_ms": rec.get("wallMs"),
        "cause": cause_code(status, failure, rec.get("error")),
        **(
            {"error_hash": None, "error": None}
            if failure is None or status not in ("refused", "crashed")
            else redactor.text_fields(failure, "error")
        ),
    }
    return session, steps


def returned_models(directories: Iterable[Path]) -> dict[str, set[str]]:
    """The model ids providers returned, by endpoint name, over the finished sessions."""
    found: dict[str, set[str]] = {}
    for done in finished_sessions(directories):
        ids = done.record.get("modelReturned") or []
        found.setdefault(str(done.started.get("model")), set()).update(str(i) for i in ids)
    return found
