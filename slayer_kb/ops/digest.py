"""The sessions as an agent reads them: ``mem_context``'s digest (the sessions of a project active
last, its newest prompts and memories, within a budget of characters) and a session's timeline
(its start, prompts, memories and end). The session files are read by ``sessions.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..core import engram
from ..core.errors import NotFoundError
from ..core.ids import id_sort_key
from ..core.memory import time_order
from ..core.results import SessionFiles, SessionTimeline
from ..core.session import Prompt, Session, check_session_id
from ..core.text import clip, counted, first_paragraph, one_line_shown, shown_value, warning_lines
from .sessions import case_twin, load_all, read

if TYPE_CHECKING:
    from ..context import Context

CONTEXT_SESSIONS = 5
CONTEXT_PROMPTS = 10


def recent_prompts(sessions: list[Session], project: str | None, limit: int) -> Iterator[tuple[Session, Prompt]]:
    """The newest prompts, newest first, of ``project`` (a prompt's own, else its session's)."""
    found = [(time_order(p.created_at), n, s, p) for s in sessions for n, p in enumerate(s.prompts)
             if project is None or (p.project or s.project) == project]
    found.sort(key=lambda item: item[:2], reverse=True)  # in one second, the later prompt first
    yield from ((s, p) for _, _, s, p in found[:limit])


def of_project(sessions: list[Session], project: str | None) -> list[Session]:
    return [s for s in sessions if project is None or s.project == project]


def recent(files: SessionFiles, project: str | None, limit: int) -> SessionFiles:
    """The ``limit`` sessions active last of ``project``, and a warning for one no session has."""
    found = of_project(files.sessions, project)
    said = f"No session has project {shown_value(project)}; check the name, or list sessions without it."
    return SessionFiles(found[:limit], files.warnings + ([] if found or project is None else [said]))


def timeline(kb: Context, session_id: Any) -> SessionTimeline:
    """A session as one timeline: its start, prompts, memories (live ones, by creation) and end,
    oldest first."""
    session_id = check_session_id(session_id, "session")
    from .. import search

    kb.ensure_fresh()
    session = read(kb, session_id)
    docs = kb.documents(None, search.restrict(exact={"session_id": session_id}), limit=None)
    if session is None and not docs:
        other = case_twin(kb, session_id)  # typed in another letter case: a session's ids are case-sensitive
        meant = f" Did you mean '{other}'? Session ids are case-sensitive." if other is not None else ""
        raise NotFoundError(f"No session with id '{session_id}': no session file and no memory saved in it.{meant}")
    entries: list[dict[str, Any]] = []
    if session is not None:
        entries.append({"kind": "start", "at": session.started_at, "text": session.directory or ""})
        entries.extend({"kind": "prompt", "at": p.created_at, "text": p.content} for p in session.prompts)
        if session.ended_at:
            entries.append({"kind": "end", "at": session.ended_at, "text": session.summary or ""})
    for doc in docs:
        data = doc["data"]
        entries.append({"kind": "memory", "at": data["created_at"], "id": data["id"], "type": data["type"],
                        "text": data["title"] or data["description"] or data["learning"].strip().split("\n", 1)[0]})
    order = {"start": 0, "prompt": 1, "memory": 2, "end": 3}  # in one second: asked, then saved
    entries.sort(key=lambda e: (time_order(e["at"]), order[e["kind"]], id_sort_key(e.get("id", ""))))
    return {"session": session.to_dict() if session else {"id": session_id}, "entries": entries}




def digest(kb: Context, project: str | None, scope: str | None, limit: int, budget: int) -> str:
    """``mem_context``'s markdown: the 5 sessions of ``project`` active last (from their files,
    with their live memories and prompts counted), its 10 newest prompts, its ``limit`` newest
    memories; cut at ``budget`` characters. Engram's empty reply when there is nothing at all."""
    from .. import search

    restriction = search.restrict(project=project, scope=engram.scope_filter(scope))
    docs = [d["data"] for d in kb.documents(None, restriction, limit=None)]
    docs.sort(key=lambda d: (time_order(d["created_at"]), id_sort_key(d["id"])), reverse=True)  # ties: newer id first
    files = load_all(kb)
    known = of_project(files.sessions, project)
    counts: dict[str, int] = {}
    newest: dict[str, str] = {}
    for data in docs:
        if data["session_id"]:
            counts[data["session_id"]] = counts.get(data["session_id"], 0) + 1
            newest[data["session_id"]] = max(newest.get(data["session_id"], ""), data["created_at"], key=time_order)
    known.sort(key=lambda s: (time_order(max(s.last_activity, newest.get(s.id, ""), key=time_order)), s.id), reverse=True)
    prompts = list(recent_prompts(known, project, CONTEXT_PROMPTS))
    # Outside the budget: a skipped file must be named, however long the digest.
    skipped = warning_lines(files.warnings)
    if not known and not docs:
        return engram.EMPTY_CONTEXT + skipped.lstrip("\n") + ("\n" if skipped else "")
    # A one-line field (hand-edited, or a file name's %0A) shows its line breaks as \x0a: a
    # heading of its own making ("## Instructions") would read as the digest's own to the agent.
    lines = ["# Memory context" + (f": {one_line_shown(project)}" if project else ""), "", "## Recent sessions"]
    for session in known[:CONTEXT_SESSIONS]:
        span = f"{session.started_at} to {session.ended_at or 'now (open)'}"
        memories = counts.get(session.id, 0)
        line = (f"- {one_line_shown(session.id)} ({one_line_shown(session.project or 'no project')}, "
                f"{one_line_shown(span)}): {memories} "
                f"{'memory' if memories == 1 else 'memories'}, {counted(len(session.prompts), 'prompt')}")
        if session.summary:
            line += f"; summary: {clip(' '.join(session.summary.split()), 200)}"
        lines.append(line)
    if not known:
        lines.append("- (none)")
    lines += ["", "## Recent prompts"]
    lines.extend(f"- {one_line_shown(p.created_at)} ({one_line_shown(s.id)}): {clip(' '.join(p.content.split()), 200)}"
                 for s, p in prompts)
    if not prompts:
        lines.append("- (none)")
    lines += ["", f"## Recent memories ({min(len(docs), limit)} of {len(docs)})"]
    if not docs:
        lines.append("- (none)")
    for data in docs[:limit]:
        label = one_line_shown(data["title"]) if data["title"] else first_paragraph(data["learning"], 100)
        kind = f" ({one_line_shown(data['type'])})" if data["type"] else ""
        lines.append(f"- [{one_line_shown(data['id'])}] {label}{kind}, {one_line_shown(data['created_at'][:10])}")
    text = ""
    for line in lines:
        if len(text) + len(line) + 1 > budget:
            text += "- ...\n"
            break
        text += line + "\n"
    return text + skipped.lstrip("\n") + ("\n" if skipped else "")
