"""Tier 1 writers: ``note``, ``wiki_write``, ``draft_prep`` and ``research``. Files only, never sent."""

from __future__ import annotations

from pathlib import Path

from tickloop.clock import utc_iso
from tickloop.errors import HandlerError
from tickloop.inert import inert
from tickloop.notify.base import one_line
from tickloop.operator.handlers.base import (
    HandlerContext,
    HandlerRequest,
    HandlerResult,
    HandlerStatus,
    result,
    text_field,
)
from tickloop.operator.handlers.files import check_absent, create_exclusive, file_name, files_write_args

#: hits from memory kept in a research note, and the length of each.
RESEARCH_HITS = 10
HIT_CHARS = 500


def note(request: HandlerRequest, context: HandlerContext) -> HandlerResult:
    """A markdown note in the notes directory (``note-DATE-ID-SLUG.md``)."""
    body = text_field(request, "body", default="")
    return _write(request, context.settings.notes_path(), "note", body)


def wiki_write(request: HandlerRequest, context: HandlerContext) -> HandlerResult:
    """A wiki page in the notes directory (``wiki-DATE-ID-SLUG.md``)."""
    body = text_field(request, "body", default="")
    return _write(request, context.settings.notes_path(), "wiki", body)


def draft_prep(request: HandlerRequest, context: HandlerContext) -> HandlerResult:
    """A draft in the drafts directory. It is never sent: sending is a separate, external intent."""
    body = text_field(request, "body", default="")
    header = f"> draft for {one_line(request.recipient, 200)}, not sent\n\n" if request.recipient else ""
    return _write(request, context.settings.drafts_path(), "draft", header + body)


def research(request: HandlerRequest, context: HandlerContext) -> HandlerResult:
    """Search the operator's own memory (full text, read-only), then write what it found as a note."""
    if context.search is None:
        raise HandlerError(f"intent {request.intent_id} (research): no memory search was provided")
    query = text_field(request, "query", default=request.title, limit=500).strip()
    if not query:
        raise HandlerError(f"intent {request.intent_id} (research): the query is empty")
    hits = context.search(query)[:RESEARCH_HITS]
    found = "\n".join(f"- {one_line(hit, HIT_CHARS)}" for hit in hits) or "- (nothing in memory)"
    body = f"{text_field(request, 'body', default='')}\n\n## Recall for `{one_line(query, 200)}`\n\n{found}\n"
    return _write(request, context.settings.notes_path(), "research", body.lstrip("\n"), hits=len(hits))


def _write(
    request: HandlerRequest, directory: Path, prefix: str, body: str, **extra: object
) -> HandlerResult:
    name = file_name(prefix, request.now, request.intent_id, request.title)
    content = _markdown(request, body)
    path = check_absent(directory, name)
    if not request.dry_run:
        path = create_exclusive(directory, name, content)
    args = files_write_args(path, content)
    return result(request, HandlerStatus.SENT, "files_write", str(path), args, path=str(path), **extra)


def _markdown(request: HandlerRequest, body: str) -> str:
    # The title is flattened to one line so it cannot add front-matter keys or headings. The whole
    # file is made inert: an agent's ESC[2J or bell must not reach the person's terminal when they
    # `cat` their notes (newlines and tabs are kept; a CR of CRLF is dropped, a lone one shown).
    text = (
        f"---\nintent: {request.intent_id}\naction: {request.action_type}\n"
        f"created: {utc_iso(request.now)}\n---\n\n# {one_line(request.title, 200)}\n\n{body.rstrip()}\n"
    )
    return inert(text.replace("\r\n", "\n"))
