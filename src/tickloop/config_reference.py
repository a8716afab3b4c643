"""The configuration reference in docs/configuration.md, generated from the settings types.

``render()`` walks every settings Struct (nested tables and arrays of tables included) and writes
one Markdown row per key: its TOML path, type with limits, default and the ``#:`` comment above the
field in the source. ``python -m tickloop.config_reference --write docs/configuration.md`` refreshes that page
between its markers; a test keeps the two equal.
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi

START = "<!-- config-reference:start -->"
END = "<!-- config-reference:end -->"


def sections() -> list[tuple[str, type[msgspec.Struct]]]:
    """Each top-level table and its type, in README order."""
    return [*_chat_sections(), *_operator_io_sections(), *_operator_watch_sections()]


def _chat_sections() -> list[tuple[str, type[msgspec.Struct]]]:
    from tickloop.config import ModelSettings, StoreSettings, TickSettings  # noqa: PLC0415
    from tickloop.harness.tools import ToolsSettings  # noqa: PLC0415

    return [
        ("tick", TickSettings),
        ("model", ModelSettings),
        ("store", StoreSettings),
        ("tools", ToolsSettings),
    ]


def _operator_io_sections() -> list[tuple[str, type[msgspec.Struct]]]:
    """What the operator reads, what may act, and how it tells the person."""
    from tickloop.notify.settings import NotifySettings  # noqa: PLC0415
    from tickloop.notify.smtp import SmtpSettings  # noqa: PLC0415
    from tickloop.operator.gate import GateSettings  # noqa: PLC0415
    from tickloop.operator.handlers.settings import HandlerSettings  # noqa: PLC0415
    from tickloop.operator.sources import SourcesSettings  # noqa: PLC0415

    return [
        ("sources", SourcesSettings),
        ("gate", GateSettings),
        ("handlers", HandlerSettings),
        ("smtp", SmtpSettings),
        ("notify", NotifySettings),
    ]


def _operator_watch_sections() -> list[tuple[str, type[msgspec.Struct]]]:
    """When the operator looks, what it watches, and the dashboard."""
    from tickloop.operator.attention import AttentionSettings  # noqa: PLC0415
    from tickloop.operator.conditions import MonitorSettings  # noqa: PLC0415
    from tickloop.operator.notices import DashboardSettings  # noqa: PLC0415
    from tickloop.operator.schedule import ScheduleSettings  # noqa: PLC0415

    return [
        ("attention", AttentionSettings),
        ("monitor", MonitorSettings),
        ("schedule", ScheduleSettings),
        ("web", DashboardSettings),
    ]


def render() -> str:
    """The Markdown reference (without the markers)."""
    rows = ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    rows.append(
        '| `envFile` | str | `""` | a KEY=value file read for secrets; never overrides the real environment |'
    )
    for name, kind in sections():
        rows += _rows(name, kind)
    return "\n".join(rows) + "\n"


def _rows(prefix: str, kind: type[msgspec.Struct]) -> list[str]:
    info = mi.type_info(kind)
    assert isinstance(info, mi.StructType)
    notes = _comments(kind)
    rows = []
    for field in info.fields:
        path = f"{prefix}.{field.encode_name}"
        nested = _struct_of(field.type)
        if nested is not None and not isinstance(field.type, mi.UnionType):
            many = isinstance(field.type, mi.ListType)
            rows += _rows(f"[{path}]" if many else path, nested)
            continue
        rows.append(f"| `{path}` | {_type(field.type)} | {_default(field)} | {notes.get(field.name, '')} |")
    return rows


def _struct_of(info: mi.Type) -> type[msgspec.Struct] | None:
    if isinstance(info, mi.StructType):
        return info.cls
    if isinstance(info, mi.ListType) and isinstance(info.item_type, mi.StructType):
        return info.item_type.cls
    return None


def _type(info: mi.Type) -> str:  # noqa: PLR0911  (one return per msgspec type kind)
    if isinstance(info, mi.IntType | mi.FloatType):
        low = info.ge if info.ge is not None else info.gt
        high = info.le if info.le is not None else info.lt
        base = "int" if isinstance(info, mi.IntType) else "float"
        return f"{base} ({low}..{high})" if low is not None and high is not None else base
    if isinstance(info, mi.ListType):
        return f"list of {_type(info.item_type)}"
    if isinstance(info, mi.DictType):
        return f"table of {_type(info.value_type)}"
    if isinstance(info, mi.UnionType):
        return " or ".join(_type(t) for t in info.types)
    if isinstance(info, mi.LiteralType):
        return " \\| ".join(f"`{v}`" for v in info.values)
    if isinstance(info, mi.StructType):
        return "table"
    return type(info).__name__.removesuffix("Type").lower()


def _default(field: mi.Field) -> str:
    if field.default is not msgspec.NODEFAULT:
        value: Any = field.default
    elif field.default_factory is not msgspec.NODEFAULT:
        value = field.default_factory()
    else:
        return "required"
    if isinstance(value, msgspec.Struct):
        return "(table)"
    return f"`{msgspec.json.encode(value).decode()}`".replace("|", "\\|")


def _comments(kind: type) -> dict[str, str]:
    """``#:`` comment lines directly above each field of ``kind``'s class body."""
    try:
        source = inspect.getsource(kind)
    except (OSError, TypeError):
        return {}
    notes: dict[str, str] = {}
    pending: list[str] = []
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        match = re.match(r"(\w+)\s*:", stripped)
        if match and pending:
            notes[match[1]] = " ".join(pending).replace("|", "\\|")
        pending = []
    return notes


def splice(text: str, reference: str) -> str:
    """``text`` with the part between the markers replaced by ``reference``."""
    head, start, rest = text.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        raise ValueError(f"the page lacks the markers {START} ... {END}")
    return f"{head}{START}\n{reference}{END}{tail}"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write"]:
        path = Path(sys.argv[2])
        path.write_text(splice(path.read_text(encoding="utf-8"), render()), encoding="utf-8")
    else:
        sys.stdout.write(render())
