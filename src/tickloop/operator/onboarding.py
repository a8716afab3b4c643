"""Onboarding settings that live in the config file: quiet hours and a notification channel.

Written only into sections the file does not have yet (an existing ``[attention]`` or ``[notify]`` is
never rewritten); otherwise the snippet is returned for the person to merge. Apprise URLs carry
tokens, so the file names the variable that holds the URL, never the URL itself.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import msgspec

from tickloop.errors import ValidationError

_QUIET = re.compile(r"(\d{1,2})-(\d{1,2})", re.ASCII)


class Channel(msgspec.Struct, frozen=True):
    """``console``, ``email`` (one address) or ``apprise`` (the URL sits in the variable ``url_env``)."""

    kind: str
    to: str = ""
    url_env: str = ""


def parse_quiet(text: str) -> tuple[int, int]:
    """``"22-7"`` -> (22, 7); hours 0..23; start and end may wrap midnight."""
    match = _QUIET.fullmatch(text.strip())
    if not match or not all(0 <= int(h) <= 23 for h in match.groups()):
        raise ValidationError(f"quiet hours {text!r}: write START-END in whole hours 0..23, e.g. 22-7")
    return int(match[1]), int(match[2])


def parse_channel(text: str) -> Channel:
    """``console``, an email address, or ``apprise:VARIABLE`` (the variable holds the Apprise URL)."""
    value = text.strip()
    if value == "console":
        return Channel("console")
    if value.startswith("apprise:"):
        var = value.removeprefix("apprise:")
        if not var.isidentifier():
            raise ValidationError(f"channel {text!r}: apprise:VARIABLE names an environment variable")
        return Channel("apprise", url_env=var)
    if "://" in value:
        raise ValidationError(
            "put the Apprise URL in an environment variable (it holds a token) and give apprise:VARIABLE"
        )
    from tickloop.notify.address import validate_recipient  # noqa: PLC0415

    return Channel("email", to=validate_recipient(value))


def snippet(quiet: tuple[int, int] | None, channel: Channel | None, timezone: str) -> dict[str, str]:
    """TOML text per top-level section: ``attention`` and ``notify``."""
    out: dict[str, str] = {}
    if quiet is not None:
        out["attention"] = (
            f'[attention]\nquietStart = {quiet[0]}\nquietEnd = {quiet[1]}\ntimezone = "{timezone}"\n'
        )
    if channel is not None:
        body = {
            "console": "",
            "email": f'to = "{channel.to}"\n',
            "apprise": f'urlEnv = "{channel.url_env}"\n',
        }
        out["notify"] = f'[[notify.channels]]\nkind = "{channel.kind}"\n{body[channel.kind]}'
    return out


def write_settings(path: Path, sections: dict[str, str], *, profile: str) -> tuple[list[str], list[str]]:
    """Append the sections the file lacks; return (written, skipped because already present)."""
    existing = tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    written = [name for name in sections if name not in existing]
    skipped = [name for name in sections if name in existing]
    if written:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(f"\n# written by `tickloop operator init` for profile {profile}\n")
            handle.writelines(sections[name] for name in written)
    return written, skipped
