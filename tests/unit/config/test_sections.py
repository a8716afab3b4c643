"""Operator sections are validated when first used, and a bad one names its section and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tickloop.config import load_settings, section
from tickloop.errors import ConfigError
from tickloop.operator.attention import AttentionSettings
from tickloop.operator.schedule import ScheduleSettings


def test_sections_from_toml_validate_into_their_types(tmp_path: Path) -> None:
    """`[attention]` and `[schedule]` tables become typed, frozen settings."""
    config = tmp_path / "config.toml"
    config.write_text(
        '[attention]\nquietStart = 23\ntimezone = "Europe/Berlin"\n[schedule]\nfast = "*/45 * * * *"\n'
    )
    settings = load_settings({}, config)
    assert section(settings, "attention", AttentionSettings).quiet_start == 23
    assert section(settings, "schedule", ScheduleSettings).fast == "*/45 * * * *"


@pytest.mark.parametrize(
    ("toml", "fragment"),
    [
        ("[attention]\nquietStart = 25\n", "[attention]"),
        ("[attention]\nbudgetPerDay = 'six'\n", "budgetPerDay"),
        ("[attention]\nsurprise = 1\n", "surprise"),
    ],
)
def test_a_bad_section_names_the_section_and_key(tmp_path: Path, toml: str, fragment: str) -> None:
    """Invalid operator configuration fails with a message that names where the problem is."""
    config = tmp_path / "config.toml"
    config.write_text(toml)
    with pytest.raises(ConfigError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        section(load_settings({}, config), "attention", AttentionSettings)


def test_unknown_top_level_table_is_refused(tmp_path: Path) -> None:
    """A misspelt section is an error at load time, not silently ignored."""
    config = tmp_path / "config.toml"
    config.write_text("[atention]\nquietStart = 23\n")
    with pytest.raises(ConfigError, match="atention"):
        load_settings({}, config)
