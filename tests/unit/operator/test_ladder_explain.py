"""The ladder cell and next step an intent is explained with (MCP's ``explain_intent``, the dashboard),
as a table over tier x verdict x status (seed 002, figure 8)."""

from __future__ import annotations

import msgspec
import pytest
from test_tier_floor import INTENT

from tickloop.operator.domain import IntentStatus, Tier, Verdict
from tickloop.operator.explain import FINAL_STATUSES, LADDER, NEXT, WAY_BACK, ladder


@pytest.mark.parametrize(("tier", "verdict"), sorted(LADDER, key=str))
def test_each_judged_cell_is_the_grid_s(tier: Tier, verdict: Verdict) -> None:
    """A judged, non-blocked intent is explained by its tier x verdict cell of the grid."""
    intent = msgspec.structs.replace(INTENT, tier=tier, verdict=verdict, status=IntentStatus.READY)
    assert ladder(intent).cell == LADDER[(tier, verdict)]


@pytest.mark.parametrize("tier", list(Tier))
def test_an_unjudged_or_blocked_intent_says_so_at_every_tier(tier: Tier) -> None:
    """No verdict yet reads "not judged yet"; a blocked one is never executable at any tier."""
    unjudged = msgspec.structs.replace(INTENT, tier=tier, verdict=None, status=IntentStatus.PROPOSED)
    assert ladder(unjudged).cell == "not judged yet"
    blocked = msgspec.structs.replace(INTENT, tier=tier, verdict=Verdict.BLOCKED, status=IntentStatus.BLOCKED)
    assert ladder(blocked).cell.startswith("never: blocked intents are not executable")


@pytest.mark.parametrize("status", list(IntentStatus))
def test_every_status_says_what_happens_next(status: IntentStatus) -> None:
    """A dead end names the way back, a final status says nothing further happens, and every other
    status says what it waits for."""
    intent = msgspec.structs.replace(INTENT, status=status)
    explained = ladder(intent)
    assert (explained.status, explained.tier, explained.verdict) == (status, intent.tier, intent.verdict)
    if status in WAY_BACK:
        assert explained.next == WAY_BACK[status]
    elif status in FINAL_STATUSES:
        assert explained.next == f"final: {status.value}; nothing further happens"
    else:
        assert explained.next == NEXT[status]
