"""The dataset's column tables: the README prints each column with its type and meaning, and a
failure's cause is a short code."""

from __future__ import annotations

from pathlib import Path

import pytest

from tickloop.experiment.dataset import cause_code
from tickloop.experiment.schema import TABLES

README = Path(__file__).resolve().parents[3] / "docs" / "experiments.md"


@pytest.mark.parametrize("table", sorted(TABLES))
def test_the_readme_table_lists_every_column_with_its_type_and_meaning(table: str) -> None:
    """Each column of each table has its row in the README, with the schema's type and meaning."""
    text = README.read_text(encoding="utf-8")
    assert f"| `{table}` column | type | meaning |" in text
    for name, kind, meaning in TABLES[table]:
        assert f"| `{name}` | {kind} | {meaning} |" in text, name


def test_column_names_are_unique_and_typed() -> None:
    """No table names a column twice, and each type is one the writers know."""
    for columns in TABLES.values():
        names = [c[0] for c in columns]
        assert len(names) == len(set(names))
        assert {c[1].rstrip("?") for c in columns} <= {"string", "int", "float", "bool"}


@pytest.mark.parametrize(
    ("status", "detail", "error", "code"),
    [
        ("refused", "model 'x' (m at u): HTTP 429: slow down. Rate limited", None, "http_429"),
        ("refused", "model 'x': cannot connect (refused); is the server running", None, "connect"),
        ("refused", "model 'x': no answer within 60 s (timed out)", None, "timeout"),
        ("refused", "context exceeded: the packet is 9000 tokens", None, "context_exceeded"),
        ("refused", "something else", None, "model_error"),
        ("refused", None, None, "refused"),
        ("crashed", None, "FileNotFoundError: [Errno 2] no such file", "crash.FileNotFoundError"),
        ("complete", "HTTP 500", None, None),
        ("stopped", "HTTP 500", None, None),
    ],
)
def test_a_failure_cause_is_a_short_code(
    status: str, detail: str | None, error: str | None, code: str | None
) -> None:
    """Refused sessions get the provider failure's class, crashed ones the exception's; others none."""
    assert cause_code(status, detail, error) == code
