"""Redaction of exported text: the scrubber, the keyed digest, and ``REDACTION.md``.

One place for every export format (the dataset tables here, the Inspect logs too). Text is replaced
by a keyed digest and its length unless ``keep_text``; kept text is scrubbed class by class
(``CLASSES``), each class counted for the report.

The digest is HMAC-SHA256 under the run's secret (``run.key`` in the run directory, 0600, never
exported): equal replies compare equal within one export, but nobody without the key can confirm a
guessed reply by hashing it.

The machine's user and host names are scrubbed only where they are identities (in paths, e-mail
addresses, URLs, ``user@host``, ``host:port``), so "root cause" survives a user named ``root``.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import hmac
import ipaddress
import os
import re
import secrets
import socket
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KEY_FILE = "run.key"

#: (class, what becomes of it): the rows of REDACTION.md, in order.
CLASSES: tuple[tuple[str, str], ...] = (
    ("timestamps", "wall-clock times are never exported: every time is an offset from the session's start"),
    (
        "provider data",
        (
            "base URLs, request ids, system fingerprints and response headers are never read; the model ids "
            "a provider returned are exported in `runs`, scrubbed like kept text"
        ),
    ),
    ("text (replaced by keyed digest and length)", "replies; only with --keep-text is scrubbed text kept"),
    ("error (replaced by keyed digest and length)", "failure details of refused and crashed sessions"),
    ("url", "URLs in kept text become <url>"),
    ("email", "e-mail addresses in kept text become <email>"),
    ("user_at_host", "user@host in kept text becomes <user@host>"),
    ("aws_key", "AWS access key ids (AKIA..., ASIA...) in kept text become <secret>"),
    ("secret", "API keys, bearer tokens and long key-like strings in kept text become <secret>"),
    ("assignment", "the value of password=, token=, secret=, api_key= in kept text becomes <secret>"),
    ("ip", "IPv4 and IPv6 addresses in kept text become <ip>"),
    ("path", "absolute and home-relative paths (also inside `backticks`) in kept text become <path>"),
    ("host", "this machine's host name where it names the host (host:port, host:/path, its FQDN)"),
)

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?![\w.]*\w)"
#: candidates only: ``_ip6`` keeps what ``ipaddress`` does not read as an IPv6 address (12:30:45)
_IPV6 = (
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?(?:%[\w.]+)?(?![\w:])"
)
_AWS = r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"
_SECRET_WORDS = r"password|passwd|pwd|passphrase|token|secret|api[_-]?key|access[_-]?key"  # noqa: S105
_ASSIGNMENT = rf"(?i)\b((?:\w*[_-])?(?:{_SECRET_WORDS})\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;&\"'`]+)"
_PATH = r"(?:(?<=[\s\"'(=:`\[])|^)(?:~[\w.-]*/|[A-Za-z]:\\|/(?=[\w.~-]))[^\s\"'<>`)\]]*"


def _ip6(match: re.Match[str]) -> str | None:
    try:
        ipaddress.IPv6Address(match.group(0).split("%")[0])
    except ValueError:
        return None
    return "<ip>"


@dataclass(frozen=True, slots=True)
class Rule:
    """One class of scrubbing: a pattern and its replacement (a function may decline a match)."""

    kind: str
    pattern: re.Pattern[str]
    replace: str | Callable[[re.Match[str]], str | None]
    #: the rule can match only text holding one of these (a cheap test before the regex); () any text
    needs: tuple[str, ...] = ()


def machine_names() -> tuple[str, tuple[str, ...]]:
    """This machine's user name and host names (short and fully qualified)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = os.environ.get("USER", "")
    hosts = {socket.gethostname()}
    with contextlib.suppress(OSError):
        hosts.add(socket.getfqdn())
    return user, tuple(sorted((h for h in hosts if h and h != "localhost"), key=len, reverse=True))


def rules(user: str, hosts: Sequence[str]) -> list[Rule]:
    """The scrubbing rules, in the order they apply (a URL before the paths inside it, ...)."""
    out = [
        Rule("url", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<>`]+"), "<url>", ("://",)),
        Rule("email", re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"), "<email>", ("@",)),
        Rule("user_at_host", re.compile(r"(?<![\w@])[\w.-]+@[\w-]+\b"), "<user@host>", ("@",)),
        Rule("aws_key", re.compile(_AWS), "<secret>", ("A",)),
        Rule("assignment", re.compile(_ASSIGNMENT), lambda m: f"{m.group(1)}<secret>", ("=", ":")),
        Rule(
            "secret",
            re.compile(r"\b(?:sk|pk|rk|ghp|gho|ghs|xox[abpr])[-_][A-Za-z0-9_-]{12,}"),
            "<secret>",
            ("-", "_"),
        ),
        Rule("secret", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"), "<secret>"),
        Rule("secret", re.compile(r"\b[A-Fa-f0-9]{32,}\b|\b[A-Za-z0-9+/_-]{40,}={0,2}"), "<secret>"),
        Rule("ip", re.compile(_IPV4), "<ip>", (".",)),
        Rule("ip", re.compile(_IPV6), _ip6, (":",)),
        Rule("path", re.compile(_PATH, re.MULTILINE), "<path>", ("/", "\\", "~")),
    ]
    dotted = [re.escape(h) for h in hosts if "." in h]
    if dotted:  # a fully qualified name is never ordinary prose
        out.append(
            Rule("host", re.compile(rf"(?i)(?<![\w.-])(?:{'|'.join(dotted)})(?![\w-])"), "<host>", (".",))
        )
    if hosts:  # host:port and scp's host:/path name the machine; a bare word does not
        names = "|".join(re.escape(h) for h in hosts)
        out.append(
            Rule("host", re.compile(rf"(?i)(?<![\w.-])(?:{names})(?=:(?:\d|/|<path>))"), "<host>", (":",))
        )
    if user:  # a user name left where a path-like form still names it (home-relative, Windows)
        home = rf"(?i)(?<=[\\/]){re.escape(user)}(?=[\\/])"
        out.append(Rule("path", re.compile(home), "<user>", ("/", "\\")))
    return out


@dataclass(slots=True)
class Redactor:
    """Scrubs text and counts what it redacted, by class (for REDACTION.md).

    ``key`` keys the digests (HMAC-SHA256); without one (``--no-redact``) they are plain sha256."""

    keep_text: bool = False
    key: bytes | None = None
    user: str | None = None  #: default: this machine's user name
    hosts: Sequence[str] | None = None  #: default: this machine's host names
    counts: Counter[str] = field(default_factory=Counter)
    _rules: list[Rule] = field(default_factory=list)

    def __post_init__(self) -> None:
        user, hosts = machine_names()
        if self.user is not None:
            user = self.user
        self._rules = rules(user, hosts if self.hosts is None else self.hosts)

    def scrub(self, text: str) -> str:
        for rule in self._rules:
            if rule.needs and not any(n in text for n in rule.needs):
                continue
            if isinstance(rule.replace, str):  # the regex engine replaces and counts on its own
                text, n = rule.pattern.subn(rule.replace, text)
                self.counts[rule.kind] += n
            else:
                text = self._apply(rule, text)
        return text

    def _apply(self, rule: Rule, text: str) -> str:
        def one(match: re.Match[str]) -> str:
            out = rule.replace if isinstance(rule.replace, str) else rule.replace(match)
            if out is None:
                return match.group(0)
            self.counts[rule.kind] += 1
            return out

        return rule.pattern.sub(one, text)

    def digest(self, text: str) -> str:
        """``hmac-sha256:<hex>`` under the run's key; ``sha256:<hex>`` without one."""
        if self.key is None:
            return "sha256:" + hashlib.sha256(text.encode()).hexdigest()
        return "hmac-sha256:" + hmac.new(self.key, text.encode(), hashlib.sha256).hexdigest()

    def text_fields(self, text: str, prefix: str) -> dict[str, Any]:
        """``<prefix>_hash`` always; the scrubbed text only with ``keep_text``."""
        out: dict[str, Any] = {f"{prefix}_hash": self.digest(text)}
        if self.keep_text:
            out[prefix] = self.scrub(text)
        else:
            self.counts[f"{prefix} (replaced by keyed digest and length)"] += 1 if text else 0
            out[prefix] = None
        return out


class NoRedaction(Redactor):
    """``--no-redact``: text kept as it is, plain sha256 digests; the report says nothing was redacted."""

    def __init__(self) -> None:
        super().__init__(keep_text=True)

    def scrub(self, text: str) -> str:
        return text


def new_key(directory: Path) -> bytes:
    """Create ``run.key`` (32 random bytes, hex, mode 0600) unless the directory has one; return it."""
    path = directory / KEY_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_key(path)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(secrets.token_hex(32) + "\n")
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    return bytes.fromhex(path.read_text(encoding="ascii").strip())


def run_key(directories: Iterable[Path]) -> bytes:
    """The key of an export over these run directories: the least of their keys (shards made on
    different machines each hold one; the least is the same whatever order they are given in).
    A run directory from before keys existed gets one now."""
    dirs = list(directories)
    held = [_read_key(d / KEY_FILE) for d in dirs if (d / KEY_FILE).is_file()]
    return min(held) if held else new_key(dirs[0])


def report(redactor: Redactor, *, redact: bool) -> str:
    """The text of ``REDACTION.md``: what each class became and how many values it redacted."""
    lines = ["# Redaction report", ""]
    if not redact:
        lines += ["Exported with `--no-redact`: nothing was redacted. Do not publish this export.", ""]
        return "\n".join(lines)
    lines += [
        "Digests are HMAC-SHA256 under this run's secret (`run.key` in the run directory, never",
        "exported): equal texts have equal digests within this export; a guess cannot be confirmed.",
        "",
        "| field class | values redacted | how |",
        "| --- | --- | --- |",
    ]
    for kind, how in CLASSES:
        never = kind in ("timestamps", "provider data")
        shown = "all (never read)" if never else str(redactor.counts.get(kind, 0))
        lines.append(f"| {kind} | {shown} | {how} |")
    return "\n".join(lines) + "\n"
