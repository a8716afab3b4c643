"""The --keep-text scrubber: every class planted in generated prose is gone, and the prose is not."""

from __future__ import annotations

import ipaddress
import string

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tickloop.experiment.redaction import CLASSES, Redactor, report

USER, HOSTS = "root", ("h1", "build-7.corp.example")

#: Words of ordinary prose, among them the user and host names where they name nothing.
WORDS = [
    "the", "root", "cause", "was", "a", "tick", "h1", "step", "[tools.workspace]", "root:", "version",
    "3.5", "and/or", "12:30:45", "std::vector", "42", "tokens:", "passwords", "e.g.", "(see", "below)",
    "file.py", "README.md", "x/y", "ok,", "done.", "Root", "cause:", "AKIA", "—",
]  # fmt: skip

prose = st.lists(st.sampled_from(WORDS), min_size=0, max_size=12).map(" ".join)
_octet = st.integers(0, 255)
ipv4 = st.tuples(_octet, _octet, _octet, _octet).map(lambda t: ".".join(map(str, t)))
ipv6 = st.integers(1, 2**128 - 1).flatmap(
    lambda n: st.sampled_from([ipaddress.IPv6Address(n).compressed, ipaddress.IPv6Address(n).exploded])
)
_upper = st.text(string.ascii_uppercase + string.digits, min_size=16, max_size=16)
aws = st.sampled_from(["AKIA", "ASIA"]).flatmap(lambda p: _upper.map(lambda s: p + s))
_segment = st.text(string.ascii_lowercase + string.digits + "_-.", min_size=1, max_size=8).filter(
    lambda s: s not in (".", "..")
)
abs_path = st.lists(_segment, min_size=1, max_size=4).map(lambda parts: "/" + "/".join(parts))
backticked = abs_path.map(lambda p: f"`{p}`")
_value = st.text(string.ascii_letters + string.digits + "-_.!$%+/", min_size=1, max_size=20)
assignment = st.tuples(
    st.sampled_from(["password", "token", "api_key", "DB_PASSWORD"]), st.sampled_from("=:"), _value
)
user_at_host = st.sampled_from([f"{USER}@{HOSTS[0]}", "alice@h1", "deploy@ci"])
host_port = st.integers(1, 65535).map(lambda p: f"{HOSTS[0]}:{p}")
email = st.sampled_from(["alice@example.org", f"{USER}@corp.example.com"])
url = st.sampled_from(["https://api.example.org/v1/x", "http://h1:8080/", "s3://bucket/key"])
home = st.sampled_from([f"/home/{USER}/notes", f"~{USER}/x", f"C:\\Users\\{USER}\\x"])


def _redactor() -> Redactor:
    return Redactor(keep_text=True, user=USER, hosts=HOSTS)


@settings(max_examples=300, deadline=None)
@given(text=prose)
def test_ordinary_prose_is_unchanged(text: str) -> None:
    """Prose with the user and host names used as words ("root cause", "root:", "h1") is not touched."""
    redactor = _redactor()
    assert redactor.scrub(text) == text
    assert sum(redactor.counts.values()) == 0


def _planted(kind: str, value: str) -> tuple[str, str]:
    return kind, value


PLANTS = st.one_of(
    ipv4.map(lambda v: _planted("ip", v)),
    ipv6.map(lambda v: _planted("ip", v)),
    aws.map(lambda v: _planted("aws_key", v)),
    backticked.map(lambda v: _planted("path", v.strip("`"))),
    abs_path.map(lambda v: _planted("path", v)),
    user_at_host.map(lambda v: _planted("user_at_host", v)),
    host_port.map(lambda v: _planted("host", v)),
    email.map(lambda v: _planted("email", v)),
    url.map(lambda v: _planted("url", v)),
    home.map(lambda v: _planted("path", v)),
)


@settings(max_examples=500, deadline=None)
@example(before="", after="and/or", plant=("path", "/o"), wrap="{}")
@given(before=prose, after=prose, plant=PLANTS, wrap=st.sampled_from(["{}", "`{}`", "({})", "'{}'"]))
def test_every_planted_class_is_scrubbed_and_the_prose_around_it_kept(
    before: str, after: str, plant: tuple[str, str], wrap: str
) -> None:
    """Each class planted anywhere in prose (bare, in backticks, parentheses or quotes) leaves no
    trace, is counted under its class, and the prose on either side survives."""
    kind, value = plant
    text = f"{before} {wrap.format(value)} {after}"
    redactor = _redactor()
    out = redactor.scrub(text)
    assert out.startswith(f"{before} ")
    assert out.endswith(f" {after}")
    # the prose may hold the value's characters itself ("/o" inside "and/or"): look where it was planted
    assert value not in out[len(before) + 1 : len(out) - len(after) - 1]
    assert redactor.counts[kind] >= 1, (kind, value, out)


@settings(max_examples=300, deadline=None)
@given(before=prose, after=prose, parts=assignment)
def test_secret_assignments_lose_their_value_and_keep_their_name(
    before: str, after: str, parts: tuple[str, str, str]
) -> None:
    """`password=...` and `token: ...` keep the name and lose the value."""
    name, sep, value = parts
    out = _redactor().scrub(f"{before} {name}{sep}{value} {after}")
    assert f"{name}{sep}<secret>" in out
    assert f"{name}{sep}{value}" not in out
    assert out.endswith(f" {after}")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("connect to 10.0.0.7 now", "connect to <ip> now"),
        ("listen on [::1]:8080", "listen on [<ip>]:8080"),
        ("gw fe80::1%eth0 up", "gw <ip> up"),
        ("key AKIAIOSFODNN7EXAMPLE here", "key <secret> here"),
        ("edit `/etc/tickloop/config.toml` first", "edit `<path>` first"),
        ("password=hunter2 and token: abc123", "password=<secret> and token: <secret>"),
        ("ssh root@h1 then", "ssh <user@host> then"),
        ("copy to h1:/srv/data", "copy to <host>:<path>"),
        ("on build-7.corp.example today", "on <host> today"),
        ("[tools.workspace] root: the root cause", "[tools.workspace] root: the root cause"),
        ("version 1.2.3 at 12:30:45 and std::vector", "version 1.2.3 at 12:30:45 and std::vector"),
        ("and/or tokens: 5", "and/or tokens: 5"),
    ],
)
def test_the_scrubber_table(text: str, expected: str) -> None:
    """Each rule on a typical case, and the prose that must survive."""
    assert _redactor().scrub(text) == expected


def test_the_report_counts_each_class() -> None:
    """REDACTION.md has one row per class with the number of values it redacted."""
    redactor = _redactor()
    redactor.scrub("10.0.0.1 and 10.0.0.2 and AKIAIOSFODNN7EXAMPLE")
    text = report(redactor, redact=True)
    assert "| ip | 2 |" in text
    assert "| aws_key | 1 |" in text
    assert "| email | 0 |" in text
    assert all(f"| {kind} |" in text for kind, _ in CLASSES)
