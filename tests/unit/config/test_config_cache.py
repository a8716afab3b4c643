"""The config cache (``tickloop.config_cache``): a start on an unchanged config file needs neither the
TOML parser nor the section types; any change, and any cache file that is not exactly ours, means a
real parse and check, with the same errors as ever."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from tickloop import config, config_cache, config_sections
from tickloop.config import load_settings
from tickloop.config_sections import check_config
from tickloop.errors import ConfigError

REAL = '[tick]\ndefaultTicks = 3\n[attention]\nquietStart = 22\nquietEnd = 7\ntimezone = "Europe/Berlin"\n'


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "state"
    monkeypatch.setenv("TICKLOOP_STATE_DIR", str(folder))
    return folder


def no_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, a parse or a section check fails the test."""

    def refuse(*_: object) -> None:
        raise AssertionError("parsed or checked again")

    monkeypatch.setattr(config, "_parse_toml", refuse)
    monkeypatch.setattr(config_sections, "section_type", refuse)


def test_an_unchanged_file_is_neither_parsed_nor_checked_again(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(REAL)
    check_config(load_settings(path=path))
    assert (state / config_cache.CACHE_FILE).stat().st_mode & 0o777 == 0o600
    no_parser(monkeypatch)
    settings = load_settings(path=path)
    check_config(settings)
    assert settings.tick.default_ticks == 3
    assert settings.attention == {"quietStart": 22, "quietEnd": 7, "timezone": "Europe/Berlin"}


def _same_size_same_mtime(path: Path) -> None:
    before = path.stat()
    path.write_text(REAL.replace("= 3", "= 4"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _same_mtime_other_size(path: Path) -> None:
    before = path.stat()
    path.write_text(REAL.replace("= 3", "= 4") + "# a comment\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _replaced(path: Path) -> None:
    before = path.stat()
    other = path.with_name("new.toml")
    other.write_text(REAL.replace("= 3", "= 4"))
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    other.replace(path)


@pytest.mark.parametrize("change", [_same_size_same_mtime, _same_mtime_other_size, _replaced])
def test_a_changed_file_is_parsed_again(tmp_path: Path, state: Path, change: object) -> None:
    path = tmp_path / "config.toml"
    path.write_text(REAL)
    assert load_settings(path=path).tick.default_ticks == 3
    change(path)  # type: ignore[operator]
    assert load_settings(path=path).tick.default_ticks == 4


def test_a_changed_section_is_checked_again(tmp_path: Path, state: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(REAL)
    check_config(load_settings(path=path))
    path.write_text(REAL.replace("quietStart = 22", "quietStart = 99"))
    with pytest.raises(ConfigError, match=r"\[attention\].*quietStart"):
        check_config(load_settings(path=path))


def test_an_error_is_never_kept_and_reads_the_same_every_time(tmp_path: Path, state: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(REAL.replace("timezone", "timezon"))
    messages = []
    for _ in range(2):
        with pytest.raises(ConfigError) as caught:
            check_config(load_settings(path=path))
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "`timezon`" in messages[0]
    path.write_text("[tick\n")
    for _ in range(2):
        with pytest.raises(ConfigError, match="is not valid TOML"):
            load_settings(path=path)


HOSTILE = {
    "garbage": b"\x00not msgpack at all",
    "truncated": None,  # the real file, cut in half
    "another shape": msgspec.msgpack.encode({"stamp": "x", "data": 1}),
    "wrong types": msgspec.msgpack.encode([1, 2, 3, 4]),
    "another version": msgspec.msgpack.encode(
        ["tickloop 0.0.0", REAL.encode(), {"tick": {"defaultTicks": 9}}, b""]
    ),
    "empty": b"",
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_cache_file_that_is_not_exactly_ours_is_ignored_and_rewritten(
    tmp_path: Path, state: Path, kind: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(REAL)
    check_config(load_settings(path=path))
    cache = state / config_cache.CACHE_FILE
    good = cache.read_bytes()
    bad = HOSTILE[kind]
    cache.write_bytes(good[: len(good) // 2] if bad is None else bad)
    assert load_settings(path=path).tick.default_ticks == 3
    check_config(load_settings(path=path))
    assert cache.read_bytes() == good


def test_a_state_dir_that_cannot_be_written_still_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("TICKLOOP_STATE_DIR", str(blocker / "state"))  # under a file: never a dir
    path = tmp_path / "config.toml"
    path.write_text(REAL)
    for _ in range(2):
        settings = load_settings(path=path)
        check_config(settings)
        assert settings.tick.default_ticks == 3
    assert sorted(tmp_path.iterdir()) == sorted([blocker, path])


def test_a_parse_msgpack_cannot_give_back_is_not_kept(tmp_path: Path, state: Path) -> None:
    """A TOML date (msgpack gives a string back) or a NaN: parsed on every start, correctly."""
    path = tmp_path / "config.toml"
    path.write_text("[sources]\nsince = 2026-12-01\n")
    assert load_settings(path=path).sources["since"].isoformat() == "2026-12-01"
    assert load_settings(path=path).sources["since"].isoformat() == "2026-12-01"
    assert not (state / config_cache.CACHE_FILE).exists()


def test_a_section_msgpack_cannot_give_back_is_checked_every_time(tmp_path: Path, state: Path) -> None:
    """A date and the string of that date encode alike: the string passing must not pass the date."""
    path = tmp_path / "config.toml"
    path.write_text('[[sources.files]]\npath = "2026-12-01"\n')
    check_config(load_settings(path=path))
    path.write_text("[[sources.files]]\npath = 2026-12-01\n")
    with pytest.raises(ConfigError, match=r"\[sources\].*Expected `str`, got `date`"):
        check_config(load_settings(path=path))
