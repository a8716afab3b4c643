"""``tickloop experiment export``: the dataset as Parquet, JSON Lines or CSV, and REDACTION.md.

Rows stream from the run directories to the writer: JSON Lines and CSV write as they go; Parquet
(``pyarrow``, extra ``research``) writes in row groups of ``BATCH`` rows, each column's type and
meaning in its field metadata and the run's provenance in the file metadata.

Every file is written under a temporary name and renamed into place only when all of them are
complete: a failure leaves the files of an earlier export (or none), never a partial one.
"""

from __future__ import annotations

import csv
import json
import os
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from tickloop.errors import ConfigError
from tickloop.experiment.dataset import returned_models, rows
from tickloop.experiment.provenance import provenance, run_rows, scrubbed
from tickloop.experiment.redaction import NoRedaction, Redactor, report, run_key
from tickloop.experiment.schema import SCHEMA_VERSION, TABLES, Columns

Format = Literal["parquet", "jsonl", "csv"]
FORMATS: tuple[Format, ...] = ("parquet", "jsonl", "csv")
BATCH = 10_000


def experiment_name(directory: Path) -> str:
    """The ``name`` of the spec a run directory holds."""
    try:
        return str(tomllib.loads((directory / "spec.toml").read_text(encoding="utf-8"))["name"])
    except (OSError, KeyError, ValueError) as exc:
        raise ConfigError(f"{directory}: no readable spec.toml ({exc})") from None


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def parquet_schema(columns: Columns, metadata: dict[str, Any]) -> Any:
    """The Arrow schema of one table: each field's type and meaning in its metadata, ``metadata``
    (the provenance, the column table) in the schema's."""
    import pyarrow as pa  # noqa: PLC0415  (extra `research`, only on this path)

    types = {"string": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
    fields = [
        pa.field(n, types[t.rstrip("?")], t.endswith("?"), metadata={"type": t, "meaning": m})
        for n, t, m in columns
    ]
    described = {n: {"type": t, "meaning": m} for n, t, m in columns}
    extra = {"tickloop.columns": json.dumps(described), **{k: json.dumps(v) for k, v in metadata.items()}}
    return pa.schema(fields, metadata=extra)


#: The Python types a column of each type takes (exact types: True is not an int here).
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "int": (int,),
    "float": (float, int),
    "bool": (bool,),
}


class _Sink:
    """One table's writer in one format, into a temporary file until ``commit``."""

    def __init__(self, path: Path, columns: Columns, fmt: Format, metadata: dict[str, Any]) -> None:
        self.path, self.tmp, self.fmt = path, _tmp(path), fmt
        self.names = [c[0] for c in columns]
        #: (name, the types it takes, None allowed) of each column
        self.kinds = [(n, _TYPES[t.rstrip("?")], t.endswith("?")) for n, t, _ in columns]
        self.count = 0
        self._batch: list[dict[str, Any]] = []
        self._handle: Any = None
        self._writer: Any = None
        if fmt == "parquet":
            self._schema = parquet_schema(columns, metadata)
        else:
            self._handle = self.tmp.open("w", encoding="utf-8", newline="")
            if fmt == "csv":
                self._writer = csv.DictWriter(self._handle, fieldnames=self.names, extrasaction="raise")
                self._writer.writeheader()

    def write(self, row: dict[str, Any]) -> None:
        row = {name: row.get(name) for name in self.names}
        self._check(row)
        self.count += 1
        if self.fmt == "jsonl":
            self._handle.write(json.dumps(row, sort_keys=False, ensure_ascii=False) + "\n")
        elif self.fmt == "csv":
            self._writer.writerow({k: "" if v is None else v for k, v in row.items()})
        else:
            self._batch.append(row)
            if len(self._batch) >= BATCH:
                self._flush()

    def _check(self, row: dict[str, Any]) -> None:
        """Every value fits its column, in every format (a hand-edited manifest says where it does not)."""
        for name, types, nullable in self.kinds:
            value = row[name]
            if type(value) in types or (value is None and nullable):
                continue
            what = "is missing" if value is None else f"= {value!r} is not {types[0].__name__}"
            raise ConfigError(
                f"{self.path.stem} row of session {row.get('session')!r}: {name} {what}; "
                "was the run directory's manifest edited?"
            )

    def _flush(self) -> None:
        import pyarrow as pa  # noqa: PLC0415
        import pyarrow.parquet as pq  # noqa: PLC0415

        if self._writer is None:
            self._writer = pq.ParquetWriter(self.tmp, self._schema)
        self._writer.write_table(pa.Table.from_pylist(self._batch, schema=self._schema))
        self._batch = []

    def close(self) -> None:
        """Finish the temporary file (durably)."""
        if self.fmt == "parquet":
            if self._batch or self._writer is None:
                self._flush()
            self._writer.close()
        else:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()

    def abandon(self) -> None:
        for closer in (self._writer, self._handle):
            try:
                if closer is not None and hasattr(closer, "close"):
                    closer.close()
            except Exception:  # noqa: BLE001, S110  (the export already failed; only clean up)
                pass
        self.tmp.unlink(missing_ok=True)

    def commit(self) -> None:
        self.tmp.replace(self.path)


def _check(directories: Sequence[Path], fmt: str) -> str:
    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if not directories:
        raise ConfigError("export needs at least one run directory")
    names = {experiment_name(d) for d in directories}
    if len(names) != 1:
        raise ConfigError(f"run directories hold different experiments: {', '.join(sorted(names))}")
    return names.pop()


def export(
    directories: Sequence[Path], out: Path, fmt: Format, *, redact: bool = True, keep_text: bool = False
) -> dict[str, int]:
    """Write ``steps.<fmt>``, ``sessions.<fmt>``, ``runs.<fmt>`` and ``REDACTION.md`` into ``out``;
    return the row counts. Nothing is in place until everything is written."""
    name = _check(directories, fmt)
    redactor = Redactor(keep_text=keep_text, key=run_key(directories)) if redact else NoRedaction()
    prov = provenance(directories, returned_models(directories))
    if redact:
        prov = scrubbed(prov, redactor.scrub)
    meta = {"tickloop.provenance": prov, "tickloop.schema_version": SCHEMA_VERSION}
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    sinks = {table: _Sink(out / f"{table}.{fmt}", cols, fmt, meta) for table, cols in TABLES.items()}
    notes = out / "REDACTION.md"
    try:
        for session, step_rows in rows(directories, name, redactor):
            sinks["sessions"].write(session)
            for row in step_rows:
                sinks["steps"].write(row)
        for row in run_rows(prov):
            sinks["runs"].write(row)
        for sink in sinks.values():
            sink.close()
        _tmp(notes).write_text(report(redactor, redact=redact), encoding="utf-8")
    except BaseException:
        for sink in sinks.values():
            sink.abandon()
        _tmp(notes).unlink(missing_ok=True)
        raise
    for sink in sinks.values():
        sink.commit()
    _tmp(notes).replace(notes)
    return {table: sink.count for table, sink in sinks.items()}
