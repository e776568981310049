"""A revision the user named (``--rev``, ``review BASE``, ``--against``, ``--onto``): one check,
and one message when it names no commit, for every command. Kept free of heavy imports, since
``validate`` (a pre-commit hook) needs it. And whether two histories added one memory."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.errors import InvalidInputError, MemoryFileError, NotFoundError, StoreError
from ..core.locate import MEMORY_LINK, id_of_path, memory_path
from ..core.memory import loads
from ..core.problems import command, git_command, words
from ..core.text import shown_value
from .gitenv import LITERAL_PATHS

if TYPE_CHECKING:
    from .repo import GitStore


def resolve_rev(store: GitStore, rev: str) -> str:
    """The commit ``rev`` names, or an error that says what to pass instead."""
    if not rev or rev.startswith("-"):
        raise InvalidInputError(f"{shown_value(rev)} is not a revision; give a commit, branch or tag (e.g. HEAD~1).")
    proc = store.git("rev-parse", "-q", "--verify", "--end-of-options", f"{rev}^{{commit}}", check=False)
    sha = proc.stdout.decode().strip()
    # 'HEAD^{/a..b}' holds '..' and is one revision: a range is said only of what names none.
    if (proc.returncode != 0 or not sha) and (ends := range_ends(rev)) is not None:
        # Its ends that name a commit, else the branches there are: never one that names none.
        such = [end for end in dict.fromkeys(ends) if resolves(store, end)] or branch_names(store)[:2]
        raise InvalidInputError(f"{shown_value(rev)} is a range of commits, where one revision is wanted: give one "
                                f"commit, branch or tag" + (f", such as {' or '.join(map(shown_value, such))}."
                                                            if such else f" (see '{git_command(store.root, 'log')}')."))
    if proc.returncode != 0 or not sha:
        raise NotFoundError(f"Unknown revision {shown_value(rev)}: give a commit, branch or tag (see "
                            f"'{git_command(store.root, 'log')}').")
    return sha


def resolves(store: GitStore, rev: str) -> bool:
    """Whether ``rev`` names a commit (``resolve_rev`` without its error)."""
    try:
        resolve_rev(store, rev)
    except (InvalidInputError, NotFoundError):
        return False
    return True


def range_ends(rev: str) -> tuple[str, str] | None:
    """The two ends of a range of commits, ``main..agent`` or ``main...agent`` (an end left out
    is HEAD, as git reads it); None for anything else, since no ref name holds ``..``."""
    if ".." not in rev:
        return None
    base, _dots, head = rev.partition("..." if "..." in rev else "..")
    return base or "HEAD", head or "HEAD"


def branch_names(store: GitStore) -> list[str]:
    """The branches of the repository, its own then the remote-tracking ones, by name."""
    listed = store.git("for-each-ref", "--format=%(symref) %(refname:short)", "refs/heads", "refs/remotes")
    # Not origin/HEAD: a name for another branch.
    return [line.partition(" ")[2] for line in listed.stdout.decode().splitlines() if not line.startswith("refs/")]


def two_ends(store: GitStore, rev: str, ends: tuple[str, str]) -> InvalidInputError:
    """The refusal of a range given ``review`` (``main..agent``), which takes its two ends as two
    arguments: the command to run with them, or, where an end names no commit (no ``main`` in a
    repository whose branch is ``trunk``), the branches that exist, never a command that fails."""
    said = f"{shown_value(rev)} is a range; review takes its two ends as two arguments, BASE then HEAD"
    unknown = [end for end in dict.fromkeys(ends) if not resolves(store, end)]
    if not unknown:
        return InvalidInputError(f"{said}, and compares them as 'git diff {ends[0]}...{ends[1]}' does: run "
                                 f"'{command(store.root)} review {words(*ends)}'.")
    named = branch_names(store)
    known = (f"one of the branches here ({', '.join(map(shown_value, named[:10]))}{', ...' if len(named) > 10 else ''})"
             ", a tag or a commit" if named else "a tag or a commit (there is no branch here)")
    given = words(*("BRANCH" if end in unknown else end for end in ends))
    return InvalidInputError(f"{said}, and {' and '.join(map(shown_value, unknown))} "
                             f"name{'s' if len(unknown) == 1 else ''} no commit here: run "
                             f"'{command(store.root)} review {given}', BRANCH {known}.")


def shallow_parting(store: GitStore, rev: str, head: str = "HEAD") -> StoreError | None:
    """The error for ``rev`` and ``head`` without a common ancestor in a shallow clone (one
    ``--depth`` deep, as CI checks out unless told otherwise), where the history they parted in
    was left out; None in a clone with all its history: then they are unrelated."""
    if not (store.git_dirs()[1] / "shallow").exists():
        return None
    shown = head if head == "HEAD" else f"'{head}'"
    return StoreError(f"'{rev}' and {shown} have no common ancestor in this shallow clone, which left out the "
                      "history where they parted: run 'git fetch --unshallow' (in CI, check out with "
                      "fetch-depth: 0), then retry.")


def same_memories(store: GitStore, kb_paths: list[str], base: str | None, ours: str, theirs: str) -> dict[str, str]:
    """Of the files ``kb_paths``, those that commit ``ours`` added since ``base`` (None: in all its
    history) and ``theirs`` added in commits ``ours`` lacks as one memory, each with the version
    both sides' changes start from: one side first added a version the other's history of the file
    held (a commit replayed by a rebase or cherry-picked under another hash, or a squash merge,
    which adds the branch's last version of the file), whatever either side changed since. Two
    ``git log`` walks for all of them, one where ``theirs`` added none."""
    if not kb_paths:
        return {}
    paths = {store.repo_path(path): path for path in kb_paths}
    # ``theirs``'s first: most paths asked of (a branch's new memories) it never added, and then
    # ``ours``'s history is not read.
    other = _histories(store, [theirs, f"^{ours}"], list(paths))
    if not other:
        return {}
    mine = _histories(store, [ours] if base is None else [ours, f"^{base}"], list(other))
    shared = {path: _shared(mine.get(path), other.get(path)) for path in paths}
    return {paths[path]: blob for path, blob in shared.items() if blob is not None}


def _shared(mine: tuple[str, set[str]] | None, other: tuple[str, set[str]] | None) -> str | None:
    """The version one side first added that the other's history held (``_histories``' entries)."""
    if mine is None or other is None:
        return None
    return mine[0] if mine[0] in other[1] else other[0] if other[0] in mine[1] else None


def _histories(store: GitStore, revs: list[str], paths: list[str]) -> dict[str, tuple[str, set[str]]]:
    """For each of ``paths`` (repository-relative) that a commit among ``revs`` added: (the blob
    the oldest such commit gave it, every blob those commits gave it), from one ``git log``."""
    proc = store.git("log", "--format=", "--raw", "-z", "--no-abbrev", "--no-renames", "--full-history", "--reverse",
                     *revs, "--", *paths, check=False, env=LITERAL_PATHS)
    found: dict[str, tuple[str, set[str]]] = {}
    tokens = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    for token, path in zip(tokens, tokens[1:], strict=False):
        fields = token.lstrip("\n").split()
        if not (fields and fields[0].startswith(":") and len(fields) == 5):
            continue
        blob, status = fields[3], fields[4]
        if path not in found:
            if status == "A":
                found[path] = (blob, {blob})
        elif status != "D":
            found[path][1].add(blob)
    return found


def rewritten_alike(store: GitStore, paths: list[str], seen: str, ours: str, theirs: str) -> dict[str, str]:
    """Of the memory files ``paths`` (repository-relative) that ``ours`` and ``theirs`` each hold
    (each side's own add), those that are one memory whose commit a side rewrote (a pushed save
    amended, a force push): ``seen``, the upstream as this clone last fetched it, held the file
    too, and all three versions have one ``created_at`` (which a move keeps and a new save makes
    anew, as ``guesses`` tells them apart). Each with its version at ``seen``, where both sides'
    changes start. Two clones that gave one id to two memories in one second (ids counted on each
    clone, or one number given with ``--id`` on both) never saw the other's on the upstream before
    they pushed it: ``seen`` lacks the file, and the two stay two. One read of the three trees."""
    if not seen or not paths:
        return {}
    objects = store.objects
    sides = [objects.blobs_at(objects.tree_of(rev), paths) for rev in (seen, ours, theirs)]
    held: dict[str, tuple[str, list[str]]] = {}
    for path in paths:
        memory_id = id_of_path(path[len(store.prefix):]) if path.startswith(store.prefix) else None
        blobs = [blob for side in sides if (blob := side[path])]
        if memory_id and len(blobs) == len(sides):
            held[path] = (memory_id, blobs)
    texts = objects.read_many("blob", {blob for _id, blobs in held.values() for blob in blobs})
    found: dict[str, str] = {}
    for path, (memory_id, blobs) in held.items():
        try:
            made = {loads(texts[blob].decode("utf-8", "surrogateescape"), memory_id).created_at for blob in blobs}
        except MemoryFileError:  # a version that does not read is no memory to call the same
            continue
        if len(made) == 1:
            found[path] = blobs[0]
    return found


def first_added(store: GitStore, kb_paths: list[str], revs: list[str]) -> dict[str, int]:
    """Of the files ``kb_paths``, those a commit among ``revs`` added, each with the time the first
    such commit was committed (seconds), from one ``git log``: of a memory two sides added as one
    (``same_memories``), the side that committed it first is the side the other took it from (a
    squash, rebase or cherry-pick, or a copy, commits it anew)."""
    paths = {store.repo_path(path): path for path in kb_paths}
    proc = store.git("log", "--format=%x01%ct", "--name-only", "--no-renames", "--diff-filter=A", "--full-history",
                     "-z", *revs, "--", *paths, check=False, env=LITERAL_PATHS)
    found: dict[str, int] = {}
    for commit in proc.stdout.decode("utf-8", "surrogateescape").split("\x01")[1:]:
        when, *names = commit.split("\0")
        for name in (name.lstrip("\n") for name in names):
            if name in paths:
                found[paths[name]] = min(found.get(paths[name], int(when)), int(when))
    return found


def taken_from(store: GitStore, kb_paths: list[str], base: str, head: str, other: str) -> set[str]:
    """Of ``kb_paths``, memories ``head`` and ``other`` both added since ``base`` as one
    (``same_memories``), those ``head`` took in from ``other`` (a cherry-pick, a squash or a copy of
    its commits) rather than ``other`` from ``head`` (a pull request merged by squash or rebase):
    ``other`` committed them first (``first_added``)."""
    if not kb_paths:
        return set()
    here, there = (first_added(store, kb_paths, [tip, f"^{base}"]) for tip in (head, other))
    return {path for path in kb_paths if path in here and path in there and there[path] < here[path]}


def added_alike(store: GitStore, path: str, ours: str, theirs: str) -> str | None:
    """The version of the file ``path`` (repository-relative) that ``ours`` or ``theirs`` first
    added in commits the other lacks, when the other's history of it held that version too (as
    ``same_memories`` matches them): the version both sides' edits start from, which git's merge
    base (from before either added it) does not hold. None otherwise."""
    mine = _histories(store, [ours, f"^{theirs}"], [path]).get(path)
    return _shared(mine, _histories(store, [theirs, f"^{ours}"], [path]).get(path) if mine else None)


def added_version(store: GitStore, kb_path: str, rev: str = "HEAD") -> tuple[str, str] | None:
    """(the subject of the commit that last added ``kb_path`` in ``rev``'s history, the text it
    added), None when none did."""
    out = store.git("log", "-1", "--format=%s", "--raw", "--no-abbrev", "--no-renames", "--diff-filter=A", rev, "--",
                    store.repo_path(kb_path), check=False, env=LITERAL_PATHS).stdout.decode("utf-8", "replace")
    subject, _, rest = out.partition("\n")
    fields = next((line.split() for line in rest.splitlines() if line.startswith(":")), [])
    if len(fields) < 4:
        return None
    return subject, store.objects.read("blob", fields[3]).decode("utf-8", "replace")


def forgot_at(store: GitStore, rev: str) -> Callable[[frozenset[str]], bool]:
    """Whether commit ``rev`` lacks every memory the given ``memory:`` links name: a side's strip
    of them was its own forget's cascade (``merging.stripped``)."""

    def forgot(links: frozenset[str]) -> bool:
        paths = [store.repo_path(memory_path(link.removeprefix(MEMORY_LINK))) for link in links]
        return all(blob is None for blob in store.objects.blobs_at(store.objects.tree_of(rev), paths).values())

    return forgot


def restored_after(store: GitStore, memory_id: str, forgot: str) -> str | None:
    """The commit that next added ``memory_id``'s file after ``forgot`` deleted it, when that is a
    ``restore --rev`` of it (``memory: restore ID as of REV``, ops/history.py: the memory back, as
    against a save that gave the id to another memory); None when there is none such."""
    out = store.git("log", "--reverse", "--format=%H %s", "--diff-filter=A", "--ancestry-path", f"{forgot}..HEAD",
                    "--", store.repo_path(memory_path(memory_id)), env=LITERAL_PATHS).stdout.decode("utf-8", "replace")
    commit, _, subject = out.partition("\n")[0].partition(" ")
    return commit if commit and subject.startswith(f"memory: restore {memory_id} as of ") else None
