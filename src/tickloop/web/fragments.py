"""Rendered fragments kept for reuse: a waiting intent's card is rendered once per version.

Every open page fetches its content again whenever the store changes (every tick writes a row), and a
waiting intent's card is the same HTML each time: the intent only changes by leaving the queue (its
``updated_at`` moves). So the approvals page renders a card once and reuses it while nothing it shows
changed; the key holds everything the card shows or depends on, the session's CSRF token included.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

import jinja2
from markupsafe import Markup

from tickloop.web.kept import Lru

if TYPE_CHECKING:
    from tickloop.web.proposals import Waiting

#: cards kept (about 3 KB each): a few pages of the queue for a few sessions
CARDS_KEPT = 512


def card_key(item: Waiting, csrf: str, pq: str) -> Hashable:
    """Everything the card shows or links to: the intent's version (its title, recipient and payload,
    and so its label, never change once it is staged), its plan step and the observations recorded
    with it, the profile in its links and the CSRF token in its form."""
    i, step = item.intent, item.step
    return (
        pq,
        csrf,
        i.id,
        i.updated_at,
        i.status,
        None if step is None else (step.id, step.title, step.status),
        tuple(o.id for o in item.fed_by),
    )


class CardCache:
    """The newest ``kept`` rendered cards (``tickloop.web.kept.Lru``)."""

    def __init__(self, env: jinja2.Environment, kept: int = CARDS_KEPT) -> None:
        self._template = env.get_template("_approval.html")
        self._cards: Lru[Markup] = Lru(kept)

    def __call__(self, items: Sequence[Waiting], csrf: str, pq: str) -> Markup:
        """The cards of ``items`` in order, as one fragment (one call from the template)."""
        return Markup("").join(self.card(item, csrf, pq) for item in items)

    def card(self, item: Waiting, csrf: str, pq: str) -> Markup:
        def render() -> Markup:
            return Markup(self._template.render(item=item, csrf=csrf, pq=pq))  # noqa: S704  (autoescaped template output)

        return self._cards.get(card_key(item, csrf, pq), render)
