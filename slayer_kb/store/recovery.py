"""Finishing a commit that a crash interrupted (``repo.py``'s commit, the journal's record:
``journal.py``), as every command does when it takes the KB's lock, before anything else."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from ..core.errors import StoreError
from ..core.locate import id_of_path
from ..core.problems import command
from . import indexhold, journal, worktree
from .bounded import git_timeout
from .files import holds, torn

# The file of the disk space a commit holds while it publishes (``files.reserved_space``), in the
# state folder: a killed commit leaves it, and the next command takes it back.
RESERVE = "reserve"


class Store(worktree.Repository, Protocol):
    """What ``recover`` uses of ``GitStore``: the work tree's, the state folder, and the staging
    into a link of git's index while the killed commit's lock is held."""

    state: Path
    holding_index: indexhold.Holding
    tell: Callable[[str], None] | None
    recovers: bool  # False in a background job: what recovery finds is a foreground command's to say


def recover(store: Store) -> None:
    """Finish a commit that a crash interrupted after its update-ref: every file it changed
    is made to hold the committed bytes (whatever state the crash left it in) and staged; one a
    sparse checkout leaves out is only staged, still left out.

    If HEAD has moved on since (a plain ``git commit``, ``reset`` or ``checkout`` ran before
    any slayer-kb command), HEAD is the truth: only files the crash left half-written are
    repaired, to HEAD's version (removed where HEAD has no such file). Before the update-ref
    no file was touched: nothing to do.

    git's index lock the commit took (``indexhold``), when it still holds the nonce the journal
    names, is held on while the files are staged, then let go of; one another git command took is
    never touched.
    """
    with contextlib.suppress(FileNotFoundError):
        (store.state / RESERVE).unlink()  # the disk space a killed commit was holding
    unfinished = journal.read(store.state)
    if unfinished is None:
        return
    if not store.recovers:  # its warning would go nowhere (a commit a person undid since, unsaid)
        raise StoreError("A killed slayer-kb command left a commit to finish; the next command run in the KB "
                         "finishes it and says what it finds.")
    old, new, paths, lock = unfinished
    held = indexhold.owned_lock(store.index_file, lock)
    try:
        _finish(store, old, new, paths, held)
    finally:
        if held is not None:  # a no-op once committed; else the index stays as it was
            indexhold.release_lock(held)


def _finish(store: Store, old: str | None, new: str, paths: list[str], held: indexhold.Held | None) -> None:
    head = store.head()
    if head == old:
        # The update-ref of a writer killed while it ran may still run: HEAD says once it ends.
        journal.wait_published(store.state, git_timeout())
        head = store.head()
    if head == old:
        journal.clear(store.state)  # the update-ref never happened
        return
    objects = store.objects
    try:
        for path in paths:
            store.check_inside(path)
        repo_paths = [store.repo_path(path) for path in paths]
        after = objects.blobs_at(objects.tree_of(new), repo_paths)
        if head == new:
            data = objects.read_many("blob", {oid for oid in after.values() if oid})
            committed = {
                path: None if (oid := after[rp]) is None else data[oid]
                for path, rp in zip(paths, repo_paths, strict=True)
            }
            # As the command itself would have: a file a sparse checkout leaves out is staged, its
            # mark kept, and never written into the work tree.
            marks = worktree.index_marks(store, paths)
            outside = worktree.left_out(store, marks, paths)
            stale = {path: content for path, content in committed.items()
                     if path not in outside and not holds(store.root / path, content)}
            failed = worktree.write_files(store, stale)
            if failed:
                # The journal stays for the next command; git's index gets the commit's
                # version meanwhile, so nothing staged undoes it.
                with contextlib.suppress(StoreError), store.holding_index.into(held):
                    worktree.stage_blobs(store, {path: after[rp] for path, rp in zip(paths, repo_paths, strict=True)},
                                         marks)
                    indexhold.commit_lock(held)
                raise next(iter(failed.values()))
            try:
                # Staged under git's lock, as the commit would have: the killed writer's, else taken now.
                if held is None:  # taken now, named in the journal first as a commit names its own
                    claimed = indexhold.claim(store.index_file)
                    journal.name_lock(store.state, None if claimed is None else claimed.nonce)
                    held = indexhold.take_lock(claimed, "")
                with store.holding_index.into(held):
                    store.stage(paths, marks)
            except StoreError as exc:
                if held is not None:
                    indexhold.release_lock(held)
                raise StoreError(f"Cannot finish the commit {new[:12]} that an earlier slayer-kb command made: "
                                 f"git's index could not take its files: {exc}") from None
            indexhold.commit_lock(held)
            journal.clear(store.state)
            return
        before = objects.blobs_at(objects.tree_of(old) if old else None, repo_paths)
        ours = objects.blobs_at(objects.tree_of(head) if head else None, repo_paths)
        data = objects.read_many("blob", {oid for blobs in (before, after, ours) for oid in blobs.values() if oid})
        failed = worktree.write_files(store, {
            path: None if (oid := ours[rp]) is None else data[oid]
            for path, rp in zip(paths, repo_paths, strict=True)
            if torn(store.root / path, data.get(before[rp] or "", b""), data.get(after[rp] or "", b""))
        })
        if failed:
            raise next(iter(failed.values()))
        undone = [path for path, rp in zip(paths, repo_paths, strict=True) if ours[rp] == before[rp] != after[rp]]
        if undone:
            _tell(store, undone_warning(store.root, new, head, undone, {p: after[rp] is None
                                                                        for p, rp in zip(paths, repo_paths, strict=True)}))
    except OSError as exc:
        raise StoreError(
            f"Cannot finish the commit {new[:12]} that an earlier slayer-kb process was making: "
            f"{exc.filename or ''}: {exc.strerror}. Fix that path (or run 'git status' and "
            f"restore it), then retry; {journal.path(store.state)} lists the files."
        ) from None
    journal.clear(store.state)


def undone_warning(root: Path, new: str, head: str | None, paths: list[str], forgot: Mapping[str, bool]) -> str:
    """What to say of a killed commit ``new`` whose ``paths`` a later commit (HEAD ``head``: a
    person's, made after deleting the lock by hand) set back as they were before it, and the step
    that brings each memory back (``forgot``: the killed commit removed the file)."""
    steps = []
    for path in paths:
        if (memory_id := id_of_path(path)) is None:
            steps.append(f"{path}: 'git checkout {new[:12]} -- {path}'")
            continue
        steps.append(f"memory {memory_id}: '{command(root)} forget {memory_id}'" if forgot[path]
                     else f"memory {memory_id}: '{command(root)} restore {memory_id} --rev {new[:12]}'")
    return (f"the commit {new[:12]} of a slayer-kb command that was killed was undone by a commit made since "
            f"(HEAD {(head or '')[:12]}; git's index lock deleted by hand?). To bring it back: {'; '.join(steps)}.")


def _tell(store: Store, warning: str) -> None:
    if store.tell is not None:
        store.tell(warning)
    else:
        print(f"warning: {warning}", file=sys.stderr)
