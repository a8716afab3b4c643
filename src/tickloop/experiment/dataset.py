"""The dataset of a run directory (or of several shard directories): pure functions of the files.

Two tables, both described by ``STEP_COLUMNS`` and ``SESSION_COLUMNS`` (the README prints them):
one row per time step and one row per session. Only the last ``finished`` attempt of each session
key counts; an abandoned attempt is never a row.

Redaction is on by default, for exactly what the seed names as unpublishable in raw traces: paths,
timestamps, provider data and workspace details. Wall-clock times are never read into a row (only
offsets from the session's start, measured on a monotonic clock); base URLs, request ids, system
fingerprints and response headers are never read at all. Text (the model's reply, an error's
detail) is replaced by its sha256 and length unless ``keep_text``; kept text is still scrubbed of
absolute paths, URLs, this machine's host and user names, e-mail addresses and key-like tokens.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import re
import socket
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tickloop.audit import read_ledger, session_file_name
from tickloop.errors import ConfigError, LedgerError
from tickloop.experiment.runner import LEDGERS, MANIFEST, SESSIONS, Manifest
from tickloop.protocol.ledger import loads_bounded

#: (name, type, meaning) of each column of the per-step table.
STEP_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("experiment", "string", "the spec's name"),
    ("cell", "string", "model/policy"),
    ("replicate", "int", "1-based replicate within the cell"),
    ("session", "string", "harness session id"),
    ("model", "string", "endpoint name (never its URL)"),
    ("policy_id", "string", "tick policy id"),
    ("policy_sha256", "string", "sha256 of the policy's time-step text"),
    ("step", "int", "1-based time step"),
    ("status", "string", "the step's terminal: completed, error, interrupted, cancelled"),
    ("input_tokens", "int?", "reported input tokens (null when the provider reported none)"),
    ("output_tokens", "int?", "reported output tokens (null when the provider reported none)"),
    ("usage_reported", "bool", "whether the provider reported usage for the step"),
    ("start_offset_ms", "float", "when the step's turn began, in ms from the session's start"),
    ("ttft_ms", "float?", "time to the first streamed text, ms"),
    ("latency_ms", "float", "turn start to terminal, ms"),
    ("response_chars", "int", "characters of the reply"),
    ("response_words", "int", "whitespace-separated words of the reply"),
    ("tool_calls", "int", "tool calls made within the step's turn"),
    ("end_rule", "string?", "the rule that ended the session's run"),
    ("text_sha256", "string", "sha256 of the reply text"),
    ("text_length", "int", "characters of the reply text"),
    ("text", "string?", "the reply, scrubbed (only with --keep-text)"),
)
#: (name, type, meaning) of each column of the per-session table.
SESSION_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("experiment", "string", "the spec's name"),
    ("cell", "string", "model/policy"),
    ("replicate", "int", "1-based replicate within the cell"),
    ("session", "string", "harness session id"),
    ("attempt", "int", "1, or more when earlier attempts were abandoned"),
    ("model", "string", "endpoint name"),
    ("policy_id", "string", "tick policy id"),
    ("policy_sha256", "string", "sha256 of the policy's time-step text"),
    ("status", "string", "complete, stopped, refused, no_run or crashed"),
    ("end_rule", "string?", "the rule that ended the run (loop_complete / loop_stopped / refusal)"),
    ("steps_completed", "int", "time steps whose terminal was completed"),
    ("input_tokens", "int", "reported input tokens, summed"),
    ("output_tokens", "int", "reported output tokens, summed"),
    ("usage_reported", "bool", "every step reported usage"),
    ("wall_ms", "float", "the session's duration, ms"),
    ("error_sha256", "string?", "sha256 of a crashed session's error"),
    ("error", "string?", "the error, scrubbed (only with --keep-text)"),
)


@dataclass(slots=True)
class Redactor:
    """Scrubs text and counts what it redacted, by class (for REDACTION.md)."""

    keep_text: bool = False
    counts: Counter[str] = field(default_factory=Counter)
    _patterns: list[tuple[str, re.Pattern[str], str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        words = {w for w in (_hostname(), _fqdn(), _user(), Path.home().name) if w and len(w) >= 3}
        self._patterns = [
            ("url", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<>]+"), "<url>"),
            ("email", re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"), "<email>"),
            ("secret", re.compile(r"\b(?:sk|pk|rk|ghp|gho|xox[abpr])[-_][A-Za-z0-9_-]{12,}"), "<secret>"),
            ("secret", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"), "<secret>"),
            ("secret", re.compile(r"\b[A-Fa-f0-9]{32,}\b|\b[A-Za-z0-9+/_-]{40,}={0,2}"), "<secret>"),
            ("path", re.compile(r"(?:(?<=\s)|(?<=^)|(?<=[\"'(=:]))(?:~|[A-Za-z]:\\|/)[^\s\"'<>]*"), "<path>"),
        ]
        if words:
            alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
            self._patterns.append(("host_or_user", re.compile(rf"(?i)\b(?:{alternatives})\b"), "<redacted>"))

    def scrub(self, text: str) -> str:
        for kind, pattern, placeholder in self._patterns:
            text, n = pattern.subn(placeholder, text)
            self.counts[kind] += n
        return text

    def text_fields(self, text: str, prefix: str) -> dict[str, Any]:
        """``<prefix>_sha256`` and length always; the scrubbed text only with ``keep_text``."""
        out: dict[str, Any] = {f"{prefix}_sha256": "sha256:" + hashlib.sha256(text.encode()).hexdigest()}
        if self.keep_text:
            out[prefix] = self.scrub(text)
        else:
            self.counts[f"{prefix} (replaced by sha256 and length)"] += 1 if text else 0
            out[prefix] = None
        return out


def _hostname() -> str:
    return socket.gethostname()


def _fqdn() -> str:
    try:
        return socket.getfqdn()
    except OSError:
        return ""


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return os.environ.get("USER", "")


@dataclass(frozen=True, slots=True)
class Finished:
    """One session's last finished attempt, as the manifest recorded it."""

    directory: Path
    record: dict[str, Any]
    started: dict[str, Any]


def finished_sessions(directories: Iterable[Path]) -> Iterator[Finished]:
    """The last finished attempt of every key, across shard directories of ONE spec."""
    digest: str | None = None
    for directory in directories:
        if not (directory / MANIFEST).is_file():
            raise ConfigError(f"{directory}: no {MANIFEST}: not an experiment run directory")
        held = (directory / "spec.sha256").read_text(encoding="utf-8").strip()
        if digest is not None and held != digest:
            raise ConfigError(f"{directory}: a run of another spec ({held}, expected {digest}); cannot merge")
        digest = held
        starts: dict[str, dict[str, Any]] = {}
        last: dict[str, Finished] = {}
        for rec in Manifest(directory / MANIFEST).read():
            if rec.get("event") == "started":
                starts[str(rec["sessionId"])] = rec
            elif rec.get("event") == "finished":
                sid = str(rec["sessionId"])
                last[str(rec["key"])] = Finished(directory, rec, starts.get(sid, {}))
        yield from last.values()


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


def rows(
    directories: Iterable[Path], experiment: str, redactor: Redactor
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """For each session: its session row and its step rows, redacted."""
    for done in finished_sessions(directories):
        rec, start = done.record, done.started
        sid = str(rec["sessionId"])
        name = session_file_name(sid)
        replies = _replies(done.directory / SESSIONS / name)
        policy_sha, tools = _ledger_facts(done.directory / LEDGERS / name)
        common = {
            "experiment": experiment,
            "cell": start.get("cell"),
            "replicate": start.get("replicate"),
            "session": sid,
            "model": start.get("model"),
            "policy_id": start.get("policy"),
            "policy_sha256": policy_sha,
        }
        steps = []
        for step in rec.get("steps", []):
            text = replies.get(int(step.get("turn", -1)), "")
            steps.append(
                {
                    **common,
                    "step": step["step"],
                    "status": step.get("status"),
                    "input_tokens": step.get("inputTokens"),
                    "output_tokens": step.get("outputTokens"),
                    "usage_reported": bool(step.get("usageReported")),
                    "start_offset_ms": step.get("startMs"),
                    "ttft_ms": step.get("ttftMs"),
                    "latency_ms": step.get("latencyMs"),
                    "response_chars": len(text),
                    "response_words": len(text.split()),
                    "tool_calls": tools.get(int(step["step"]), 0),
                    "end_rule": rec.get("endRule"),
                    "text_length": len(text),
                    **redactor.text_fields(text, "text"),
                }
            )
        error = rec.get("error")
        session = {
            **common,
            "attempt": start.get("attempt", 1),
            "status": rec.get("status"),
            "end_rule": rec.get("endRule"),
            "steps_completed": sum(1 for s in steps if s["status"] == "completed"),
            "input_tokens": sum(s["input_tokens"] or 0 for s in steps),
            "output_tokens": sum(s["output_tokens"] or 0 for s in steps),
            "usage_reported": all(s["usage_reported"] for s in steps),
            "wall_ms": rec.get("wallMs"),
            **(
                {"error_sha256": None, "error": None}
                if error is None
                else redactor.text_fields(str(error), "error")
            ),
        }
        yield session, steps
