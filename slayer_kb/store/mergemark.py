"""A ``slayer-kb merge REF`` killed before it finished (``kill -9``, a Ctrl-C that stopped git, a
lost machine): git's merge may have written REF's files into the work tree, untracked where git
itself died before it wrote its index, or left its merge uncommitted (MERGE_HEAD) without the
KB's folds and checks, and git's own state names neither REF nor the way back.

The merge records what it merges in the work tree's git dir before it runs git (``begin``) and
drops the record once it finished or stopped as designed (``end``: a conflict's stop gives its
own steps). The next command that writes, under the KB's lock (so no merge of this clone still
runs, or, asked without it, none whose process, the pid and its start time, lives), reads a
record left behind (``interrupted``): nothing written, or REF committed into HEAD, and the record
goes; else the command is refused with the files (from the KB's folder) and the commands that
undo the merge, after which ``slayer-kb merge REF`` merges again; a command that only reads answers,
with the same words as a warning (``read_warning``). Killed once git's merge was committed, the
record becomes one of folds owed, kept by git's merge commit in a file of its own (``owed``):
until that commit's folds are made (``folded``) or it is pushed, whichever branch HEAD is on
and whatever merge runs next. Nothing is undone here: a file may hold
an edit the person made since, and only they can tell.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.fileio import write_whole
from ..core.problems import cd_step, command, command_in, words
from ..core.text import listed
from .gitenv import LITERAL_PATHS

if TYPE_CHECKING:
    # What this module asks of the store (repo.py's ``GitStore``, which imports this module).
    from .worktree import Repository as GitStore

RECORD = "slayer-kb-merging.json"
OWED = "slayer-kb-owed.json"  # git's merge commit -> the record of a merge killed once git committed it
_STATUS_ENV = {**LITERAL_PATHS, "GIT_OPTIONAL_LOCKS": "0"}  # a look that never takes index.lock


def begin(store: GitStore, ref: str, sha: str, before: str) -> None:
    """Record that a merge of ``ref`` (commit ``sha``) onto ``before`` (HEAD, of branch ``branch``) starts."""
    path = store.git_dirs()[0] / RECORD
    pid = os.getpid()
    record = {"ref": ref, "sha": sha, "before": before, "branch": store.branch(), "pid": pid,
              "started": _started(pid)}
    path.write_text(json.dumps(record), encoding="utf-8")


def end(store: GitStore) -> None:
    """The merge finished, or stopped where its own message says what to do."""
    (store.git_dirs()[0] / RECORD).unlink(missing_ok=True)


@contextlib.contextmanager
def recorded(store: GitStore, ref: str, sha: str, before: str) -> Iterator[None]:
    """``begin``, and ``end`` once the block returns or raises an error (a conflict's stop with its
    steps, a refusal naming its cause); kept by a kill, or a Ctrl-C that may have stopped git."""
    begin(store, ref, sha, before)
    try:
        yield
    except Exception:
        end(store)
        raise
    end(store)


def _left(store: GitStore) -> tuple[str, str, str, str] | None:
    """(REF, its commit, HEAD before, its branch) of a merge's record left by a process that is
    gone; None when there is none (one cut short is dropped) or its merge still runs."""
    try:
        record = json.loads((store.git_dirs()[0] / RECORD).read_text(encoding="utf-8"))
        ref, sha, before, pid = str(record["ref"]), str(record["sha"]), str(record["before"]), int(record["pid"])
        branch, started = str(record.get("branch", "")), record.get("started")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):  # a record cut short: git's state decides alone
        end(store)
        return None
    if _running(pid, started):  # a merge going on (asked without the lock: sync's first look, edit's)
        return None
    return ref, sha, before, branch


def _committed(store: GitStore, sha: str, before: str) -> bool:
    """Whether HEAD holds REF (``sha``) with no merge in progress: a commit of other work moves
    HEAD past what git left too."""
    head = store.head()
    return (not os.path.lexists(store.git_dirs()[0] / "MERGE_HEAD") and head is not None and head != before
            and _holds(store, sha, head))


def _holds(store: GitStore, commit: str, rev: str) -> bool:
    return store.git("merge-base", "--is-ancestor", commit, rev, check=False).returncode == 0


def _merge_commit(store: GitStore, rev: str, before: str, sha: str) -> str | None:
    """git's merge of ``sha`` onto ``before`` (its parents, in that order) in ``rev``'s history; None else."""
    out = store.git("rev-list", "--min-parents=2", "--parents", rev, f"^{before}", check=False).stdout.decode()
    return next((line.split()[0] for line in out.splitlines() if line.split()[1:] == [before, sha]), None)


def _settle(store: GitStore, left: tuple[str, str, str, str]) -> None:
    """The record of a merge killed once git committed it, read while HEAD holds REF: kept as folds
    owed, keyed by git's merge commit (found on HEAD, else on the merge's branch: HEAD may be REF's
    branch, switched to), so that neither a read on another branch nor the next merge's record
    drops it; dropped when no merge commit is there (a fast-forward, or the branch reset since)."""
    ref, sha, before, branch = left
    merge = _merge_commit(store, "HEAD", before, sha)
    if merge is None and branch and branch != store.branch():
        merge = _merge_commit(store, f"refs/heads/{branch}", before, sha)
    if merge is not None:
        records = _owed_records(store)
        records[merge] = {"ref": ref, "sha": sha, "before": before, "branch": branch}
        _write_owed(store, records)
    end(store)


def _owed_records(store: GitStore) -> dict[str, dict[str, str]]:
    try:
        records = json.loads((store.git_dirs()[0] / OWED).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none, or cut short: a sync still folds what is owed before it pushes
        return {}
    return records if isinstance(records, dict) else {}


def _write_owed(store: GitStore, records: dict[str, dict[str, str]]) -> None:
    path = store.git_dirs()[0] / OWED
    if records:  # whole or not at all: reads settle records without the KB's lock, two at once
        write_whole(path, json.dumps(records))
    else:
        path.unlink(missing_ok=True)


def folded(store: GitStore, merge: str) -> None:
    """The folds owed on git's merge commit ``merge`` are made: its record goes."""
    records = _owed_records(store)
    if records.pop(merge, None) is not None:
        _write_owed(store, records)


def _folded_since(store: GitStore, merge: str) -> bool:
    """Whether a fold's commit follows ``merge`` on HEAD: its folds made (the merge killed as that
    commit moved the branch), or a later merge's or sync's, which fold the whole tree."""
    return bool(store.git("rev-list", "-1", "--grep=^memory: merge ", f"{merge}..HEAD").stdout.strip())


def owed(store: GitStore) -> tuple[str, str, str, str] | None:
    """(REF, its commit, HEAD before, the merge's commit) of a merge killed once git's merge was
    committed, before the knowledge base's folds and checks that follow it: its record kept
    (``_settle``), HEAD holding that commit, which the branch's upstream does not hold (a sync
    folds a merge made by hand before it pushes it). None else. A record whose commit is pushed,
    or its branch no longer holds, goes; one of another branch's merge stays."""
    if (left := _left(store)) is not None and _committed(store, *left[1:3]):
        _settle(store, left)
    records = _owed_records(store)
    found, kept = None, dict(records)
    for merge, record in records.items():
        branch = record.get("branch", "")
        if _holds(store, merge, "HEAD"):
            if _holds(store, merge, "@{upstream}") or _folded_since(store, merge):
                del kept[merge]
            elif found is None:
                found = (record["ref"], record["sha"], record["before"], merge)
        elif branch and not _holds(store, merge, f"refs/heads/{branch}"):
            del kept[merge]
    if kept != records:
        _write_owed(store, kept)
    return found


def interrupted(store: GitStore) -> str | None:
    """What to tell the person when a merge's record is left (call under the KB's lock), ending
    with the commands that undo it; None when the merge wrote nothing (the record dropped) or
    HEAD holds REF (committed: the record kept while its folds are ``owed``)."""
    if (left := _left(store)) is None:
        return None
    ref, sha, before, _branch = left
    merging = os.path.lexists(store.git_dirs()[0] / "MERGE_HEAD")
    if _committed(store, sha, before):
        _settle(store, left)
        return None
    # The files the merge may have written: those that differ between the two sides. git's merge
    # refuses to write over an untracked file, so one there now is the merge's (or edited since).
    proc = store.git("diff", "--name-only", "-z", "--no-renames", before, sha, check=False)
    paths = [p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p]
    touched, staged, untracked = _changed(store, paths) if paths else ([], [], [])
    if not (touched or staged or untracked or merging):
        end(store)
        return None
    given, kb = words(ref), command_in(store.root)
    # From the KB's folder, where the steps run: a file beside the KB (a code repository's) as ../src/a.py.
    folder = store.prefix.rstrip("/") or "."
    mine = tuple([posixpath.relpath(p, folder) for p in files] for files in (touched, staged, untracked))
    held = "; ".join(f"{listed(files)} {state}" for files, state in
                     zip(mine, ("changed", "staged", "untracked"), strict=True) if files)
    if merging:
        undo = ["git merge --abort"]
        what = (f"git's merge of {given} is in progress, not committed, without the knowledge base's folds and "
                f"checks" + (f" ({held})" if held else ""))
    else:
        undo = [f"{step} {words(*files)}" for step, files in
                zip(("git checkout HEAD --", "git rm -q -f --", "rm --"), mine, strict=True) if files]
        what = f"git was stopped while it wrote {given}'s files, and committed nothing: {held}"
    lock = store.git_dirs()[0] / "index.lock"  # git's, killed with it: no git of the merge runs now
    # The lock first: git's steps refuse to run while it is there.
    steps = [*cd_step(store.root), *([f"rm -f -- {words(str(lock))}"] if os.path.lexists(lock) else []), *undo]
    lost = (" The steps throw away any edit made to these files since the merge stopped: keep a copy of one you "
            "changed.") if held else ""
    return (f"'{kb} merge {given}' was interrupted before it finished: {what}. This branch's commits are as "
            f"they were, and {given} holds its files as git wrote them.{lost} To undo the merge: {'; '.join(steps)}; "
            f"then '{kb} merge {given}' merges it again.")


def read_warning(store: GitStore) -> str | None:
    """What a command that only reads (``list``, ``get``, ``search``) says beside its answer while
    a merge's record is left (``interrupted``, asked without the lock: a merge still running is
    none): it read the files as git left them. None at once where there is no record (one stat)."""
    if not any(os.path.lexists(store.git_dirs()[0] / name) for name in (RECORD, OWED)):
        return None
    if (problem := interrupted(store)) is not None:
        return (f"this answer is read from a half-merged work tree (files git left may hold conflict markers, or "
                f"another branch's memories, none of them committed): {problem}")
    return owed_warning(store)


def owed_warning(store: GitStore) -> str | None:
    """What to say of the folds a merge killed once committed owes (``owed``), with the step run
    where the person is; None when none are owed."""
    if (left := owed(store)) is None:
        return None
    # A step run where the person is (no cd before it): with --kb naming the KB's folder from there.
    ref, kb = words(left[0]), command(store.root)
    return (f"'{kb} merge {ref}' was interrupted once it had committed git's merge ({left[3][:12]}), before the "
            "knowledge base's folds and checks: a topic key both sides saved may be held by two memories here, a "
            f"link may name a memory the other side forgot. Run '{kb} merge {ref}' again, which makes them (so does "
            f"the next '{kb} sync', before it pushes).")


def _running(pid: int, started: object) -> bool:
    """Whether the merge's process ``pid`` (this one included), started at ``started``, is alive:
    a pid the system gave again to another process since names no merge."""
    now = _started(pid)
    if started is not None and now is not None:
        return now == started
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's: alive
        return True
    return True


def _started(pid: int) -> str | None:
    """When process ``pid`` started (field 22 of /proc/PID/stat, in clock ticks since boot); None
    where there is no /proc or no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # the name, in parentheses, may hold spaces
    return fields[19] if len(fields) > 19 else None


def _changed(store: GitStore, paths: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Of ``paths`` (repository-relative), sorted: those HEAD holds that the index or work tree
    changed, those HEAD does not hold that the index does, and those untracked."""
    out = store.git("status", "--porcelain", "-z", "-uall", "--no-renames", "--ignore-submodules=all",
                    "--", *paths, check=False, env=_STATUS_ENV).stdout
    found: tuple[list[str], list[str], list[str]] = ([], [], [])
    for entry in sorted(out.decode("utf-8", "surrogateescape").split("\0")):
        if len(entry) > 3:
            code, path = entry[:2], entry[3:]
            found[2 if code == "??" else 1 if code[0] == "A" else 0].append(path)
    return found
