"""Handler and channel settings are validated when loaded, and errors say what and where."""

from __future__ import annotations

import pytest

from tickloop.errors import ConfigError
from tickloop.notify import (
    AppriseChannelSettings,
    ConsoleChannelSettings,
    EmailChannelSettings,
    FileChannelSettings,
    NotifySettings,
    SmtpSettings,
    build_channels,
    parse_notify_settings,
    parse_smtp_settings,
)
from tickloop.operator.handlers import DRY_RUN_ENV, dry_run_from_env, parse_handler_settings


def test_the_console_channel_is_the_embedded_default() -> None:
    """With no [notify] table the person is reached on the console."""
    assert parse_notify_settings({}).channels == [ConsoleChannelSettings()]


def test_channels_parse_from_camel_case_toml_keys() -> None:
    """Each channel kind parses from its TOML table, tagged by ``kind``."""
    settings = parse_notify_settings(
        {
            "channels": [
                {"kind": "file", "name": "log", "path": "~/n.jsonl"},
                {"kind": "apprise", "name": "phone", "urlEnv": "NTFY_URL"},
                {"kind": "email", "to": "me@example.com"},
            ]
        }
    )
    assert settings.channels == [
        FileChannelSettings(name="log", path="~/n.jsonl"),
        AppriseChannelSettings(name="phone", url_env="NTFY_URL"),
        EmailChannelSettings(to="me@example.com"),
    ]


@pytest.mark.parametrize(
    ("channels", "message"),
    [
        ([], "at least one channel"),
        ([{"kind": "console"}, {"kind": "console"}], "duplicate channel names"),
        ([{"kind": "pager"}], "Invalid value 'pager'"),
        ([{"kind": "apprise"}], "exactly one of url and urlEnv"),
        ([{"kind": "apprise", "url": "ntfy://a/b", "urlEnv": "X"}], "exactly one of url and urlEnv"),
        ([{"kind": "apprise", "url": "not a url"}], "expected an Apprise URL"),
        ([{"kind": "apprise", "url": "ntfy://host/topic\nX"}], "expected an Apprise URL"),
        ([{"kind": "email", "to": "a@example.com, b@example.com"}], "to: 'a@example.com, b@example.com'"),
        ([{"kind": "email", "to": "me@example.com", "sender": "Boss <b@example.com>"}], "sender"),
        ([{"kind": "file", "name": "bad name!", "path": "x"}], "channels[0].name"),
        ([{"kind": "file"}], "missing required field `path`"),
    ],
)
def test_invalid_channel_settings_are_refused_with_the_place(channels: list[object], message: str) -> None:
    """A bad channel table raises ConfigError that names the field or the channel."""
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        parse_notify_settings({"channels": channels})


def test_a_url_from_a_missing_variable_is_a_config_error() -> None:
    """An apprise channel whose urlEnv is unset fails when channels are built, naming the variable."""
    settings = NotifySettings(channels=[AppriseChannelSettings(name="phone", url_env="NTFY_URL")])
    with pytest.raises(ConfigError, match="NTFY_URL"):
        build_channels(settings, smtp=SmtpSettings(), secret={}.get)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"workspace": {"envAllowlist": ["PATH", "AWS_SECRET_ACCESS_KEY"]}}, "looks like a secret"),
        ({"workspace": {"envAllowlist": ["GITHUB_TOKEN"]}}, "looks like a secret"),
        ({"workspace": {"programs": ["bin/make"]}}, "bare name or an absolute path"),
        ({"workspace": {"timeoutS": 0}}, "workspace.timeoutS"),
        ({"notesDirectory": "x"}, "unknown field `notesDirectory`"),
    ],
)
def test_invalid_handler_settings_are_refused_with_the_place(table: dict[str, object], message: str) -> None:
    """A bad [handlers] table raises ConfigError naming the field."""
    with pytest.raises(ConfigError, match=message):
        parse_handler_settings(table)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"port": "x"}, r"invalid \[smtp\] settings: .*\$\.port"),
        ({"security": "tls"}, r"\$\.security"),
        ({"passwordEnv": "not a name"}, "passwordEnv"),
        ({"password": "hunter2"}, "unknown field `password`"),
    ],
)
def test_invalid_smtp_settings_are_refused_with_the_place(table: dict[str, object], message: str) -> None:
    """A bad [smtp] table raises ConfigError naming the key; a literal password key is not accepted."""
    with pytest.raises(ConfigError, match=message):
        parse_smtp_settings(table)


def test_smtp_senders_are_validated_when_loaded() -> None:
    """A sender allowlist entry that is not one clean address is refused at load time."""
    with pytest.raises(ConfigError, match=r"smtp.senders\[1\]"):
        SmtpSettings(senders=["ok@example.com", "a@example.com;b@example.com"])


@pytest.mark.parametrize(
    ("value", "dry"),
    [
        (None, True),
        ("0", False),
        ("", True),
        ("false", True),
        ("0 ", True),
        ("00", True),
        (" 0", True),
        ("1", True),
    ],
)
def test_dry_run_is_on_unless_the_variable_is_exactly_zero(value: str | None, dry: bool) -> None:
    """Only TICKLOOP_DRY_RUN=0 arms the handlers; every other value, or none, is a dry run."""
    env = {} if value is None else {DRY_RUN_ENV: value}
    assert dry_run_from_env(env) is dry
