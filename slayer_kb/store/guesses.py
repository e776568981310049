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

from dataclasses import dataclass

from ..core.errors import MemoryFileError
from ..core.locate import MEMORIES_DIR, id_of_path
from ..core.memory import loads
from .repo import GitStore


@dataclass(frozen=True)
class Guess:
    """A pair git's rename guess made that is no exact move: repository paths of the file deleted
    and the one added; ``saved``: both are memories with different ``created_at``, a forget and a
    new save (a memory that does not read is taken for a move, as git takes it)."""

    old: str
    new: str
    saved: bool


def guessed_moves(store: GitStore, base: str, tip: str) -> list[Guess]:
    """The pairs git's rename guess makes of ``base..tip``, as a merge or rebase of ``tip`` does
    (the whole repository), but exact moves: one ``git diff``, and the memory pairs' files read."""
    out = store.git("diff", "-M", "-z", "--raw", "--no-abbrev", "--diff-filter=R", base, tip).stdout
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    # Each pair: ":MODE MODE OLD-BLOB NEW-BLOB R<score>", the old path, the new path.
    pairs = [(meta.split()[2:4], (old, new)) for meta, old, new in zip(fields[0::3], fields[1::3], fields[2::3],
                                                                        strict=False) if not meta.endswith(" R100")]
    folder = store.repo_path(f"{MEMORIES_DIR}/")
    ids = {path: memory_id for _blobs, paths in pairs for path in paths
           if path.startswith(folder) and (memory_id := id_of_path(path[len(store.prefix):])) is not None}
    memories = [(blobs, paths) for blobs, paths in pairs if all(path in ids for path in paths)]
    read = store.objects.read_many("blob", [oid for blobs, _paths in memories for oid in blobs])
    made = {paths: {_made(read[oid], ids[path]) for oid, path in zip(blobs, paths, strict=True)}
            for blobs, paths in memories}
    # Two times, both read: a forget and a new save. One time (or a file that does not read): a move.
    return [Guess(*paths, len(made.get(paths, ())) == 2 and None not in made[paths]) for _blobs, paths in pairs]


def rename_detection(store: GitStore, base: str, tips: tuple[str, str]) -> list[str]:
    """The options ``git merge`` and ``git rebase`` of ``tips`` (parted at ``base``) take for git's
    rename detection: exact moves alone (``-X find-renames=100%``) when every pair git's guess makes
    on either side is a forget and a new save (``Guess.saved``), so that both new memories are kept
    and an edit of the forgotten one stops as the forget against an edit it is; else none, git's
    guess on as it is (it follows a real move into the edited file). Not ``no-renames``: git's
    default strategy (ort) ignores it."""
    guesses = [guess for tip in tips for guess in guessed_moves(store, base, tip)] if base else []
    return ["-X", "find-renames=100%"] if guesses and all(guess.saved for guess in guesses) else []


def _made(blob: bytes, memory_id: str) -> str | None:
    """The ``created_at`` of a memory file's bytes; None when it does not read."""
    try:
        return loads(blob.decode("utf-8", "surrogateescape"), memory_id).created_at
    except MemoryFileError:
        return None
