"""The dashboard's locks without HTTP: one-time login tokens, sessions, CSRF, rate limit, exposure."""

from __future__ import annotations

import ipaddress
import json
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickloop.errors import ConfigError
from tickloop.system import is_loopback_host as is_loopback
from tickloop.web.auth import RateLimit, Sessions, TokenStore, csrf_ok, token_hash
from tickloop.web.server import Exposure, check_exposure

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_a_login_token_is_stored_only_as_its_hash_in_a_private_file(tmp_path: Path) -> None:
    """The token file holds the sha256 of the token, never the token, and only its owner can read it."""
    tokens = TokenStore(tmp_path / "web")
    token = tokens.mint(now=NOW)
    text = tokens.path.read_text()
    assert token not in text
    assert json.loads(text)[0]["hash"] == token_hash(token)
    assert token_hash(token).startswith("sha256:")
    assert stat.S_IMODE(tokens.path.stat().st_mode) == 0o600


def test_a_login_token_works_once_and_not_after_it_expires(tmp_path: Path) -> None:
    """The printed URL logs in once; a second use, a wrong token and an expired one are refused."""
    tokens = TokenStore(tmp_path)
    first, second = tokens.mint(now=NOW), tokens.mint(now=NOW)
    assert not tokens.consume("wrong", now=NOW)
    assert tokens.consume(first, now=NOW)
    assert not tokens.consume(first, now=NOW)
    assert not tokens.consume(second, now=NOW + timedelta(hours=25))


def test_a_session_expires_after_its_lifetime_and_ends_on_logout() -> None:
    """A session cookie stops working after the lifetime, and at once after logout."""
    sessions = Sessions(ttl=timedelta(hours=1))
    one, two = sessions.start(now=NOW), sessions.start(now=NOW)
    assert sessions.get(one.id, now=NOW + timedelta(minutes=59)) is one
    assert sessions.get(one.id, now=NOW + timedelta(hours=1)) is None
    sessions.end(two.id)
    assert sessions.get(two.id, now=NOW) is None
    assert sessions.get(None, now=NOW) is None
    assert one.csrf != two.csrf


@pytest.mark.parametrize(
    ("expected", "given", "ok"),
    [("abc", "abc", True), ("abc", "abd", False), ("abc", "", False), ("abc", None, False), ("", "", False)],
)
def test_csrf_tokens_must_match_exactly(expected: str, given: str | None, ok: bool) -> None:
    """A POST's CSRF token must equal the session's; missing or empty never passes."""
    assert csrf_ok(expected, given) is ok


def test_failed_logins_are_limited_per_client_and_the_window_slides() -> None:
    """Five failures block that client (not others) until the oldest leaves the window."""
    limit = RateLimit(per_client=5, total=8, window=timedelta(minutes=15))
    for i in range(5):
        assert limit.blocked("a", now=NOW + timedelta(seconds=i)) is None
        limit.failed("a", now=NOW + timedelta(seconds=i))
    wait = limit.blocked("a", now=NOW + timedelta(seconds=10))
    assert wait is not None
    assert timedelta(minutes=14) < wait <= timedelta(minutes=15)
    assert limit.blocked("b", now=NOW) is None
    assert limit.blocked("a", now=NOW + timedelta(minutes=16)) is None


def test_failures_from_many_clients_hit_the_total_limit() -> None:
    """Spreading guesses over addresses still runs into the overall limit."""
    limit = RateLimit(per_client=5, total=8)
    for i in range(8):
        limit.failed(f"10.0.0.{i}", now=NOW)
    assert limit.blocked("10.0.0.99", now=NOW) is not None


@pytest.mark.parametrize(
    ("exposure", "refused"),
    [
        (Exposure("127.0.0.1"), None),
        (Exposure("::1"), None),
        (Exposure("localhost"), None),
        (Exposure("0.0.0.0"), "--allow-remote"),
        (Exposure("192.168.1.5", allow_remote=True), "needs TLS"),
        (Exposure("192.168.1.5", tls_cert=Path("/nonexistent.pem")), "--tls-cert and --tls-key go together"),
    ],
)
def test_exposure_rules(exposure: Exposure, refused: str | None) -> None:
    """Loopback is served as-is; another address needs --allow-remote and TLS, else a named refusal."""
    if refused is None:
        assert check_exposure(exposure) == []
    else:
        with pytest.raises(ConfigError, match=refused):
            check_exposure(exposure)


def test_insecure_http_on_a_remote_address_is_served_with_a_warning() -> None:
    """--allow-remote --insecure-http starts, but prints why it is dangerous."""
    [warning] = check_exposure(Exposure("10.1.2.3", allow_remote=True, insecure_http=True))
    assert "WARNING" in warning
    assert "plain HTTP" in warning


def test_tls_files_that_do_not_exist_are_named(tmp_path: Path) -> None:
    """A typo in a TLS path fails at start, naming the file."""
    missing = tmp_path / "cert.pem"
    with pytest.raises(ConfigError, match=r"cert\.pem does not exist"):
        check_exposure(Exposure("10.1.2.3", allow_remote=True, tls_cert=missing, tls_key=missing))


@given(st.ip_addresses())
def test_no_non_loopback_address_is_served_without_allow_remote(address: ipaddress._BaseAddress) -> None:
    """Whatever the address, a non-loopback one is refused unless --allow-remote says so."""
    host = str(address)
    if is_loopback(host):
        assert check_exposure(Exposure(host)) == []
    else:
        assert not ipaddress.ip_address(host).is_loopback
        with pytest.raises(ConfigError):
            check_exposure(Exposure(host))


@given(st.text(max_size=40))
def test_is_loopback_never_accepts_a_name_other_than_localhost(host: str) -> None:
    """A hostname that could resolve anywhere is never taken for loopback."""
    try:
        parsed: bool | None = ipaddress.ip_address(host).is_loopback
    except ValueError:
        parsed = None
    assert is_loopback(host) is (host == "localhost" or parsed is True)
