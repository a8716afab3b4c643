"""``explain``: what every face shows a person about one intent (MCP's ``explain_intent``, the dashboard).

Pinned field by field on a real store: a mutation run found that dropping the decisions, the verdict or
the reasons of an explanation failed no test.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from tickloop.errors import NotFoundError
from tickloop.operator import service, staging
from tickloop.operator.domain import DecisionKind, IntentStatus, Tier, Verdict
from tickloop.operator.explain import LADDER, NEXT, deciding_rule, explain, rule_id
from tickloop.operator.gate import GateSettings
from tickloop.operator.store import Store, open_store

P = "me"
NOW = datetime(2026, 7, 7, 9, 0, tzinfo=UTC)


@pytest.fixture
def store() -> Iterator[Store]:
    with open_store("memory://") as opened:
        service.init_profile(opened, P, service.InitSpec(goal_title="Ship v1"), now=NOW)
        service.init_profile(opened, "other", service.InitSpec(goal_title="Theirs"), now=NOW)
        yield opened


def _email(store: Store, profile: str = P) -> int:
    draft = staging.Draft(
        action_type="email", title="Hi", recipient="ada@example.org", payload={"body": "x"}, origin="cli"
    )
    staged, _ = staging.stage(store, profile, draft, GateSettings(), now=NOW)
    return staged.id


def test_an_approved_email_is_explained_by_its_verdict_rule_decision_and_cell(store: Store) -> None:
    """The gate's verdict and reasons, the rule that decided it, the person's linked decision, and the
    external x requires-approval cell with the approved status's next step."""
    intent_id = _email(store)
    decision = store.decide(P, intent_id, DecisionKind.APPROVE, by="alice", now=NOW, note="fine")
    explained = explain(store, P, intent_id)
    assert explained.intent == store.get_intent(P, intent_id)
    assert explained.verdict is Verdict.REQUIRES_APPROVAL
    assert explained.reasons == explained.intent.verdict_reasons
    assert explained.reasons[0].startswith("gate.external_or_irreversible: 'email' leaves the machine")
    assert explained.deciding_rule == "gate.external_or_irreversible"
    assert explained.decisions == [decision]
    assert (explained.decisions[0].kind, explained.decisions[0].by) == (DecisionKind.APPROVE, "alice")
    ladder = explained.ladder
    assert (ladder.tier, ladder.verdict, ladder.status) == (
        Tier.EXTERNAL,
        Verdict.REQUIRES_APPROVAL,
        IntentStatus.APPROVED,
    )
    assert ladder.cell == LADDER[(Tier.EXTERNAL, Verdict.REQUIRES_APPROVAL)]
    assert ladder.next == NEXT[IntentStatus.APPROVED]


def test_an_undecided_intent_has_no_decisions(store: Store) -> None:
    """Before the person answers, the explanation lists no decision and says what it waits for."""
    explained = explain(store, P, _email(store))
    assert explained.decisions == []
    assert explained.ladder.next == "waits for the person's decision (CLI, dashboard, or a channel)"


def test_another_profiles_intent_is_not_found(store: Store) -> None:
    """An id of another profile's intent is refused as not found, never explained."""
    theirs = _email(store, "other")
    with pytest.raises(NotFoundError):
        explain(store, P, theirs)
    assert explain(store, "other", theirs).intent.profile == "other"


def test_a_rule_id_is_everything_before_the_first_colon() -> None:
    """The words after the rule id may hold colons of their own (an action type, a URL)."""
    assert rule_id("gate.block_list: 'mail:bulk' is blocked") == "gate.block_list"
    assert rule_id(" gate.money : x: y: z") == "gate.money"


def test_a_verdict_no_known_rule_asks_for_is_decided_by_the_first_reason() -> None:
    """A rule this table does not know (a newer gate's) still names itself; no reasons, no rule."""
    reasons = ("policy.custom: the profile's own rule", "gate.allowed: reversible")
    assert deciding_rule(Verdict.REQUIRES_APPROVAL, reasons) == "policy.custom"
    assert deciding_rule(Verdict.REQUIRES_APPROVAL, reasons[:1]) == "policy.custom"
    assert deciding_rule(Verdict.REQUIRES_APPROVAL, ()) is None
    assert deciding_rule(None, reasons) is None
