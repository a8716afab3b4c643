"""The one staging path: every face's intent is gate-stamped the moment it is stored."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickloop.errors import ValidationError
from tickloop.operator import staging
from tickloop.operator.domain import IntentStatus, Tier, Verdict
from tickloop.operator.gate import GateSettings
from tickloop.operator.handlers.checks import CHECKS, check_draft
from tickloop.operator.handlers.registry import HANDLERS
from tickloop.operator.store import Store, open_store

P = "me"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def store() -> Iterator[Store]:
    with open_store("memory://") as opened:
        opened.create_profile(P, now=NOW)
        yield opened


#: What an email needs to be staged: one recipient and a body.
MAIL = {"recipient": "ann@example.org", "payload": {"body": "hello"}}


def _draft(action_type: str, origin: str = staging.ORIGIN_CLI, **kw: object) -> staging.Draft:
    if action_type == "email":
        kw = {**MAIL, **kw}
    return staging.Draft(action_type=action_type, title="t", origin=origin, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("action_type", "origin", "allow", "status", "tier"),
    [
        ("note", staging.ORIGIN_CLI, [], IntentStatus.READY, Tier.REVERSIBLE),
        # Another agent's reversible intent waits for the person too, unless [mcp] autoAllow names it.
        ("note", staging.ORIGIN_MCP, [], IntentStatus.REQUIRES_APPROVAL, Tier.REVERSIBLE),
        ("note", "mcp:claude-desktop", [], IntentStatus.REQUIRES_APPROVAL, Tier.REVERSIBLE),
        ("email", staging.ORIGIN_CLI, [], IntentStatus.REQUIRES_APPROVAL, Tier.EXTERNAL),
        ("email", staging.ORIGIN_CLI, ["email"], IntentStatus.READY, Tier.EXTERNAL),
        # Another agent's intent is untrusted in origin: the profile rule does not auto-allow it.
        ("email", staging.ORIGIN_MCP, ["email"], IntentStatus.REQUIRES_APPROVAL, Tier.EXTERNAL),
    ],
)
def test_stage_stamps_the_verdict_at_once(
    store: Store, action_type: str, origin: str, allow: list[str], status: IntentStatus, tier: Tier
) -> None:
    """No intent is left ``proposed``: the gate's verdict decides its status, the handler its tier."""
    made, stamp = staging.stage(store, P, _draft(action_type, origin), GateSettings(allow=allow), now=NOW)
    assert (made.status, made.tier, made.origin.tick_kind) == (status, tier, origin)
    assert store.get_intent(P, made.id).status is status
    assert made.verdict_reasons == stamp.reasons


def test_an_mcp_intent_says_why_it_was_not_auto_allowed(store: Store) -> None:
    """The reason names the untrusted origin, and the intent is recorded as tainted."""
    made, _ = staging.stage(
        store, P, _draft("email", staging.ORIGIN_MCP), GateSettings(allow=["email"]), now=NOW
    )
    assert made.origin.tainted
    assert any(r.startswith("gate.untrusted_origin") for r in made.verdict_reasons)


@pytest.mark.parametrize(
    ("action_type", "auto_allow", "status"),
    [
        ("note", {"note"}, IntentStatus.READY),
        ("note", {"wiki_write"}, IntentStatus.REQUIRES_APPROVAL),
        ("wiki_write", {"note", "wiki_write"}, IntentStatus.READY),
        # autoAllow never lifts the gate's own verdict: an email still needs the person.
        ("email", {"email"}, IntentStatus.REQUIRES_APPROVAL),
    ],
)
def test_mcp_auto_allow_opts_named_reversible_types_in(
    store: Store, action_type: str, auto_allow: set[str], status: IntentStatus
) -> None:
    """[mcp] autoAllow lets an MCP intent of a named reversible type be ready without the person."""
    made, stamp = staging.stage(
        store, P, _draft(action_type, "mcp:cursor"), GateSettings(), now=NOW, auto_allow=frozenset(auto_allow)
    )
    assert made.status is status
    assert made.origin.tick_kind == "mcp:cursor"
    waits = [r for r in stamp.reasons if r.startswith("mcp.waits_for_person")]
    assert bool(waits) is (action_type not in auto_allow)


def test_a_tainted_allowed_intent_is_not_called_untainted(store: Store) -> None:
    """The reasons shown for an intent never say both "untainted" and "judged as tainted"."""
    made, _ = staging.stage(
        store, P, _draft("note", staging.ORIGIN_MCP), GateSettings(), now=NOW, auto_allow=frozenset({"note"})
    )
    text = " ".join(made.verdict_reasons)
    assert "judged as tainted" in text
    assert "untainted" not in text
    assert made.verdict_reasons[0] == "gate.allowed: reversible"


def test_a_preset_verdict_is_recorded_instead_of_the_gates(store: Store) -> None:
    """The drift guard's block goes through the same path and is never made ready."""
    preset = (Verdict.BLOCKED, ["drift.repeat: 'note|t|' already failed"])
    made, stamp = staging.stage(store, P, _draft("note"), GateSettings(), now=NOW, preset=preset)
    assert (made.status, stamp.verdict, made.verdict_reasons) == (
        IntentStatus.BLOCKED,
        Verdict.BLOCKED,
        ("drift.repeat: 'note|t|' already failed",),
    )


@pytest.mark.parametrize("origin", [staging.ORIGIN_CLI, staging.ORIGIN_MCP, staging.ORIGIN_FAST])
@pytest.mark.parametrize("action_type", ["emial", "wire_transfer", "draft", "", "Email"])
def test_an_unregistered_type_is_refused_with_the_valid_ones_and_nothing_is_stored(
    store: Store, action_type: str, origin: str
) -> None:
    """Whichever face stages it, an unknown type is refused naming every valid type; no row is written."""
    with pytest.raises(
        ValidationError, match=r"unknown action type .*use one of note, wiki_write, draft_prep"
    ):
        staging.stage(store, P, _draft(action_type, origin), GateSettings(), now=NOW)
    assert store.list_intents(P) == []


#: (action type, recipient, payload, the fragment of the refusal; None: accepted)
PAYLOADS: list[tuple[str, str, dict[str, object], str | None]] = [
    ("email", "ann@example.org", {"body": "hi"}, None),
    ("email", "a@b.org, c@d.org", {"body": "hi"}, "exactly one address"),
    ("email", "a@b.org; c@d.org", {"body": "hi"}, "exactly one address"),
    ("email", "ann@example.org\r\nBcc: x@y.z", {"body": "hi"}, "exactly one address"),
    ("email", "", {"body": "hi"}, "exactly one address"),
    ("email", "Ann <ann@example.org>", {"body": "hi"}, "exactly one address"),
    ("email", "ann@example.org", {}, "payload.body is required"),
    ("email", "ann@example.org", {"body": "   "}, "payload.body is required"),
    ("email", "ann@example.org", {"body": 5}, "payload.body must be text"),
    ("email", "ann@example.org", {"body": "hi", "subject": ["x"]}, "payload.subject must be text"),
    ("note", "", {"body": "x" * 100_001}, "payload.body must be text of at most 100000"),
    ("note", "", {}, None),
    ("research", "", {"query": 3}, "payload.query"),
    ("workspace_task", "", {"argv": "make"}, "payload.argv"),
    ("workspace_task", "", {"argv": []}, "payload.argv"),
    ("workspace_task", "", {"argv": ["make", "test"]}, None),
    ("spend", "", {"amount": -1}, "payload.amount"),
    ("spend", "", {"amount": True}, "payload.amount"),
    ("spend", "", {"amount": 12.5, "vendor": "shop"}, None),
    ("message", "", {"body": None}, None),
]


@pytest.mark.parametrize(("action_type", "recipient", "payload", "fragment"), PAYLOADS)
def test_each_handler_payload_is_checked_before_anything_is_staged(
    store: Store, action_type: str, recipient: str, payload: dict[str, object], fragment: str | None
) -> None:
    """A payload its handler could not take is refused at staging, naming the field; a good one is staged."""
    draft = staging.Draft(
        action_type=action_type, title="t", recipient=recipient, payload=payload, origin="cli"
    )
    if fragment is None:
        staging.stage(store, P, draft, GateSettings(), now=NOW)
        assert len(store.list_intents(P)) == 1
        return
    with pytest.raises(ValidationError, match=re.escape(fragment)):
        staging.stage(store, P, draft, GateSettings(), now=NOW)
    assert store.list_intents(P) == []


def test_every_registered_type_has_a_staging_check_and_the_cli_lists_them() -> None:
    """The checks, the registry and `intents add --help` name the same types, in the same order."""
    from tickloop.cli.operator_intents import ACTION_TYPES  # noqa: PLC0415

    assert tuple(CHECKS) == tuple(HANDLERS) == ACTION_TYPES
    assert all(callable(spec.handler) for spec in HANDLERS.values())  # each lazy target resolves


@given(st.text(max_size=60))
def test_an_email_recipient_is_staged_only_if_it_is_exactly_one_address(text: str) -> None:
    """Any text is either one address (staged) or refused with ValidationError; nothing else escapes."""
    try:
        check_draft("email", text, {"body": "hi"})
    except ValidationError as exc:
        assert exc.message.startswith("email: recipient")
    else:
        assert not set(",;<>\r\n\t ") & set(text.strip())
