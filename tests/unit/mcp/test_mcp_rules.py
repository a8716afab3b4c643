"""The MCP face's rules that need no server: binding, the rate limit, tokens, unreadable lines, ladder."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickloop.errors import ValidationError
from tickloop.mcp import http
from tickloop.mcp import token as tokens
from tickloop.mcp.stdio import INVALID_REQUEST, PARSE_ERROR, problem
from tickloop.operator.domain import Verdict
from tickloop.operator.explain import deciding_rule


@pytest.mark.parametrize(
    ("options", "outcome"),
    [
        (http.Options(), "ok"),
        (http.Options(host="::1"), "ok"),
        (http.Options(host="localhost"), "ok"),
        (http.Options(host="0.0.0.0"), "--allow-remote"),
        (http.Options(host="192.168.1.5", allow_remote=True), "needs TLS"),
        (http.Options(host="192.168.1.5", allow_remote=True, insecure_http=True), "warn"),
        (http.Options(host="192.168.1.5", allow_remote=True, certfile=Path("c"), keyfile=Path("k")), "ok"),
        (http.Options(certfile=Path("c")), "both --certfile and --keyfile"),
    ],
)
def test_binding_rules(options: http.Options, outcome: str) -> None:
    """Loopback needs nothing; the network needs --allow-remote and TLS, or --insecure-http with a warning."""
    if outcome in {"ok", "warn"}:
        warnings = http.check_bind(options)
        assert bool(warnings) is (outcome == "warn")
        return
    with pytest.raises(ValidationError, match=outcome):
        http.check_bind(options)


def test_origin_allowlist_is_this_servers_loopback_origins_plus_the_named_ones() -> None:
    """Only this port's loopback origins and --allow-origin values pass; another port or host does not."""
    found = http.allowed_origins(http.Options(origins=("https://app.example/",)), 8765)
    assert "http://127.0.0.1:8765" in found
    assert "http://localhost:8765" in found
    assert "https://app.example" in found
    assert "http://127.0.0.1:8766" not in found
    assert "http://evil.example" not in found


def test_rate_limit_refills_over_time_per_client() -> None:
    """A client that spent its burst waits for refill; another client is not affected."""
    now = [0.0]
    limit = http.RateLimit(per_minute=60, clock=lambda: now[0])
    assert [limit.allow("a") for _ in range(7)] == [True] * 6 + [False]
    assert limit.allow("b")
    now[0] += 1.0
    assert limit.allow("a")
    assert not limit.allow("a")


def test_token_is_kept_as_a_hash_and_checked(tmp_path: Path) -> None:
    """issue() returns a token once; only its hash is stored 0600; the keyring knows it and nothing else."""
    path = tmp_path / "state" / tokens.FILE_NAME
    keyring = tokens.Keyring(path)
    token = tokens.issue(path)
    assert token not in path.read_text(encoding="utf-8")
    assert path.stat().st_mode & 0o777 == 0o600
    assert keyring.who(token) == "default"
    assert keyring.who(token + "x") is None
    assert keyring.who("") is None
    with pytest.raises(ValidationError, match="shown only once"):
        tokens.issue(path)
    rotated = tokens.issue(path, rotate=True)
    assert keyring.who(rotated) == "default"
    assert keyring.who(token) is None  # the old token stops working, read from the file again
    assert path.stat().st_mode & 0o777 == 0o600


def test_named_tokens_are_listed_and_revoked_one_by_one(tmp_path: Path) -> None:
    """Each agent's token has its name; revoking one leaves the others working."""
    path = tmp_path / tokens.FILE_NAME
    keyring = tokens.Keyring(path)
    claude, cursor = tokens.issue(path, name="claude-desktop"), tokens.issue(path, name="cursor")
    assert [name for name, _ in tokens.listing(path)] == ["claude-desktop", "cursor"]
    assert (keyring.who(claude), keyring.who(cursor)) == ("claude-desktop", "cursor")
    tokens.revoke(path, "claude-desktop")
    assert (keyring.who(claude), keyring.who(cursor)) == (None, "cursor")
    with pytest.raises(ValidationError, match="no MCP token is named 'claude-desktop'"):
        tokens.revoke(path, "claude-desktop")


def test_the_first_versions_single_token_file_still_works(tmp_path: Path) -> None:
    """A token file written before named tokens reads as the token `default`."""
    path = tmp_path / tokens.FILE_NAME
    path.write_text(json.dumps({"hash": tokens.digest("old-token"), "issued": "2026-01-01"}))
    path.chmod(0o600)
    assert tokens.Keyring(path).who("old-token") == "default"
    assert tokens.listing(path) == [("default", "2026-01-01")]


@pytest.mark.parametrize("name", ["", "Claude", "a b", "-x", "x" * 65, "名前", "a/b", "a\x1b"])
def test_hostile_token_names_are_refused(tmp_path: Path, name: str) -> None:
    """A token name that could not be shown or stored safely is refused, naming --name; nothing is written."""
    path = tmp_path / tokens.FILE_NAME
    with pytest.raises(ValidationError, match="--name"):
        tokens.issue(path, name=name)
    assert not path.exists()


@pytest.fixture(scope="module")
def one_token(tmp_path_factory: pytest.TempPathFactory) -> tuple[tokens.Keyring, str]:
    """A token file holding one issued token, and that token."""
    path = tmp_path_factory.mktemp("tokens") / tokens.FILE_NAME
    return tokens.Keyring(path), tokens.issue(path)


@given(st.text(max_size=64))
def test_no_other_text_passes_the_token_check(one_token: tuple[tokens.Keyring, str], guess: str) -> None:
    """Whatever is presented, only the issued token matches."""
    keyring, token = one_token
    assert (keyring.who(guess) is None) is (guess != token)


@pytest.mark.parametrize(
    ("line", "code", "words"),
    [
        (b'{"jsonrpc":"2.0","id":3,"method":"x","params":{"t":"\xc3\x28"}}', PARSE_ERROR, "not valid UTF-8"),
        (
            b'{"jsonrpc":"2.0","id":3,"method":"x","params":{"t":"\\udfff"}}',
            INVALID_REQUEST,
            "lone surrogate",
        ),
        (
            b'{"jsonrpc":"2.0","id":3,"method":"x","params":' + b"[" * 70 + b"]" * 70 + b"}",
            INVALID_REQUEST,
            "nests",
        ),
        (
            b'{"jsonrpc":"2.0","id":3,"method":"x","params":' + b"[" * 9000 + b"]" * 9000 + b"}",
            PARSE_ERROR,
            "nests",
        ),
        (b'{"jsonrpc":"2.0","id":3,', PARSE_ERROR, "not valid JSON"),
    ],
)
def test_unreadable_lines_are_named(line: bytes, code: int, words: str) -> None:
    """Each kind of unreadable message gets its JSON-RPC code, a message naming it, and the request's id."""
    found = problem(line)
    assert found is not None
    assert found[0] == 3
    assert found[1] == code
    assert words in found[2]


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), st.lists, max_leaves=20))
def test_readable_messages_pass_untouched(params: object) -> None:
    """Any valid JSON message of modest depth is passed to the SDK."""
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"p": params}}).encode()
    surrogate = any(0xD800 <= ord(c) <= 0xDFFF for c in line.decode("utf-8"))
    assert (problem(line) is None) or surrogate


@pytest.mark.parametrize(
    ("verdict", "reasons", "rule"),
    [
        (Verdict.ALLOWED, ("gate.allowed: reversible and untainted",), "gate.allowed"),
        (Verdict.BLOCKED, ("gate.money: m", "gate.block_list: b"), "gate.block_list"),
        (
            Verdict.REQUIRES_APPROVAL,
            ("gate.tainted_external: t", "gate.external_or_irreversible: e", "gate.untrusted_origin: mcp"),
            "gate.tainted_external",
        ),
        (Verdict.BLOCKED, ("drift.repeat: 'note|x|' already failed",), "drift.repeat"),
        (None, (), None),
    ],
)
def test_the_deciding_rule_is_the_first_reason_asking_for_the_verdict(
    verdict: Verdict | None, reasons: tuple[str, ...], rule: str | None
) -> None:
    """explain_intent names the rule whose verdict the intent got, not a note like the origin."""
    assert deciding_rule(verdict, reasons) == rule


async def test_accepted_connections_have_tcp_nodelay() -> None:
    """The listening socket says TCP, so asyncio sets TCP_NODELAY on each connection: no answer
    waits ~40 ms for the client's delayed ACK (Nagle's algorithm)."""
    sock = http.bind(http.Options(port=0))
    seen: list[int] = []

    async def accepted(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = writer.get_extra_info("socket")
        seen.append(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(accepted, sock=sock)
    async with server:
        _, writer = await asyncio.wait_for(asyncio.open_connection(*sock.getsockname()[:2]), timeout=10)
        for _ in range(200):
            if seen:
                break
            await asyncio.sleep(0.01)
        writer.close()
    assert seen == [1]
