"""Reaching the dashboard from a phone, without HTTP: the public URL's rules, the Host allowlist it
adds, the login URL's base, the deep link kept across login, the running server's address, the QR."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickloop.errors import ConfigError
from tickloop.web.guard import safe_next
from tickloop.web.server import (
    Exposure,
    allowed_hosts,
    announce,
    check_exposure,
    check_public_url,
    public_origin,
    qr_lines,
    running_base,
    withdraw,
)

PUBLIC_URLS = [
    # (url, --insecure-http, refused with)
    ("https://dash.example.org", False, None),
    ("https://dash.example.org:8443/", False, None),
    ("https://phone-box.tail1234.ts.net", False, None),
    ("https://[fd7a:115c::5]:8765", False, None),
    ("http://192.168.1.5:8765", False, "plain HTTP"),
    ("http://192.168.1.5:8765", True, None),
    ("https://dash.example.org/tickloop", False, "no path"),
    ("https://ana@dash.example.org", False, "no path, query or login"),
    ("https://dash.example.org/?x=1", False, "no path"),
    ("https://dash.example.org:99999", False, "port"),
    ("ftp://dash.example.org", False, "must be an address"),
    ("dash.example.org", False, "must be an address"),
    ("https://dash example.org", False, "must be an address"),
    ("https://dash.example.org\x1b[2J", False, "must be an address"),
]


@pytest.mark.parametrize(("url", "insecure", "refused"), PUBLIC_URLS)
def test_a_public_url_is_https_and_only_a_scheme_host_and_port(
    url: str, insecure: bool, refused: str | None
) -> None:
    """Plain http:// only with --insecure-http; a path, a query, a login or a bad port is refused, named."""
    if refused is None:
        check_public_url(url, insecure_http=insecure)
    else:
        with pytest.raises(ConfigError, match=refused):
            check_public_url(url, insecure_http=insecure)


@given(st.text(max_size=60))
def test_any_public_url_is_accepted_or_refused_with_a_config_error(url: str) -> None:
    """Whatever is typed, the check either passes or raises ConfigError naming --public-url."""
    try:
        check_public_url(url, insecure_http=True)
    except ConfigError as exc:
        assert "--public-url" in exc.message


def test_the_public_url_adds_its_host_to_the_allowlist_and_is_the_login_base() -> None:
    """Loopback stays allowed; the public host is allowed with and without its default port; the
    printed login URL and the accepted Origin are the public ones."""
    exposure = Exposure(port=8765, public_url="https://Dash.Example.org/")
    check_exposure(exposure)
    hosts = allowed_hosts(exposure)
    assert {"127.0.0.1:8765", "dash.example.org", "dash.example.org:443"} <= hosts
    assert "dash.example.org:8765" not in hosts
    assert exposure.base == "https://Dash.Example.org"
    assert exposure.secure
    assert public_origin(exposure) == "https://dash.example.org"
    other = Exposure(port=8765, public_url="https://dash.example.org:8443")
    assert "dash.example.org:8443" in allowed_hosts(other)
    assert "dash.example.org" not in allowed_hosts(other)
    assert Exposure(host="0.0.0.0", port=9000).base == "http://127.0.0.1:9000"


def test_plain_http_public_url_needs_insecure_http() -> None:
    """A LAN address over http:// is refused unless --insecure-http accepts it."""
    with pytest.raises(ConfigError, match="--insecure-http"):
        check_exposure(Exposure(public_url="http://192.168.1.5:8765"))
    assert check_exposure(Exposure(public_url="http://192.168.1.5:8765", insecure_http=True)) == []


@pytest.mark.parametrize(
    ("path", "kept"),
    [
        ("/p/me/intents/43", True),
        ("/p/me/approvals?after=20", True),
        ("/p/caf%C3%A9/", True),
        ("//evil.example/p", False),
        ("/\\evil.example", False),
        ("https://evil.example/", False),
        ("p/me", False),
        ("/login?next=/x", False),
        ("/events", False),
        ("/p/me\r\nSet-Cookie: x=1", False),
        ("/p/" + "a" * 3000, False),
        ("", False),
    ],
)
def test_a_deep_link_kept_across_login_is_a_path_of_ours(path: str, kept: bool) -> None:
    """Only a local path (never another site, a header break, the login itself) survives login."""
    assert safe_next(path) is kept


def test_login_url_finds_the_running_server_and_no_other(tmp_path: Path) -> None:
    """The server announces its base URL; a missing file or a dead process means none runs."""
    assert running_base(tmp_path) is None
    announce(tmp_path, Exposure(port=8123))
    assert running_base(tmp_path) == "http://127.0.0.1:8123"
    assert oct((tmp_path / "server.json").stat().st_mode & 0o777) == "0o600"
    (tmp_path / "server.json").write_text('{"pid": 999999999, "base": "http://127.0.0.1:1"}')
    assert running_base(tmp_path) is None
    (tmp_path / "server.json").write_text("not json")
    assert running_base(tmp_path) is None
    announce(tmp_path, Exposure(port=8123))
    withdraw(tmp_path)
    assert not (tmp_path / "server.json").exists()
    assert os.getpid() > 0


def test_the_login_url_as_a_qr_code_is_square_block_characters() -> None:
    """segno draws the URL in half-block characters: every line the same width, nothing else."""
    lines = qr_lines("https://dash.example.org/login?token=" + "x" * 43).splitlines()
    assert len(lines) > 10
    assert len({len(line) for line in lines}) == 1
    assert set("".join(lines)) <= {" ", "█", "▀", "▄"}
