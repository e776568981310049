"""Engram's ``mem_capture_passive``: the learnings of a text's ``## Key Learnings:`` section, each
saved as a ``passive`` memory unless the project already holds it, in one commit with the session."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..core import engram
from ..core.errors import InvalidInputError
from ..core.inputs import check_unicode
from ..core.memory import Memory, utc_now
from ..core.results import CaptureResult
from ..core.text import listed, one_line
from ..transaction import memory_change
from . import sessions
from .projects import project_warnings

if TYPE_CHECKING:
    from ..context import Context

PASSIVE_TITLE_CHARS = 60
MIN_LEARNING_CHARS = 20
PASSIVE_SOURCE = "mcp-passive"

_HEADING = re.compile(r"^#{2,3}\s+(?:Aprendizajes(?:\s+Clave)?|Key\s+Learnings?|Learnings?):?\s*$",
                      re.IGNORECASE | re.MULTILINE)
# A learnings line that is no such heading: bold (``**Key Learnings:**``), plain, or of another
# level. Engram reads none of them; an agent that wrote one meant to capture.
_NEAR_HEADING = re.compile(r"^[ \t]*(?:#+[ \t]*)?(?:\*\*|__)?[ \t]*(?:Aprendizajes(?:\s+Clave)?|Key\s+Learnings?|Learnings?)"
                           r"[ \t]*:?[ \t]*(?:\*\*|__)?[ \t]*:?[ \t]*$", re.IGNORECASE | re.MULTILINE)
_NEXT_HEADING = re.compile(r"\n#{1,3} ")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.+)", re.MULTILINE)
_BULLET = re.compile(r"^\s*[-*]\s+(.+)", re.MULTILINE)
_BOLD = re.compile(r"\*\*([^*]+)\*\*")
_CODE = re.compile(r"`([^`]+)`")
_ITALIC = re.compile(r"\*([^*]+)\*")


def extract_learnings(text: str) -> list[str]:
    """Engram's ``ExtractLearnings``: the items of the last ``## Key Learnings:`` section (also
    ``### Learnings``, ``## Learning``, ``## Aprendizajes Clave:``) that has any, up to the next
    heading of level 1-3; numbered items, else bullets; markdown marks stripped, whitespace
    collapsed; items under 20 characters dropped."""
    for _, section in _sections(text):
        for pattern in (_NUMBERED, _BULLET):
            items = [_clean(m.group(1)) for m in pattern.finditer(section)]
            items = [item for item in items if len(item) >= MIN_LEARNING_CHARS]
            if items:
                return items
    return []


def _sections(text: str) -> Iterator[tuple[re.Match[str], str]]:
    """Each learnings heading and its text up to the next heading of level 1-3, the last first."""
    for heading in reversed(list(_HEADING.finditer(text))):
        section = text[heading.end():]
        cut = _NEXT_HEADING.search(section)
        yield heading, section if cut is None else section[: cut.start()]


def _last_items(text: str) -> tuple[str, list[str]] | None:
    """The heading and the items ('1. ...', else '- ...') of the last learnings section holding
    any, as ``extract_learnings`` reads them before dropping the short ones."""
    for heading, section in _sections(text):
        items = [m.group(1) for m in _NUMBERED.finditer(section)] or [m.group(1) for m in _BULLET.finditer(section)]
        if items:
            return heading.group(0).strip(), items
    return None


# What an item says when the agent learned nothing this time ("- None", "- N/A").
_NONE = frozenset({"none", "n/a"})


def _says_none(item: str) -> bool:
    return _clean(item).rstrip(".").casefold() in _NONE


def _why_none(text: str, result: CaptureResult) -> None:
    """Why ``extract_learnings`` found no learning in ``text``, in ``result``: a section whose
    items all say none ("- None") listed none, which the reply says; one holding items all under
    the length kept (the agent meant to capture, and nothing was) is warned of, with how to write
    one. Nothing for a text with no such section or no item under it ("None this time."), the
    ordinary case of an agent's output."""
    found = _last_items(text)
    if found is None:
        near = next((m.group(0).strip() for m in _NEAR_HEADING.finditer(text) if not _HEADING.fullmatch(m.group(0))), None)
        if near is not None:
            result.warnings.append(f"{near!r} is no learnings heading, so nothing was captured: head the section "
                                   "'## Key Learnings:' (a level-2 or level-3 heading), its items '1. ...' or '- ...'.")
        return
    heading, items = found
    if all(map(_says_none, items)):
        result.listed_none = heading
    else:
        result.warnings.append(f"the {heading!r} section holds no item ('1. ...' or '- ...') of {MIN_LEARNING_CHARS} "
                               "characters or more, so nothing was saved; write each learning as such an item.")


def _clean(text: str) -> str:
    text = _ITALIC.sub(r"\1", _CODE.sub(r"\1", _BOLD.sub(r"\1", text)))
    return " ".join(text.split())


def capture_passive(kb: Context, content: Any, session_id: Any = None, project: Any = None,
                    source: Any = None) -> CaptureResult:
    """Engram's ``mem_capture_passive``: each learning of the text's ``## Key Learnings:``
    section becomes a memory of type ``passive`` unless a live memory of the project already has
    the same text (one over the size limit is skipped, with a warning naming its number, and a
    last warning says what became of the others). All of them and the session, when it is new,
    in one commit."""
    if not isinstance(content, str) or not content.strip():
        # Engram's words to a tool, verbatim (no full stop); the command's end as a sentence does.
        raise InvalidInputError("content is required — include text with a '## Key Learnings:' section.",
                                tool_message="content is required — include text with a '## Key Learnings:' section")
    check_unicode(content, "content")
    project = engram.given_project(sessions.optional_text(project, "project"))
    session_id = sessions.session_or_default(session_id, project)
    source = sessions.optional_text(source, "source") or PASSIVE_SOURCE
    if len(source) > engram.MAX_KEY:  # a label in the commit's subject (its controls shown escaped there)
        raise InvalidInputError(f"source is {len(source)} characters long; the limit is {engram.MAX_KEY}. Name the "
                                "tool or hook that captured the text.")
    text = engram.redact_private(content)
    extracted = extract_learnings(text)
    result = CaptureResult(session_id, source, extracted=len(extracted))
    if not extracted:  # extracted=0 alone leaves the agent to guess why
        _why_none(text, result)
    learnings = []
    for number, learning in enumerate(extracted, 1):
        # As a save refuses it (a capture saved one of 100 KB); the others are still learnings
        # worth keeping, so one over the limit is skipped and named by its place in the list.
        try:
            learnings.append(kb.check_learning(learning, f"content's learning #{number}"))
        except InvalidInputError as exc:
            result.skipped.append(number)
            result.warnings.append(str(exc))
    if learnings:
        _save(kb, learnings, result, project, session_id)
    if result.skipped:
        result.warnings.append(_not_saved(result))
    return result


def _save(kb: Context, learnings: list[str], result: CaptureResult, project: str | None, session_id: str) -> None:
    """The learnings no live memory of the project holds, and the session when it is new, in one
    commit; ``result`` counts them and the duplicates."""
    with kb.transaction() as tx:
        result.warnings += project_warnings(kb, project)
        seen: set[str] = set()
        fresh: list[str] = []
        for learning in learnings:
            digest = engram.content_hash(learning)
            if digest in seen or tx.live(limit=1, content_hash=digest, project=project):
                result.duplicates += 1
            else:
                fresh.append(learning)
            seen.add(digest)
        if fresh:
            now = utc_now()
            memories = {memory_id: _passive_memory(memory_id, learning, project, session_id, now)
                        for memory_id, learning in zip(tx.next_auto_ids(len(fresh)), fresh, strict=True)}
            _, session_changes = sessions.ensure(tx, session_id, project, now=now)
            changes = [memory_change(m) for m in memories.values()] + session_changes
            # A subject, not a manifest: 2,000 learnings made one of 11,000 characters.
            ids = listed(list(memories), 10)
            result.commit = tx.commit(changes, f"memory: capture {ids} (passive, from {one_line(result.source)})", memories)
            result.saved = len(memories)
            result.memory_ids = list(memories)


def _not_saved(result: CaptureResult) -> str:
    """The learnings skipped and what became of the others, said once: each skipped one's
    warning said "the others were [saved]", false with none saved or with two skipped."""
    count, others = len(result.skipped), result.extracted - len(result.skipped)
    said = (f"{'Learning' if count == 1 else 'Learnings'} {listed([f'#{n}' for n in result.skipped], 10)} "
            f"{'was' if count == 1 else 'were'} not saved")
    if others == 0:
        return f"{said}."
    if result.duplicates == 0:
        return f"{said}; the other {others} {'was' if others == 1 else 'were'}."
    return (f"{said}; of the other {others}, {result.saved} {'was' if result.saved == 1 else 'were'} saved and "
            f"{result.duplicates} {'was a duplicate' if result.duplicates == 1 else 'were duplicates'}.")


def _passive_memory(memory_id: str, learning: str, project: str | None, session_id: str, now: str) -> Memory:
    title = learning if len(learning) <= PASSIVE_TITLE_CHARS else learning[:PASSIVE_TITLE_CHARS] + "..."
    return Memory(id=memory_id, learning=learning, created_at=now, title=title, type="passive",
                  project=project, scope="project", session_id=session_id, revision_count=1, duplicate_count=1)

