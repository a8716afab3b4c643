"""Onboarding: quiet hours and channels are validated, and the config file is only ever appended to."""

from __future__ import annotations

import tomllib
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from tickloop.errors import RecipientError, ValidationError
from tickloop.notify.settings import parse_notify_settings
from tickloop.operator.attention import AttentionSettings
from tickloop.operator.onboarding import Channel, parse_channel, parse_quiet, snippet, write_settings


@pytest.mark.parametrize(("text", "hours"), [("22-7", (22, 7)), (" 0-23 ", (0, 23)), ("9-17", (9, 17))])
def test_quiet_hours_parse(text: str, hours: tuple[int, int]) -> None:
    """START-END in whole hours, wrapping midnight or not."""
    assert parse_quiet(text) == hours


@pytest.mark.parametrize("text", ["25-3", "22", "22-7-1", "ten-six", "-1-5", "\uff12\uff12-7", "22:00-07:00"])
def test_bad_quiet_hours_are_refused(text: str) -> None:
    """Anything but two hours 0..23 is refused with the expected form in the message."""
    with pytest.raises(ValidationError, match="START-END"):
        parse_quiet(text)


@pytest.mark.parametrize(
    ("text", "channel"),
    [
        ("console", Channel("console")),
        ("me@example.org", Channel("email", to="me@example.org")),
        ("apprise:TICKLOOP_NTFY_URL", Channel("apprise", url_env="TICKLOOP_NTFY_URL")),
    ],
)
def test_channels_parse(text: str, channel: Channel) -> None:
    """console, one email address, or the name of the variable holding an Apprise URL."""
    assert parse_channel(text) == channel


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("ntfy://secret-token@ntfy.sh/topic", ValidationError),
        ("apprise:not a var", ValidationError),
        ("a@example.org, b@example.org", RecipientError),
        ("me@example.org\r\nBcc: x@evil.test", RecipientError),
    ],
)
def test_hostile_channels_are_refused(text: str, error: type[Exception]) -> None:
    """A raw URL with a token, a bad variable name or an injected address never reaches the config file."""
    with pytest.raises(error):
        parse_channel(text)


def test_written_sections_validate_and_existing_ones_are_left_alone(tmp_path: Path) -> None:
    """What init writes is valid configuration; a section the file already has is never rewritten."""
    config = tmp_path / "config.toml"
    config.write_text("[attention]\nbudgetPerDay = 3\n")
    sections = snippet((23, 6), Channel("email", to="me@example.org"), "Europe/Berlin")
    written, skipped = write_settings(config, sections, profile="ada")
    assert (written, skipped) == (["notify"], ["attention"])
    data = tomllib.loads(config.read_text())
    assert data["attention"] == {"budgetPerDay": 3}
    assert parse_notify_settings(data["notify"]).channels[0].to == "me@example.org"  # type: ignore[union-attr]
    fresh = tmp_path / "fresh.toml"
    write_settings(fresh, sections, profile="ada")
    attention = msgspec.convert(tomllib.loads(fresh.read_text())["attention"], AttentionSettings)
    assert (attention.quiet_start, attention.quiet_end, attention.timezone) == (23, 6, "Europe/Berlin")


def test_wizard_asks_for_goal_tasks_timezone_quiet_hours_and_channel() -> None:
    """The interactive form collects everything the flags can say."""
    from tickloop.cli.operator import _wizard  # noqa: PLC0415

    answers = "Learn Rust\nthe book\nChapter 1\nChapter 2\n\nEurope/Berlin\n23-6\nme@example.org\n"
    with CliRunner().isolation(input=answers):
        result = _wizard("UTC")
    assert result == (
        "Learn Rust",
        "the book",
        ("Chapter 1", "Chapter 2"),
        "23-6",
        "me@example.org",
        "Europe/Berlin",
    )
