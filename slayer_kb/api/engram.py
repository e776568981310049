"""Engram's tools as ``KnowledgeBase`` methods (a mixin, so kb.py holds the KB's own work):
observations, changing, renaming and forgetting memories, sessions and prompts, the timeline,
stats and the context digest. The work is in ``ops`` (observations, changes, sessions, capture, finding)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..core import engram
from .base import Part

if TYPE_CHECKING:  # the results are built by the ops modules, imported on use
    from ..core.results import (
    CaptureResult,
    ChangeResult,
    ForgetResult,
    RenameResult,
    SaveResult,
    SessionFiles,
    SessionResult,
    SessionTimeline,
    Stats,
    Timeline,
)

CONTEXT_BUDGET = 6000
CONTEXT_MEMORIES = 20


class EngramTools(Part):
    """Engram's ``mem_*`` tools (and ``update``/``forget``/``restore``, which SLayer's tools
    share, and ``rename``); a base of ``KnowledgeBase``, whose methods they call. Each imports
    its ``ops`` module when called: a command's process loads only its own (docs/performance.md)."""

    def save_observation(
        self, title: str, content: str, type: str | None = None, project: str | None = None,
        scope: str | None = None, topic_key: str | None = None, session_id: str | None = None,
        entities: Any = None, description: str | None = None,
    ) -> SaveResult:
        """Engram's ``mem_save``: redaction, topic-key upsert, de-duplication, else a new memory."""
        from ..ops import observations
        return observations.save(self.as_context, title, content, type, project, scope, topic_key, session_id, entities,
                                 description)

    def update(self, memory_id: str, *, force: bool = False, **fields: Any) -> ChangeResult:
        """Engram's ``mem_update``: change only the given fields of a live memory."""
        from ..ops import changes
        return changes.update(self.as_context, memory_id, force=force, **fields)

    def forget(self, memory_id: str, *, soft: bool = False, force: bool = False) -> ForgetResult:
        """Delete a memory (hard: strip ``memory:<id>`` from every other one; soft: hide it)."""
        from ..ops import changes
        return changes.forget(self.as_context, memory_id, soft=soft, force=force)

    def rename(self, old: str, new: str, *, force: bool = False, reuse_id: bool = False) -> RenameResult:
        """Give memory ``old`` the id ``new`` and point every ``memory:<old>`` at it (one commit)."""
        from ..ops import changes
        return changes.rename(self.as_context, old, new, force=force, reuse_id=reuse_id)

    def restore(self, memory_id: str) -> ChangeResult:
        """Bring back a soft-deleted memory."""
        from ..ops import changes
        return changes.restore(self.as_context, memory_id)

    @staticmethod
    def suggest_topic_key(type: str | None = None, title: str | None = None, content: str | None = None) -> str:
        """A stable topic key (family/segment) for topic-key upserts; it needs no KB."""
        return engram.suggest_topic_key(type, title, content)

    def timeline(self, memory_id: str, before: int = 5, after: int = 5) -> Timeline:
        """The memories saved just before and after one, in its session."""
        from ..ops import finding
        return finding.timeline(self.as_context, memory_id, before, after)

    def stats(self) -> Stats:
        from ..ops import finding
        return finding.stats(self.as_context)

    def session_summary(
        self, content: str, project: str | None = None, session_id: str | None = None
    ) -> SaveResult:
        saved = self.save_observation(
            # given_project: a project too long or with a control character is refused by its
            # own name, not as the title made of it.
            title=engram.session_summary_title(engram.given_project(project)),
            content=content,
            type="session_summary",
            project=project,
            session_id=session_id,
        )
        # Engram's reply to this tool: its text and the structured message alike.
        return replace(saved, reply=engram.session_summary_reply(project))

    # Engram's session tools: the work is in sessions.py, each write one commit.

    def session_start(
        self, session_id: str, project: str | None = None, directory: str | None = None
    ) -> SessionResult:
        from ..ops import sessions
        return sessions.start(self.as_context, session_id, project, directory)

    def session_end(self, session_id: str, summary: str | None = None) -> SessionResult:
        from ..ops import sessions
        return sessions.end(self.as_context, session_id, summary)

    def save_prompt(
        self, content: str, session_id: str | None = None, project: str | None = None
    ) -> SessionResult:
        from ..ops import sessions
        return sessions.save_prompt(self.as_context, content, session_id, project)

    def capture_passive(
        self, content: str, session_id: str | None = None, project: str | None = None,
        source: str | None = None,
    ) -> CaptureResult:
        from ..ops import capture
        return capture.capture_passive(self.as_context, content, session_id, project, source)

    def session_timeline(self, session_id: str) -> SessionTimeline:
        from ..ops import digest
        return digest.timeline(self.as_context, session_id)

    def recent_sessions(self, project: str | None = None, limit: int = 20) -> SessionFiles:
        """The sessions active last, newest first (of ``project``, when given), the session files
        skipped, and a warning for a project no session has."""
        from ..ops import digest, sessions
        return digest.recent(sessions.load_all(self.as_context), engram.normalize_project(project), limit)

    def context(
        self, project: str | None = None, scope: str | None = None, budget: int = CONTEXT_BUDGET,
        limit: int = CONTEXT_MEMORIES,
    ) -> str:
        """A compact markdown digest for the start of an agent's session: recent sessions and
        prompts, and the ``limit`` newest memories (``digest.digest``)."""
        from ..ops import digest

        self.as_context.ensure_fresh()
        return digest.digest(self.as_context, engram.normalize_project(project), scope, limit, budget)
