"""``edit ID``: a memory file in ``$VISUAL`` / ``$EDITOR``, checked on close, committed when valid.

The editor gets a copy of the file in ``.slayer-kb/tmp/`` (never the file in ``memories/``, so a
half-finished edit is never seen by the index, the watcher or a concurrent ``git`` command). On
close the text is parsed (``loads``), its title held to one line as ``validate`` holds it, and its
entities resolved; a problem is reported as
``path:line: message`` and the caller decides whether to reopen the editor. A valid change is
written in canonical form, with its entity references canonicalised, as one commit
``memory: edit ID``. The edit is written as the person left it: ``updated_at`` and
``revision_count`` are not bumped behind their back (they may edit them by hand). A file someone
broke earlier can be repaired with ``edit`` too: the broken text is what the editor opens, and
closed as it was, it is checked all the same (its problem shown, the editor reopened on it).
"""

from __future__ import annotations

import functools
import os
import shlex
import stat
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import engram, problems
from ..core.errors import ConflictError, InvalidInputError, KBError, MemoryFileError, NotFoundError, unreadable
from ..core.ids import check_existing_id, meant_id
from ..core.memory import Memory, dumps, key_line, loads
from ..core.outcomes import EditResult
from ..core.problems import words
from ..transaction import memory_change
from .schema_words import memory_times

if TYPE_CHECKING:
    from ..context import Context

DEFAULT_EDITOR = "vi"




def check_memory_text(
    kb: Context, memory_id: str, text: str, path: str | None = None
) -> tuple[Memory, list[str]]:
    """Parse ``text`` and resolve its entities against the KB as it is now.

    Returns the memory with canonical entities and the resolver's warnings; raises
    :class:`MemoryFileError` (``path:line: message``) for any problem.
    """
    where = path or f"memories/{memory_id}.yaml"
    memory = loads(text, memory_id, where)
    if (said := engram.title_problem(memory.title)) is not None:  # as validate says it
        raise MemoryFileError(where, key_line(text, "title"), said)
    if (impossible := next(memory_times(text, memory.to_dict()), None)) is not None:  # validate's too: 2026-02-30
        raise MemoryFileError(where, *impossible)
    kb.check_learning(memory.learning)
    try:
        entities, warnings = kb.resolve_entities(memory.entities, given=False) if memory.entities else ([], [])
    except KBError as exc:
        raise MemoryFileError(where, key_line(text, "entities"), f"entities: {exc}") from None
    return memory.evolve(entities=entities), warnings


def editor_command(root: Path, memory_id: str) -> list[str]:
    """The editor to run on memory ``memory_id`` of the KB in ``root`` (which its advice names)."""
    command = os.environ.get("VISUAL") or os.environ.get("EDITOR")  # one set empty counts as unset
    if not command and not all(stream is not None and stream.isatty() for stream in (sys.stdin, sys.stdout)):
        # An agent's call: vi with no terminal would print its screen codes as output, or wait. The
        # advice's '--content -' waits for the text: pasted as printed, '--content ...' committed "...".
        raise InvalidInputError(
            "No editor to run: $VISUAL and $EDITOR are unset, and vi needs a terminal, which this is not. "
            "Set EDITOR to a command that edits the file it is given, or change the memory with "
            f"'{problems.command(root)} update {words(memory_id)} --content -' (the new text on stdin; MCP: mem_update).")
    try:
        parts = shlex.split(command or DEFAULT_EDITOR)
    except ValueError as exc:  # an unbalanced quote
        raise InvalidInputError(f"$VISUAL / $EDITOR ({command!r}) cannot be split into a command: {exc}; quote it "
                                "as a shell would, e.g. EDITOR='code --wait'.") from None
    if not parts:
        raise InvalidInputError("$VISUAL / $EDITOR is blank; set it to your editor, e.g. EDITOR=nano.")
    return parts


def edit(
    kb: Context,
    memory_id: str,
    reopen: Callable[[str], bool],
    run_editor: Callable[[Path], None] | None = None,
) -> EditResult:
    """Edit ``memory_id``; ``reopen(problem)`` says whether to open the editor again on a problem."""
    check_existing_id(memory_id, "to edit")
    kb.check_not_moved(memory_id)  # the file now holds what the id names here, not what was saved
    kb.refuse_during_git_operation()  # before the editor opens: its commit would be refused
    path = kb.memories_dir / f"{memory_id}.yaml"
    original = read_memory_file(path, memory_id)
    if original is None:
        kb.check_gone(memory_id)  # moved or deleted, by hand or by a commit
        meant = meant_id(memory_id, kb.memory_exists, kb.file_ids)  # as get names another letter case
        raise NotFoundError(f"No memory with id '{memory_id}'{meant}." if meant else
                            f"No memory with id '{memory_id}'; create it with '{problems.command(kb.root)} save ... --id {words(memory_id)}'.")
    run = run_editor or functools.partial(_run_editor, editor_command(kb.root, memory_id))
    draft = kb.state_dir() / "tmp" / f"edit-{uuid.uuid4().hex[:8]}-{memory_id}.yaml"
    draft.write_bytes(original)
    keep_draft = False
    try:
        while True:
            run(draft)
            text = draft.read_bytes().decode("utf-8", "replace")
            # Checked even when unchanged: a file broken by hand, opened to be repaired and closed
            # as it was, is no valid memory that 'edit' let through.
            unchanged = text.encode("utf-8") == original
            try:
                memory, warnings = check_memory_text(kb, memory_id, text)
            except (MemoryFileError, InvalidInputError) as exc:
                if reopen(str(exc)):
                    continue
                if unchanged:
                    raise InvalidInputError(f"{exc}\nNothing was committed: the file is as it was, with this "
                                            f"problem; run '{problems.command(kb.root)} edit "
                                            f"{words(memory_id)}' again to fix it.") from None
                keep_draft = True
                raise InvalidInputError(
                    f"{exc}\nNothing was committed; your edit is kept in {draft}."
                ) from None
            if unchanged:
                return EditResult(memory_id, False, None, warnings)
            return _commit_edit(kb, memory, original, warnings)
    finally:
        if not keep_draft:
            draft.unlink(missing_ok=True)


def _commit_edit(kb: Context, memory: Memory, original: bytes, warnings: list[str]) -> EditResult:
    path = kb.memories_dir / f"{memory.id}.yaml"
    canonical = dumps(memory)
    with kb.transaction() as tx:
        try:
            current = read_memory_file(path, memory.id)
        except MemoryFileError:
            current = None  # replaced by a link or a FIFO meanwhile: a change like any other
        if current != original:
            raise ConflictError(
                f"memories/{memory.id}.yaml changed while you were editing it (another save, a git "
                f"command?); nothing was committed. Run '{problems.command(kb.root)} edit {words(memory.id)}' again."
            )
        if canonical.encode("utf-8") == original:
            return EditResult(memory.id, False, None, warnings)
        commit = tx.commit([memory_change(memory, canonical)], f"memory: edit {memory.id}")
    return EditResult(memory.id, commit is not None, commit, warnings)


_KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket",
          stat.S_IFCHR: "a device", stat.S_IFBLK: "a device"}


def read_memory_file(path: Path, memory_id: str) -> bytes | None:
    """The bytes of a memory file, None if there is none; :class:`MemoryFileError` for a symlink
    or anything but a regular file. Links are never followed (the check and the open both refuse
    them) and a FIFO is never waited on, so what the editor gets is the file and only the file."""
    where = f"memories/{memory_id}.yaml"
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    by_hand = "; move it out of memories/ by hand, then retry"
    symlink = MemoryFileError(where, None, f"is a symlink; refusing to follow it{by_hand}", names_fix=True)
    if path.is_symlink():
        raise symlink
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if path.is_symlink():  # made a link since the check: O_NOFOLLOW refused it
            raise symlink from None
        raise unreadable(where, exc) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
            raise MemoryFileError(where, None, f"is {kind}, not a regular file; refusing to open it{by_hand}",
                                  names_fix=True)
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read()
    finally:
        os.close(fd)


def _run_editor(editor: list[str], draft: Path) -> None:
    command = [*editor, str(draft)]
    try:
        proc = subprocess.run(command, check=False)
    except FileNotFoundError:
        raise InvalidInputError(
            f"Editor '{command[0]}' not found; set $VISUAL or $EDITOR to an installed editor."
        ) from None
    except OSError as exc:  # not a program: no execute permission, a folder, no interpreter
        raise InvalidInputError(f"The editor '{command[0]}' cannot be run ({exc.strerror}); set $VISUAL or $EDITOR "
                                "to an installed editor.") from None
    if proc.returncode != 0:
        raise InvalidInputError(
            f"The editor '{command[0]}' exited with status {proc.returncode}; nothing was committed."
        )
