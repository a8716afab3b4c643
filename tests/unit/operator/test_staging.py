"""The one staging path: every face's intent is gate-stamped the moment it is stored."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from tickloop.operator import staging
from tickloop.operator.domain import IntentStatus, Tier, Verdict
from tickloop.operator.gate import GateSettings
from tickloop.operator.store import Store, open_store

P = "me"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def store() -> Iterator[Store]:
    with open_store("memory://") as opened:
        opened.create_profile(P, now=NOW)
        yield opened


def _draft(action_type: str, origin: str = staging.ORIGIN_CLI, **kw: object) -> staging.Draft:
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
        ("wire_transfer", staging.ORIGIN_CLI, [], IntentStatus.BLOCKED, Tier.EXTERNAL),
        ("teleport", staging.ORIGIN_CLI, [], IntentStatus.REQUIRES_APPROVAL, Tier.EXTERNAL),
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
