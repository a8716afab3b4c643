"""``tickloop experiment export``: the dataset as Parquet, JSON Lines or CSV, and REDACTION.md.

Rows stream from the run directories to the writer: JSON Lines and CSV write as they go; Parquet
(``pyarrow``, extra ``research``) writes in row groups of ``BATCH`` rows.
"""

from __future__ import annotations

import csv
import json
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from tickloop.errors import ConfigError
from tickloop.experiment.dataset import SESSION_COLUMNS, STEP_COLUMNS, Redactor, rows

Format = Literal["parquet", "jsonl", "csv"]
FORMATS: tuple[Format, ...] = ("parquet", "jsonl", "csv")
BATCH = 10_000


def experiment_name(directory: Path) -> str:
    """The ``name`` of the spec a run directory holds."""
    try:
        return str(tomllib.loads((directory / "spec.toml").read_text(encoding="utf-8"))["name"])
    except (OSError, KeyError, ValueError) as exc:
        raise ConfigError(f"{directory}: no readable spec.toml ({exc})") from None


class _Sink:
    """One table's writer in one format."""

    def __init__(self, path: Path, columns: Sequence[tuple[str, str, str]], fmt: Format) -> None:
        self.path, self.names, self.fmt = path, [c[0] for c in columns], fmt
        self.count = 0
        self._batch: list[dict[str, Any]] = []
        self._handle: Any = None
        self._writer: Any = None
        if fmt == "parquet":
            import pyarrow as pa  # noqa: PLC0415  (extra `research`, only on this path)

            types = {"string": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
            self._schema = pa.schema(
                [pa.field(n, types[t.rstrip("?")], t.endswith("?")) for n, t, _ in columns]
            )
        else:
            self._handle = path.open("w", encoding="utf-8", newline="")
            if fmt == "csv":
                self._writer = csv.DictWriter(self._handle, fieldnames=self.names, extrasaction="raise")
                self._writer.writeheader()

    def write(self, row: dict[str, Any]) -> None:
        row = {name: row.get(name) for name in self.names}
        self.count += 1
        if self.fmt == "jsonl":
            self._handle.write(json.dumps(row, sort_keys=False, ensure_ascii=False) + "\n")
        elif self.fmt == "csv":
            self._writer.writerow({k: "" if v is None else v for k, v in row.items()})
        else:
            self._batch.append(row)
            if len(self._batch) >= BATCH:
                self._flush()

    def _flush(self) -> None:
        import pyarrow as pa  # noqa: PLC0415
        import pyarrow.parquet as pq  # noqa: PLC0415

        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, self._schema)
        self._writer.write_table(pa.Table.from_pylist(self._batch, schema=self._schema))
        self._batch = []

    def close(self) -> None:
        if self.fmt == "parquet":
            if self._batch or self._writer is None:
                self._flush()
            self._writer.close()
        else:
            self._handle.close()


def export(
    directories: Sequence[Path], out: Path, fmt: Format, *, redact: bool = True, keep_text: bool = False
) -> dict[str, int]:
    """Write ``steps.<fmt>``, ``sessions.<fmt>`` and ``REDACTION.md`` into ``out``; return row counts."""
    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if not directories:
        raise ConfigError("export needs at least one run directory")
    names = {experiment_name(d) for d in directories}
    if len(names) != 1:
        raise ConfigError(f"run directories hold different experiments: {', '.join(sorted(names))}")
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    redactor = Redactor(keep_text=keep_text) if redact else _NoRedaction()
    steps = _Sink(out / f"steps.{fmt}", STEP_COLUMNS, fmt)
    sessions = _Sink(out / f"sessions.{fmt}", SESSION_COLUMNS, fmt)
    try:
        for session, step_rows in rows(directories, names.pop(), redactor):
            sessions.write(session)
            for row in step_rows:
                steps.write(row)
    finally:
        steps.close()
        sessions.close()
    (out / "REDACTION.md").write_text(_report(redactor, redact=redact), encoding="utf-8")
    return {"steps": steps.count, "sessions": sessions.count}


class _NoRedaction(Redactor):
    """``--no-redact``: text kept as it is; the report says nothing was redacted."""

    def __init__(self) -> None:
        super().__init__(keep_text=True)

    def scrub(self, text: str) -> str:
        return text


_CLASSES: Iterable[tuple[str, str]] = (
    ("timestamps", "wall-clock times are never exported: every time is an offset from the session's start"),
    ("provider data", "base URLs, request ids, system fingerprints and response headers are never read"),
    ("text (replaced by sha256 and length)", "replies; only with --keep-text is scrubbed text kept"),
    ("error (replaced by sha256 and length)", "error details of crashed sessions"),
    ("path", "absolute and home-relative paths in kept text become <path>"),
    ("url", "URLs in kept text become <url>"),
    ("email", "e-mail addresses in kept text become <email>"),
    ("secret", "API keys, bearer tokens and long key-like strings in kept text become <secret>"),
    ("host_or_user", "this machine's host name and user name in kept text become <redacted>"),
)


def _report(redactor: Redactor, *, redact: bool) -> str:
    lines = ["# Redaction report", ""]
    if not redact:
        lines += ["Exported with `--no-redact`: nothing was redacted. Do not publish this export.", ""]
        return "\n".join(lines)
    lines += [
        "| field class | values redacted | how |",
        "| --- | --- | --- |",
    ]
    for kind, how in _CLASSES:
        count = redactor.counts.get(kind)
        shown = "all (never read)" if kind in ("timestamps", "provider data") else str(count or 0)
        lines.append(f"| {kind} | {shown} | {how} |")
    return "\n".join(lines) + "\n"
