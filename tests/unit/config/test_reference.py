"""The documentation's configuration reference (docs/configuration.md) is the one generated from the
settings types, so it cannot drift."""

from __future__ import annotations

from pathlib import Path

from tickloop.config_reference import END, START, render, splice

README = Path(__file__).parents[3] / "docs" / "configuration.md"


def test_readme_reference_matches_the_settings_types() -> None:
    """A key added, renamed or re-documented in code shows up in the docs (regenerate to fix)."""
    text = README.read_text(encoding="utf-8")
    fix = "run: python -m tickloop.config_reference --write docs/configuration.md"
    assert splice(text, render()) == text, fix


def test_reference_covers_every_section_with_defaults() -> None:
    """Every top-level table appears, and the seed's attention defaults are stated."""
    reference = render()
    for table in (
        "tick",
        "model",
        "store",
        "sources",
        "gate",
        "handlers",
        "smtp",
        "notify",
        "attention",
        "monitor",
        "schedule",
    ):
        assert f"`{table}." in reference or f"`[{table}." in reference, table
    assert "| `attention.budgetPerDay` | int (0..1000) | `6` |" in reference
    assert "| `attention.minGapMin` | int (0..1440) | `90` |" in reference
    assert START not in reference
    assert END not in reference
