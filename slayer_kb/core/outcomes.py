"""The typed results of the commands on a memory's history, on branches and remotes, on other
formats and of the checks (``kb.history``, ``kb.team``, ``kb.interchange``, ``validate``), each
with the one ``to_json`` that ``--json`` and the MCP tools print, as ``results.py``'s.

Apart from ``results.py``: a dataclass costs about 0.4 ms to build at import, and only the
commands that return these import them (docs/performance.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .memory import Memory
from .problems import Problem
from .results import CascadeResult, ChangeResult, ForgetResult, RenameResult, SaveResult, SessionResult


@dataclass
class EditResult:
    memory_id: str
    changed: bool
    commit: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"memory_id": self.memory_id, "changed": self.changed, "commit": self.commit,
                "warnings": self.warnings}


@dataclass
class Shown:
    """A memory as it was at a revision (``show``)."""

    memory: Memory
    text: str
    rev: str | None  # None: the work tree
    deleted_in: str | None = None
    warnings: list[str] = field(default_factory=list)  # the id moved on this clone (store/moves.py)
    folded: tuple[str, str] | None = None  # deleted_in folded it: (the id kept, how, Context.folded_in)

    def to_json(self) -> dict[str, Any]:
        return {**self.memory.to_dict(), "rev": self.rev, "deleted_in": self.deleted_in,
                "folded_into": self.folded and self.folded[0], "warnings": self.warnings}


@dataclass
class RestoreResult:
    """``restore --rev``: the memory as it now is, as ``update`` and a soft-delete's ``restore``
    give it (``ChangeResult``), with the revision it came from and the commit. ``action`` is
    ``unchanged`` when the memory was already as it was at the revision (no commit, no file written)."""

    memory_id: str
    rev: str
    warnings: list[str] = field(default_factory=list)
    commit: str | None = None
    memory: dict[str, Any] = field(default_factory=dict)  # Memory.to_dict()
    action: str = "restored"

    def to_json(self) -> dict[str, Any]:
        return {**self.memory, "action": self.action, "warnings": self.warnings,
                "memory_id": self.memory_id, "rev": self.rev, "commit": self.commit}


@dataclass
class RenumberResult:
    onto: str
    mapping: dict[str, str] = field(default_factory=dict)
    rewritten: list[str] = field(default_factory=list)
    commit: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"onto": self.onto, "renumbered": self.mapping, "references_rewritten_in": self.rewritten,
                "commit": self.commit}


@dataclass
class AcceptResult:
    """``renumber --accept``: an id sync moved now means the memory it names."""

    accepted: str
    moved_to: str

    def to_json(self) -> dict[str, Any]:
        return {"accepted": self.accepted, "moved_to": self.moved_to}


@dataclass
class MergeResult:
    """``slayer-kb merge``: REF merged into the branch (with the KB's merge driver)."""

    ref: str
    action: str  # merged | fast-forward | up to date
    head: str
    push: str = "slayer-kb sync"  # what sends the branch, run from where the user is (rebase.push_step)
    folded: dict[str, str] = field(default_factory=dict)  # this branch's memory -> REF's, one topic key
    deduplicated: dict[str, str] = field(default_factory=dict)  # this branch's memory -> REF's, one save made on both
    unlinked: dict[str, list[str]] = field(default_factory=dict)  # memory -> forgotten ids stripped (unlinks.py)
    cascaded: dict[str, list[str]] = field(default_factory=dict)  # memory -> deleted entities stripped (unlinks.py)
    relinked: dict[str, dict[str, str]] = field(default_factory=dict)  # memory -> {renamed id: new id} (unlinks.py)
    relinked_merged: dict[str, dict[str, str]] = field(default_factory=dict)  # memory -> {folded id: id kept} (unlinks.py)
    # A memory one side folded into another that the other side forgot, edited or renamed since (carry.follow_folds):
    # {its id: {kept, change, renamed (the new id, for renamed), folded_on (REF or 'this branch')}}.
    followed: dict[str, dict[str, str]] = field(default_factory=dict)
    # What sync's revalidation would say of the branch's memories on top of REF (revalidation.py):
    # the problems it refuses to push, and the stale and untouched invalid example queries it lets through.
    problems: list[str] = field(default_factory=list)
    stale_queries: list[str] = field(default_factory=list)
    untouched_queries: list[str] = field(default_factory=list)  # path:line: message, as SyncResult's
    # Session files both sides started for two projects: {session, upstream (REF's), here, kept}.
    session_projects: dict[str, dict[str, str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # a memory this clone holds that REF's commits replaced

    def to_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "action": self.action, "head": self.head, "push": self.push, "merged": self.folded,
                "deduplicated": self.deduplicated,
                "unlinked": self.unlinked, "cascaded": self.cascaded, "relinked": self.relinked, "relinked_merged": self.relinked_merged, "problems": self.problems,
                "stale_queries": self.stale_queries, "untouched_queries": self.untouched_queries,
                "session_projects": self.session_projects, "followed": self.followed, "warnings": self.warnings}


@dataclass
class RebaseResult:
    """``slayer-kb rebase``: the rebase (with the KB's merge driver) finished or was aborted."""

    onto: str
    action: str  # rebased | aborted
    head: str
    push: str = "slayer-kb sync"  # what sends the branch: a force push once pushed commits were rewritten
    merged: dict[str, str] = field(default_factory=dict)  # this branch's memory -> the upstream's, one topic key
    deduplicated: dict[str, str] = field(default_factory=dict)  # ... the upstream's, one save made on both
    unlinked: dict[str, list[str]] = field(default_factory=dict)  # memory -> forgotten ids stripped (unlinks.py)
    cascaded: dict[str, list[str]] = field(default_factory=dict)  # memory -> deleted entities stripped (unlinks.py)
    relinked: dict[str, dict[str, str]] = field(default_factory=dict)  # memory -> {renamed id: new id} (unlinks.py)
    relinked_merged: dict[str, dict[str, str]] = field(default_factory=dict)  # memory -> {folded id: id kept} (unlinks.py)
    problems: list[str] = field(default_factory=list)  # as MergeResult's
    stale_queries: list[str] = field(default_factory=list)
    untouched_queries: list[str] = field(default_factory=list)
    session_projects: dict[str, dict[str, str]] = field(default_factory=dict)  # as MergeResult's
    # As MergeResult's, of this run's picks (carry.follow_folds): folded_on the upstream's name.
    followed: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"onto": self.onto, "action": self.action, "head": self.head, "push": self.push, "merged": self.merged,
                "deduplicated": self.deduplicated,
                "unlinked": self.unlinked, "cascaded": self.cascaded, "relinked": self.relinked, "relinked_merged": self.relinked_merged, "problems": self.problems,
                "stale_queries": self.stale_queries, "untouched_queries": self.untouched_queries,
                "session_projects": self.session_projects, "followed": self.followed}


@dataclass
class SyncResult:
    remote: str
    branch: str
    pulled: int = 0
    pushed: int = 0
    pushed_by_merge: int = 0  # of ``pushed``, the commits a merge took in from another branch (main's)
    pushed_again: int = 0  # of ``pushed``, commits the upstream held before a rewrite (a force push) dropped them
    renumbered: dict[str, str] = field(default_factory=dict)
    # Spans of ids ("1-100") whose block another clone leased once the remote lost this clone's ref.
    given_up: list[str] = field(default_factory=list)
    merged: dict[str, str] = field(default_factory=dict)
    deduplicated: dict[str, str] = field(default_factory=dict)  # this clone's memory -> the upstream's, one save
    resolved: list[str] = field(default_factory=list)
    # Topic-key memories one side forgot that the other changed later (an upsert, an edit): the change held (store/replay.py).
    unforgotten: list[str] = field(default_factory=list)
    # Memories this clone changed that the upstream forgot later: the forget held, the change is dropped.
    dropped: list[str] = field(default_factory=list)
    unlinked: dict[str, list[str]] = field(default_factory=dict)  # memory -> forgotten ids stripped (unlinks.py)
    cascaded: dict[str, list[str]] = field(default_factory=dict)  # memory -> deleted entities stripped (unlinks.py)
    relinked: dict[str, dict[str, str]] = field(default_factory=dict)  # memory -> {renamed id: new id} (unlinks.py)
    relinked_merged: dict[str, dict[str, str]] = field(default_factory=dict)  # memory -> {folded id: id kept} (unlinks.py)
    # A memory one side folded into another that the other side forgot, edited or renamed since, as MergeResult's:
    # merging, carry.follow_folds; rebasing, the upstream folded it and this branch changed it (folds.carry_dropped,
    # forgotten_folded), change 'dropped' for an edit of a field the memory kept holds another way (edit: its git show).
    followed: dict[str, dict[str, str]] = field(default_factory=dict)
    # Memories pushed whose example query names what the catalog no longer has (sync's revalidation).
    stale_queries: list[str] = field(default_factory=list)
    # Problems (path:line: message) of invalid example queries pushed as the upstream had them:
    # the branch changed those memories, but not their query (revalidation.py).
    untouched_queries: list[str] = field(default_factory=list)
    # Session files both sides started for two projects: {session, upstream, here, kept}.
    session_projects: dict[str, dict[str, str]] = field(default_factory=dict)
    action: str = "up to date"  # up to date | fast-forward | rebased | pushed (only pushed)
    head: str | None = None
    attempts: int = 0
    # Seconds per phase, one dict per push attempt: lock (the first), queue (for another clone's
    # turn), fetch, pull, push, turn (taking it), wait (after a refused push), finish (the last:
    # re-index, bookkeeping). docs/teams.md.
    timings: list[dict[str, float]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what it pulled that an agent must hear of (syncreport.py)

    def to_json(self) -> dict[str, Any]:
        return {"remote": self.remote, "branch": self.branch, "action": self.action, "pulled": self.pulled,
                "pushed": self.pushed, "pushed_by_merge": self.pushed_by_merge, "pushed_again": self.pushed_again,
                "given_up": self.given_up, "renumbered": self.renumbered, "merged": self.merged,
                "deduplicated": self.deduplicated,
                "resolved": self.resolved, "unforgotten": self.unforgotten, "dropped": self.dropped, "unlinked": self.unlinked,
                "cascaded": self.cascaded, "relinked": self.relinked, "relinked_merged": self.relinked_merged, "stale_queries": self.stale_queries,
                "untouched_queries": self.untouched_queries, "session_projects": self.session_projects, "followed": self.followed,
                "attempts": self.attempts, "head": self.head, "timings": self.timings, "warnings": self.warnings}


@dataclass
class ImportResult:
    source: str
    imported: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: int = 0
    sessions: int = 0
    prompts: int = 0  # import-engram: the prompts added to session files
    warnings: list[str] = field(default_factory=list)
    commit: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "imported": self.imported, "replaced": self.replaced,
                "unchanged": self.unchanged, "skipped": self.skipped, "sessions": self.sessions,
                "prompts": self.prompts, "warnings": self.warnings, "commit": self.commit}

    def summary(self) -> str:
        parts = [f"{len(self.imported)} imported"]
        if self.replaced:
            parts.append(f"{len(self.replaced)} replaced")
        if self.unchanged:
            parts.append(f"{len(self.unchanged)} unchanged")
        if self.skipped:
            parts.append(f"{self.skipped} skipped")
        if self.sessions or self.prompts:
            parts.append(f"{self.sessions} new sessions, {self.prompts} prompts")
        return f"From {self.source}: " + ", ".join(parts) + "."


@dataclass
class ExportResult:
    folder: str
    written: list[str] = field(default_factory=list)
    skipped_deleted: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Files of an earlier export removed (their memories no longer live), and others' files
    # overwritten (--force): by id.
    removed: list[str] = field(default_factory=list)
    overwritten: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"folder": self.folder, "written": self.written, "skipped_deleted": self.skipped_deleted,
                "removed": self.removed, "overwritten": self.overwritten, "problems": self.problems}


@dataclass
class Report:
    """What ``validate`` or ``fmt`` found."""

    checked: int = 0
    problems: list[Problem] = field(default_factory=list)
    reformatted: list[str] = field(default_factory=list)  # fmt only: files rewritten (with --check, to be)
    warnings: list[Problem] = field(default_factory=list)  # validate only: valid but misleading (a future time)

    def to_json(self, failed: bool) -> dict[str, Any]:
        return {"ok": not failed, "checked": self.checked, "problems": [p.to_json() for p in self.problems],
                "reformatted": self.reformatted, "warnings": [w.to_json() for w in self.warnings]}


@dataclass
class Landed:
    """The result of the operation a commit made: ``kind`` names the operation (``save``,
    ``update``, ``restore``, ``restore-rev``, ``forget``, ``rename``, ``delete``, ``prune``,
    ``session-start``, ``session-end``, ``save-prompt``) and ``result`` is what it returns."""

    kind: str
    result: SaveResult | ChangeResult | RestoreResult | ForgetResult | RenameResult | CascadeResult | SessionResult
    subject: str = ""  # the id or entity the command was given
