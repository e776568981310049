"""Engram's sessions and user prompts, kept as files in the KB (the record and its file form:
``core/session.py``).

Each write is one git commit through the KB's crash-safe commit path (``Transaction.commit``,
in ``Context.transaction``): starting a session, ending it, a prompt, a passive capture (its memories and
the session together). A prompt goes into its session's file, so a pull request shows the prompt
beside the session it belongs to; a passive capture's memories are ordinary memory files.

Reading every session (``mem_context``, ``mem_stats``) parses only the files that changed since
the last read: the parsed sessions are cached in the state folder, keyed by each file's size,
modification time and inode. What ``mem_context`` and a session's timeline make of them is
``digest.py``'s.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
import unicodedata
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import engram
from ..core.errors import ConflictError, InvalidInputError, MemoryFileError, unreadable
from ..core.fileio import NotRegularFile, file_kind, not_a_file, read_regular, write_whole
from ..core.ids import fold_id
from ..core.inputs import blank, check_unicode
from ..core.memory import time_order, utc_now
from ..core.problems import command, git_command, shell_word, shown
from ..core.results import SessionFiles, SessionResult
from ..core.session import (
    MAX_SUMMARY,
    SESSION_KEYS,
    SESSION_TIMES,
    SESSIONS_DIR,
    Prompt,
    Session,
    check_session_id,
    dumps,
    file_name,
    id_of_file,
    loads,
    session_path,
)
from ..core.text import clip, kind_of, quoted, warning_lines
from ..store.repo import Change
from ..transaction import Transaction
from ..workspace import Workspace
from .projects import project_warnings
from .schema_words import session_times
from .timechecks import kept_times

if TYPE_CHECKING:
    from ..context import Context

PROMPT_REPLY_CHARS = 80  # Engram's `Prompt saved: "<first 80 chars>"`
TRUNCATED = "... [truncated]"
# A file changed this recently may change again within the file system's time resolution with
# the same size: it is parsed on every read until it is older (git calls this "racy").
_RACY_NS = 2_000_000_000


# -- reading -------------------------------------------------------------------------------------


def read(kb: Workspace, session_id: str) -> Session | None:
    """The session, or None when it has no file; a broken file is an error naming it. Read as
    ``Context.read`` reads a memory: never half of a commit's writes (``read_settled``)."""
    return kb.read_settled(lambda: _read(kb, session_id))


def _read(kb: Workspace, session_id: str) -> Session | None:
    try:
        return _parse(kb, session_id)
    except MemoryFileError as exc:
        if exc.names_fix:
            raise
        # What a command that needs the session says, as ``Context.read_with_fix`` says it of a memory.
        raise MemoryFileError(exc.path, exc.line, f"{exc.message.rstrip('.')}. {_fix(kb.root, exc.path)}.", names_fix=True) from None


def _parse(kb: Workspace, session_id: str) -> Session | None:
    """``_read`` without the fix added to a problem with the file's text."""
    path = session_path(session_id)
    try:
        text = read_regular(kb.root / path).decode("utf-8")
    except FileNotFoundError:
        return None
    except NotRegularFile as exc:
        raise not_regular(path, exc.kind) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc) from None
    return loads(text, session_id, path)


def not_regular(path: str, kind: str) -> MemoryFileError:
    return MemoryFileError(path, None, not_a_file(kind, SESSIONS_DIR), names_fix=True)


def _fix(root: Path, path: str) -> str:
    """How to repair session file ``path``, in commands that run where the user is (``command``)."""
    return (f"Edit {shown(root / path)} to fix it, then check it with '{command(root)} validate' (or put back its committed "
            f"version: {git_command(root, f'checkout -- {shell_word(path)}')})")


def _skipped(root: Path, exc: MemoryFileError) -> str:
    """The warning of a session file a listing skips: the problem, that it was skipped, the fix."""
    if exc.names_fix:
        return f"{str(exc).rstrip('.')} (skipped)"
    return f"{str(exc).rstrip('.')} (skipped). {_fix(root, exc.path)}."


def load_all(kb: Context) -> SessionFiles:
    """Every readable session, newest activity first; a broken file is skipped with a warning
    naming it and its fix (``slayer-kb validate`` reports every problem). Unchanged files come
    from the cache. Never half of a commit's writes (``read_settled``)."""
    return kb.read_settled(lambda: _load_all(kb))


def _load_all(kb: Context) -> SessionFiles:
    folder = kb.root / SESSIONS_DIR
    try:
        with os.scandir(folder) as scan:
            entries = [(e.name, e.stat(follow_symlinks=False)) for e in scan]
    except (FileNotFoundError, NotADirectoryError):
        return SessionFiles([])
    cache_path = kb.state / "sessions.json"
    try:
        cached = json.loads(cache_path.read_text(encoding="utf-8"))
        if not isinstance(cached, dict):
            cached = {}
    except (OSError, ValueError):
        cached = {}
    fresh: dict[str, Any] = {}
    out: list[Session] = []
    warnings: list[str] = []
    now = time.time_ns()
    for name, st in entries:
        session_id = id_of_file(name)
        if session_id is None:
            continue
        if not stat.S_ISREG(st.st_mode):  # a folder, a link, a FIFO: named, never opened
            warnings.append(_skipped(kb.root, not_regular(session_path(session_id), file_kind(st.st_mode))))
            continue
        key = [st.st_mtime_ns, st.st_size, st.st_ino]
        hit = cached.get(name)
        session = None
        if isinstance(hit, list) and len(hit) == 2 and hit[0] == key:
            with contextlib.suppress(TypeError, KeyError, ValueError):
                session = Session.from_dict(hit[1])
        if session is None:
            try:
                session = _parse(kb, session_id)
            except MemoryFileError as exc:
                warnings.append(_skipped(kb.root, exc))
        if session is None:
            continue
        out.append(session)
        if now - st.st_mtime_ns > _RACY_NS:
            fresh[name] = [key, session.to_dict()]
    if fresh != cached:
        with contextlib.suppress(OSError):
            kb.state_dir()
            # each writer its own temporary file
            write_whole(cache_path, json.dumps(fresh))
    out.sort(key=lambda s: (time_order(s.last_activity), s.id), reverse=True)
    return SessionFiles(out, sorted(warnings))


# -- writing -------------------------------------------------------------------------------------


def ensure(tx: Transaction, session_id: str, project: str | None, directory: str | None = None,
           now: str | None = None) -> tuple[Session, list[Change]]:
    """The session, made when it has no file, an empty project or directory filled in when one
    is given (Engram's ``CreateSession``); and the change to commit, if any, in ``tx``, whose
    file is checked to hold no uncommitted work (``Transaction.require_committed``)."""
    kb = tx.kb
    path = session_path(session_id)
    existing = read(kb, session_id)
    if existing is None:
        # No file, yet HEAD may hold the session: one a sparse checkout leaves out, or deleted by
        # hand. A new one would replace it (its project, start, prompts): refused, with the fix.
        tx.require_committed(path)
        _check_no_case_twin(kb, session_id)
        session = Session(session_id, now or utc_now(), project or None, directory or None)
        return session, [change(kb, session)]
    session = existing
    if (project and not existing.project) or (directory and not existing.directory):
        session = replace(existing, project=existing.project or project,
                          directory=existing.directory or directory)
    if session is existing:
        return session, []
    tx.require_committed(path)
    return session, [change(kb, session)]


def for_save(tx: Transaction, session_id: str, project: str | None, now: str) -> list[Change]:
    """The session change a memory's save carries (``ensure``). A session file that is broken or
    holds uncommitted work is left alone: the memory is saved all the same (validate reports the
    file). A new session id differing only in letter case from an existing session's is refused
    as ``session-start`` refuses it: the memory's session would be recorded nowhere."""
    try:
        return ensure(tx, session_id, project, now=now)[1]
    except CaseTwinError:
        raise
    except (MemoryFileError, ConflictError):
        return []


def change(kb: Workspace, session: Session) -> Change:
    """The session's file to commit; refused (``MemoryFileError``) while it keeps a time validate
    refuses: a start or end no calendar has (2026-02-30, written by hand or by an older import), or
    a start after its end (``schema_words.session_times``)."""
    times = {key: getattr(session, key) for key in SESSION_TIMES}
    kept_times(kb.root, session.path, lambda text: session_times(text, times),
               f"Edit {shown(kb.root / session.path)}, then retry.")
    return Change(session.path, dumps(session).encode("utf-8"))


class CaseTwinError(ConflictError):
    """A new session id that differs only in letter case from an existing session's."""


def case_twin(kb: Workspace, session_id: str) -> str | None:
    """The session whose id differs from ``session_id`` only in letter case, if any."""
    return _Folded(kb).twin(session_id)


def _check_no_case_twin(kb: Workspace, session_id: str) -> None:
    other = case_twin(kb, session_id)
    if other is not None:
        raise CaseTwinError(
            f"session id '{session_id}' differs only in letter case from the existing session "
            f"'{other}': their files collide on macOS and Windows checkouts. Use '{other}'."
        )


class _Folded:
    """The KB's session file names (listed once) and those added since, by their folded form:
    a session's case twin found in one look-up (an import of thousands of sessions asks it of
    each)."""

    def __init__(self, kb: Workspace) -> None:
        folder = kb.root / SESSIONS_DIR
        self._names: dict[str, set[str]] = {}
        for name in os.listdir(folder) if folder.is_dir() else ():
            self._names.setdefault(fold_id(name), set()).add(name)

    def add(self, session_id: str) -> None:
        name = file_name(session_id)
        self._names.setdefault(fold_id(name), set()).add(name)

    def twin(self, session_id: str) -> str | None:
        """The session whose file name differs from ``session_id``'s only in letter case, if any."""
        name = file_name(session_id)
        other = min((n for n in self._names.get(fold_id(name), ()) if n != name), default=None)
        return None if other is None else id_of_file(other) or other


def start(kb: Context, session_id: Any, project: Any = None, directory: Any = None) -> SessionResult:
    """Engram's ``mem_session_start``: register a session (an existing one is kept, only an
    empty project or directory filled in). One commit, none when nothing changes."""
    session_id = check_session_id(session_id, "id")
    if isinstance(project, str) and not project.strip():
        # Required by the tool and the command: a blank one made a session of no project.
        raise InvalidInputError("project is required and must not be blank: give the session's project "
                                "(e.g. 'analytics').")
    project = optional_text(project, "project")
    directory = given_directory(optional_text(directory, "directory"))
    project = engram.given_project(project)
    # The index is read (brought up to date) only for the projects of the memories, which a
    # project given is held to (project_warnings).
    with kb.transaction(sync=project is not None) as tx:
        session, changes = ensure(tx, session_id, project, directory)
        # A project the session takes, spelt like an existing one (one it keeps out is said below).
        near = project_warnings(kb, project) if project and project == session.project else []
        commit = tx.commit(changes, f"session: start {session_id}") if changes else None
    # Engram keeps an existing session's project and directory: what was given instead is said.
    warnings = near + [f"session '{session_id}' exists with {name} {kept!r}, which it keeps: the {name} given ({given!r}) "
                "is not used; give another session id for a session of its own"
                for name, kept, given, differ in (
                    ("project", session.project, project, project != session.project),
                    # The same folder spelt otherwise ('/w/x/', '/w/y/../x') is no other; both stay as written.
                    ("directory", session.directory, directory, _folder(directory) != _folder(session.directory)))
                if given and kept and differ]
    return SessionResult(session.to_dict(), "started" if changes else "unchanged", commit, warnings)


def _folder(directory: str | None) -> str | None:
    """A directory as compared: the path normalised, without a look at the filesystem (the
    session's folder may be on another machine)."""
    return None if directory is None else os.path.normpath(directory)


def end(kb: Context, session_id: Any, summary: Any = None) -> SessionResult:
    """Engram's ``mem_session_end``: stamp the end time and the summary (private parts
    redacted; none given keeps an earlier one). One commit. An id never started is made and
    ended, with a warning, as Engram's ``mem_save_prompt`` makes it and its ``mem_session_end``
    never refuses it: the summary is kept, not lost."""
    session_id = check_session_id(session_id, "id")
    summary = optional_text(summary, "summary")
    if summary is not None:
        summary = engram.redact_private(summary) or None
        if summary is not None and len(summary.encode("utf-8")) > MAX_SUMMARY:
            said = (f"summary is {len(summary.encode('utf-8'))} bytes; the limit is {MAX_SUMMARY} bytes. "
                    "Keep the session's summary short; save the details with ")
            run = command(kb.root)  # the command line's advice in commands, a client's in tools
            # --session: else they go to the project's default session
            raise InvalidInputError(f"{said}'{run} save --title TITLE --session {shell_word(session_id)}', "
                                    "each under the limit.",
                                    tool_message=f"{said}mem_session_summary or mem_save.")
    warnings = []
    with kb.transaction(sync=False) as tx:
        now = utc_now()
        session, made = ensure(tx, session_id, None, now=now)
        if made:
            warnings.append(f"session '{session_id}' was never started; it is recorded as started and ended now")
        else:  # a change ``ensure`` makes is checked there
            tx.require_committed(session.path)
        if summary and session.summary and summary != session.summary:
            when = f" (ended at {session.ended_at})" if session.ended_at else ""
            shows = git_command(kb.root, f"log -p {shell_word(session.path)}")  # run where the user is
            warnings.append(f"session '{session_id}' already had a summary{when}, which this one replaces ({shows} "
                            "shows the former)")
        ended = replace(session, ended_at=now, summary=summary or session.summary)
        commit = tx.commit([change(kb, ended)], f"session: end {session_id}")
    return SessionResult(ended.to_dict(), "ended", commit, warnings)


def save_prompt(kb: Context, content: Any, session_id: Any = None, project: Any = None) -> SessionResult:
    """Engram's ``mem_save_prompt``: the user's prompt, private parts redacted and cut at the KB's
    content limit, added to its session's file (made when missing). One commit."""
    content = _required_text(content, "content")
    project = engram.given_project(optional_text(project, "project"))
    session_id = session_or_default(session_id, project)
    warnings: list[str] = []
    content = _cut_prompt(engram.redact_private(content), kb.max_content, "content", warnings)
    with kb.transaction(sync=project is not None) as tx:  # as start's
        now = utc_now()
        session, made = ensure(tx, session_id, project, now=now)
        if project and (made or project != session.project):
            # Said once: where the session takes the project, or the prompt names another.
            warnings += project_warnings(kb, project)
        if not made:  # a change ``ensure`` makes is checked there
            tx.require_committed(session.path)
        prompt = Prompt(now, content, project if project and project != session.project else None)
        session = replace(session, prompts=[*session.prompts, prompt])
        commit = tx.commit([change(kb, session)], f"session: prompt in {session_id}")
    return prompt_result(session, commit, warnings)


def prompt_result(session: Session, commit: str | None, warnings: list[str] | None = None) -> SessionResult:
    """``save_prompt``'s result for the session its last prompt went into, and Engram's reply
    (with the ``warnings``, if any)."""
    prompt = session.prompts[-1]
    message = f"Prompt saved: {quoted(clip(prompt.content, PROMPT_REPLY_CHARS))}" + warning_lines(warnings or [])
    return SessionResult(session.to_dict(), "prompt saved", commit, warnings or None, prompt.to_dict(), message)


def _cut_prompt(text: str, limit: int, what: str, warnings: list[str]) -> str:
    """A prompt's ``text`` cut at ``limit`` bytes, and said so in ``warnings`` (``what``: which)."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    kept = data[: limit - len(TRUNCATED)].decode("utf-8", "ignore")
    warnings.append(f"{what} is {len(data)} bytes, over the limit of {limit}: only its first "
                    f"{len(kept.encode('utf-8'))} bytes were kept, then {TRUNCATED!r}. Save the rest as memories "
                    "(slayer-kb save, the mem_save tool), or raise the limit with SLAYER_KB_MAX_CONTENT (bytes).")
    return kept + TRUNCATED


def session_or_default(session_id: Any, project: str | None) -> str:
    if session_id is None or (isinstance(session_id, str) and not session_id.strip()):
        return engram.default_session_id(project)
    return check_session_id(session_id, "session_id")


def _required_text(value: Any, name: str) -> str:
    if blank(value):
        raise InvalidInputError(f"{name} is required and must not be blank.")
    check_unicode(value, name)
    return value


# The longest working folder a session records: Linux's longest path.
MAX_DIRECTORY = 4096


def given_directory(directory: str | None) -> str | None:
    """A session's working folder, refused when no path is so long or it holds a control
    character: a 5 MB one made a 5 MB session file."""
    if directory is not None and len(directory) > MAX_DIRECTORY:
        raise InvalidInputError(f"directory is {len(directory)} characters long; the limit is {MAX_DIRECTORY}, the "
                                "longest path. Give the folder the session works in.")
    # Controls, format and line separators only: a folder may hold any space (U+3000 in Japanese).
    bad = next((ch for ch in directory or "" if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")), None)
    if bad is not None:
        raise InvalidInputError(f"directory contains U+{ord(bad):04X}, a control or invisible character; give the "
                                "folder the session works in as printable text.")
    return directory


def optional_text(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, not {kind_of(value)}.")
    check_unicode(value, name)
    return value.strip() or None





# -- review --------------------------------------------------------------------------------------


def review_entry(status: str, path: str, before: Session | None, after: Session | None) -> dict[str, Any]:
    """What a branch did to one session file, for ``slayer-kb review``: ``status`` (added,
    changed, removed, renamed), the fields it changed, the prompts it added (a session's prompts
    only grow; others show as removed)."""
    session = after or before
    entry: dict[str, Any] = {"id": session.id if session else id_of_file(path.rsplit("/", 1)[-1]) or path,
                             "status": status, "path": path, "project": session.project if session else None}
    if before is not None and after is not None and before.id != after.id:
        entry["old_id"] = before.id
    old_prompts = [(p.created_at, p.content) for p in before.prompts] if before else []
    new_prompts = [(p.created_at, p.content) for p in after.prompts] if after else []
    entry["prompts_added"] = [content for item in new_prompts if item not in old_prompts for content in [item[1]]]
    entry["prompts_removed"] = [content for item in old_prompts if item not in new_prompts for content in [item[1]]]
    if before is not None and after is not None:
        entry["fields"] = [key for key in SESSION_KEYS if key != "prompts" and getattr(before, key) != getattr(after, key)]
    else:
        entry["fields"] = []
    entry["ended_at"] = after.ended_at if after else None
    entry["summary"] = after.summary if after else None
    return entry



# -- import from Engram --------------------------------------------------------------------------


def import_engram(tx: Transaction, rows: Any, prompt_rows: Any, where: str, warnings: list[str],
                  time_of: Any) -> tuple[list[Change], int, int]:
    """The changes that bring an Engram export's ``sessions`` and ``prompts`` into the session
    files (in ``tx``, for the import's one commit), with how many sessions were made and
    prompts added. An existing session only gains what it lacks (project, directory, end,
    summary) and the prompts it does not have yet; ``time_of`` reads Engram's times."""
    kb = tx.kb
    now = utc_now()
    touched: dict[str, Session] = {}
    folded = _Folded(kb)
    twins: set[str] = set()  # the sessions skipped, their files colliding with another's
    made = added = 0

    def current(session_id: str, started_at: str, here: str) -> Session | None:
        """The session as imported so far; None, said once, for one whose file would collide
        with another's (Engram's ids are case-sensitive, file names on macOS and Windows not):
        one such session refused the whole import."""
        nonlocal made
        if session_id in twins:
            return None
        if session_id not in touched:
            found = read(kb, session_id)
            if found is None:
                if (other := folded.twin(session_id)) is not None:
                    twins.add(session_id)
                    warnings.append(
                        f"{here}: session id '{session_id}' differs only in letter case from the session '{other}', "
                        "and their files would collide on macOS and Windows checkouts; that session and its prompts "
                        f"were skipped. To import them, give the session another id in the export (or '{other}' to "
                        "add them to that session), in its prompts too, and import again.")
                    return None
                found = Session(session_id, started_at)
                folded.add(session_id)
                made += 1
            touched[session_id] = found
        return touched[session_id]

    def text(row: dict[str, Any], key: str) -> str | None:
        value = row.get(key)
        return (engram.redact_private(value).strip() or None) if isinstance(value, str) else None

    for n, row in enumerate(rows if isinstance(rows, list) else []):
        here = f"{where}: session {n + 1}"
        session_id = _import_id(row, "id", here, warnings)
        if session_id is None:
            continue
        started = time_of(row.get("started_at"))
        if row.get("started_at") and started is None:
            warnings.append(f"{here}: started_at {row.get('started_at')!r} is not a time; using now.")
        session = current(session_id, started or now, here)
        if session is None:
            continue
        try:
            directory = given_directory(text(row, "directory"))
        except InvalidInputError as exc:
            warnings.append(f"{here}: {exc} It was left out.")
            directory = None
        # A session here began when either side says it first did (as sync merges two).
        began = min(session.started_at, started or session.started_at, key=time_order)
        ended = session.ended_at or time_of(row.get("ended_at"))
        if ended is not None and time_order(ended) < time_order(began):  # validate refuses an end before the start
            warnings.append(f"{here}: ended_at {ended!r} is before started_at {began!r}; the end was left out.")
            ended = None
        touched[session_id] = replace(
            session,
            started_at=began,
            project=session.project or engram.normalize_project(text(row, "project")),
            directory=session.directory or directory,
            ended_at=ended,
            summary=session.summary or text(row, "summary"),
        )
    for n, row in enumerate(prompt_rows if isinstance(prompt_rows, list) else []):
        here = f"{where}: prompt {n + 1}"
        session_id = _import_id(row, "session_id", here, warnings)
        content = text(row, "content") if session_id is not None else None
        if session_id is None or content is None:
            if session_id is not None:
                warnings.append(f"{here} has no content; skipped.")
            continue
        timed = time_of(row.get("created_at"))
        at = timed or now
        session = current(session_id, at, here)
        if session is None:
            continue
        cut: list[str] = []  # said only of a prompt added, not of one a re-import finds there
        content = _cut_prompt(content, kb.max_content, f"{here}: content", cut)
        # One with no time of its own is there already when its text is: a re-import adds none.
        if any(p.content == content and (timed is None or p.created_at == at) for p in session.prompts):
            continue
        warnings += cut
        project = engram.normalize_project(text(row, "project"))
        prompt = Prompt(at, content, project if project and project != session.project else None)
        touched[session_id] = replace(session, prompts=sorted([*session.prompts, prompt], key=lambda p: time_order(p.created_at)))
        added += 1
    changed = [session for session in touched.values() if read(kb, session.id) != session]
    # Also for a file missing here: a sparse checkout leaving it out, or a deletion by hand, would
    # otherwise have HEAD's session replaced by a new one. One check of git's status for them all.
    tx.require_committed(*(session.path for session in changed))
    return [change(kb, session) for session in changed], made, added


def _import_id(row: Any, key: str, where: str, warnings: list[str]) -> str | None:
    """The session id (``key``) of an export's ``row``, or None, said in ``warnings``, when the row
    is no object, has none, or has one no session can take."""
    if not isinstance(row, dict):
        warnings.append(f"{where} is not an object; skipped.")
        return None
    value = row.get(key)
    if value is None:
        warnings.append(f"{where} has no '{key}'; skipped.")
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    try:
        return check_session_id(value, "id")
    except InvalidInputError as exc:
        warnings.append(f"{where}: {exc} Skipped.")
        return None
