"""git's rename guess told from a move by the memory itself.

git pairs a file a side deleted with one it added as a move when they are 50% alike. Short
memories share most of their lines (type, project, scope, session, counts), so a memory forgotten
and a new one saved in the same commits read as a move: a merge or rebase then stops on two such
saves as on two renames of one memory, and merges an edit of the forgotten memory into the new
one. A move keeps the memory's ``created_at`` however it is made (``rename``, ``git mv`` by hand, a
squash merge that drops ``rename``'s trailers); a new save has its own. So a pair of memory files
whose ``created_at`` differ is a forget and a save, and any other pair (a moved memory, a moved
catalog or code file) a move git must follow though an edit made the file unlike the old one."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from ..core.errors import MemoryFileError
from ..core.locate import MEMORIES_DIR, id_of_path, memory_path
from ..core.memory import loads
from .renames import last_deletion
from .repo import GitStore


@dataclass(frozen=True)
class Guess:
    """A pair git's rename guess made that is no exact move: repository paths of the file deleted
    and the one added; ``saved``: both are memories with different ``created_at``, a forget and a
    new save (a memory that does not read is taken for a move, as git takes it)."""

    old: str
    new: str
    saved: bool


# Pairs of files git's rename guess makes, with their blobs; in English, to read its warning.
_RENAMES = ("-M", "-z", "--raw", "--no-abbrev", "--diff-filter=R")
_ENGLISH = {"LC_ALL": "C"}
# git's words (on stderr) when too many files were deleted and added for it to pair the unlike
# ones (``diff.renameLimit``, 1000 by default; a merge's ``merge.renameLimit``, 7000 by default).
_SKIPPED = b"rename detection was skipped"


def guessed_moves(store: GitStore, base: str, tip: str) -> list[Guess]:
    """The pairs git's rename guess makes of ``base..tip``, as a merge of ``tip`` does (the whole
    repository), but exact moves: one ``git diff``, and the memory pairs' files read."""
    return _guesses(store, _pairs(store.git("diff", *_RENAMES, base, tip).stdout))


def rename_detection(store: GitStore, bases: list[str], tips: tuple[str, str], replays: bool,
                     not_moves: Collection[tuple[str, str]] = ()) -> list[str]:
    """The options ``git merge`` and ``git rebase`` of ``tips`` (ours, theirs; parted at ``bases``,
    ``merge_bases``') take for git's rename detection: exact moves alone (``-X find-renames=100%``)
    when every pair git's guess makes is a forget and a new save (``Guess.saved``), so that both new
    memories are kept and an edit of the forgotten one stops as the forget against an edit it is;
    else none, git's guess on as it is (it follows a real move into the edited file). Not
    ``no-renames``: git's default strategy (ort) ignores it. The pairs are asked as the operation
    meets them: a merge (``replays`` false) diffs each side's range; a rebase replays our commits
    one by one onto theirs, so theirs' range and each of our commits (a file moved with a small
    edit, then rewritten by a later commit, is a move in the first and a delete and an add in the
    range). The first pair that is a move settles it: the rest is not asked. git's guess stays on
    with several merge bases (git merges the bases first, its guess on, and a move made on one
    base's side is none seen from the other: no one base tells) and where git skipped pairing
    unlike files (too many). ``not_moves``: pairs of ids (deleted, added) taken as a forget and a
    save whatever their ``created_at`` (a fold whose memory kept was forgotten since: followed,
    an edit of the folded one would bring it back)."""
    if len(bases) != 1:
        return []
    ours, theirs = tips
    asks: list[tuple[str, ...]] = [("diff", *_RENAMES, bases[0], theirs),
                                   ("log", *_RENAMES, "--format=", f"{bases[0]}..{ours}") if replays
                                   else ("diff", *_RENAMES, bases[0], ours)]
    guessed = False
    for args in asks:
        proc = store.git(*args, env=_ENGLISH)
        if _SKIPPED in proc.stderr:
            return []
        guesses = _guesses(store, _pairs(proc.stdout))
        if not all(guess.saved or _ids(store, guess) in not_moves for guess in guesses):
            return []
        guessed = guessed or bool(guesses)
    return ["-X", "find-renames=100%"] if guessed else []


def moved_by_hand(store: GitStore, base: str, tip: str, ids: set[str], held: bool = True) -> dict[str, str]:
    """The memories of ``ids`` that commits of ``base..tip`` moved to another id with no
    ``rename`` (``git mv``, a squash merge that dropped its trailer), each to where its moves end
    (a file ``tip`` holds; with ``held`` off, wherever they end): a commit that deleted the file
    and added its bytes under another name.
    Not a move by likeness, nor a forget and a save of the same bytes in commits of their own
    (docs/teams.md): either would point a link to a forgotten memory at a new one."""
    out = store.git("log", "--find-renames=100%", "-z", "--raw", "--no-abbrev", "--format=", "--diff-filter=R",
                    "--reverse", f"{base}..{tip}", "--", store.repo_path(f"{MEMORIES_DIR}/")).stdout
    steps: dict[str, str] = {}
    for _blobs, (old_path, new_path) in _pairs(out, exact=True):
        old, new = id_of_path(old_path[len(store.prefix):]), id_of_path(new_path[len(store.prefix):])
        if old is not None and new is not None:
            steps[old] = new
    ends = {}
    for old in ids & steps.keys():
        new, seen = steps[old], {old}
        while new in steps and new not in seen:  # moved again, in a later commit
            seen.add(new)
            new = steps[new]
        ends[old] = new
    if not held or not ends:
        return ends
    there = store.objects.blobs_at(store.objects.tree_of(tip), [store.repo_path(memory_path(new))
                                                                 for new in ends.values()])
    return {old: new for old, new in ends.items() if there.get(store.repo_path(memory_path(new)))}


def moved_to(store: GitStore, memory_id: str) -> tuple[str, str] | None:
    """Where the commit that last deleted ``memory_id``'s file moved it by hand (``moved_by_hand``),
    followed to the id HEAD holds it under, and that commit; None when it did not, or HEAD lacks
    where it went: a link to the old id means that memory (``prune`` points it there)."""
    if (found := last_deletion(store, memory_id)) is None:
        return None
    new = moved_by_hand(store, f"{found}^", "HEAD", {memory_id}).get(memory_id)
    return (new, found) if new is not None else None


def _ids(store: GitStore, guess: Guess) -> tuple[str | None, str | None]:
    return id_of_path(guess.old[len(store.prefix):]), id_of_path(guess.new[len(store.prefix):])


def _pairs(out: bytes, exact: bool = False) -> list[tuple[list[str], tuple[str, str]]]:
    """The pairs of git's ``--raw -z`` output that are no exact move (``exact``: those too): their
    two blobs and paths."""
    fields = iter(out.decode("utf-8", "surrogateescape").split("\0"))
    pairs = []
    # Each pair: ":MODE MODE OLD-BLOB NEW-BLOB R<score>", the old path, the new path (a log may
    # part its commits by an empty field).
    for meta in fields:
        if meta.startswith(":"):
            old, new = next(fields, ""), next(fields, "")
            if exact or not meta.endswith(" R100"):
                pairs.append((meta.split()[2:4], (old, new)))
    return pairs


def _guesses(store: GitStore, pairs: list[tuple[list[str], tuple[str, str]]]) -> list[Guess]:
    """``pairs`` as guesses, the memory pairs' files read (all in one go)."""
    folder = store.repo_path(f"{MEMORIES_DIR}/")
    ids = {path: memory_id for _blobs, paths in pairs for path in paths
           if path.startswith(folder) and (memory_id := id_of_path(path[len(store.prefix):])) is not None}
    memory = [all(path in ids for path in paths) for _blobs, paths in pairs]
    read = store.objects.read_many("blob", [oid for (blobs, _paths), is_memory in zip(pairs, memory, strict=True)
                                            if is_memory for oid in blobs])
    # Two times, both read: a forget and a new save. One time (or a file that does not read): a move.
    made = [{_made(read[oid], ids[path]) for oid, path in zip(blobs, paths, strict=True)} if is_memory else set()
            for (blobs, paths), is_memory in zip(pairs, memory, strict=True)]
    return [Guess(*paths, len(times) == 2 and None not in times) for (_blobs, paths), times in zip(pairs, made, strict=True)]


def _made(blob: bytes, memory_id: str) -> str | None:
    """The ``created_at`` of a memory file's bytes; None when it does not read."""
    try:
        return loads(blob.decode("utf-8", "surrogateescape"), memory_id).created_at
    except MemoryFileError:
        return None
