"""The moves ``rename`` (and a ``renumber --onto`` commit) record: the commit ends with a
``Renamed: OLD -> NEW`` trailer per move, which ``sync``, ``merge`` and ``rebase`` (links the
other side added to OLD follow the move), ``validate --against`` and ``review`` (such a link named
as a rename), ``restore OLD`` and ``show OLD`` (pointed at NEW), and ``show NEW --rev`` and
``restore NEW --rev`` (the file OLD was) read; and every command given OLD (``get``, ``update``,
``forget``, ``edit``, ``timeline``, their MCP tools: ``renamed_away``) says where it went.

A trailer, not git's rename detection: git takes a memory forgotten and a similar one saved in
one range of commits for a move, which would send a link to a forgotten memory to an unrelated
one. A trailer counts only when its commit did delete ``memories/OLD.yaml`` and add
``memories/NEW.yaml``, so a message typed by hand, or one whose ids a renumbering changed, moves
nothing."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from ..core.errors import MemoryFileError
from ..core.locate import MEMORIES_DIR, id_of_path, memory_path
from ..core.memory import loads
from .gitenv import LITERAL_PATHS
from .repo import GitStore
from .revisions import restored_after

_KEY = "Renamed: "
_TRAILER = re.compile(rf"^{_KEY}(\S+) -> (\S+)$", re.MULTILINE)


def trailer(old: str, new: str) -> str:
    """The line a rename commit's message ends with."""
    return f"{_KEY}{old} -> {new}"


def renamed_in(store: GitStore, commit: str) -> dict[str, str]:
    """{old id: new id} that ``commit`` records and made (see the module doc): its message and the
    memory files it added and deleted from one ``git diff-tree`` (which prints nothing, not even the
    message, for a commit that wrote no memory: no rename, then)."""
    out = store.git("diff-tree", "-r", "-z", "--no-renames", "--name-status", "--root", "--format=%B", commit,
                    "--", store.repo_path(f"{MEMORIES_DIR}/")).stdout.decode("utf-8", "surrogateescape")
    message, _, made = out.partition("\0")
    return _made_pairs(store, message, made.lstrip("\n"))


def last_deletion(store: GitStore, memory_id: str) -> str | None:
    """The last commit that deleted the memory's file (a forget, or a rename moving it), if any."""
    return next(iter(deletions(store, memory_id, 1)), None)


def deletions(store: GitStore, memory_id: str, count: int = 2) -> list[str]:
    """The last ``count`` commits that deleted the memory's file, newest first (two: what
    ``renamed_away`` reads, whether an earlier deletion came before a rename)."""
    return [] if store.head() is None else store.git(
        "log", f"-{count}", "--format=%H", "--diff-filter=D", "HEAD", "--", store.repo_path(memory_path(memory_id)),
        env=LITERAL_PATHS).stdout.decode().split()


def ever_renamed(store: GitStore, memory_id: str) -> bool:
    """Whether a commit of HEAD's history records a rename of ``memory_id`` (its trailer, which
    ``renamed_away`` then checks): commit messages alone, no tree read (a new id's ``last_deletion``
    walks every commit's tree, 0.3 s of CPU at 3,000 commits; this, a few ms)."""
    return store.head() is not None and bool(store.git(
        "log", "-1", "--format=%H", "--fixed-strings", f"--grep={_KEY}{memory_id} -> ", "HEAD", "--").stdout.strip())


def renamed_ids(store: GitStore, since: str | None = None) -> set[str]:
    """Every old id a commit of HEAD's history (not ``since``'s, when given) records a rename of
    (unchecked, as ``ever_renamed``): one ``git log`` for many ids (an import's)."""
    if store.head() is None:
        return set()
    out = store.git("log", "--format=%B", "--basic-regexp", f"--grep=^{_KEY}", "HEAD", *([f"^{since}"] if since else []), "--").stdout
    return {old for old, _new in _TRAILER.findall(out.decode("utf-8", "replace"))}


def renamed_on_each(store: GitStore, base: str, heads: Collection[str], paths: Collection[str]) -> bool:
    """Whether each of ``heads`` (full commit ids) has, since ``base``, a commit that changed one of
    ``paths`` (repository-relative memory files) and records a rename (its trailer, unchecked, as
    ``ever_renamed``): one ``git log`` for all of them."""
    out = store.git("log", "--source", "--format=%S", "--basic-regexp", f"--grep=^{_KEY}", *heads, f"^{base}", "--",
                    *paths, env=LITERAL_PATHS).stdout.decode().split()
    return set(heads) <= set(out)


@dataclass(frozen=True)
class Away:
    """Where an id a commit renamed went: each move in order (the new id, its commit), and the
    commit that then deleted the last id's file without moving it (a forget for good), if one did;
    ``before``: when the first rename moved a memory given the id after the one first given it was
    forgotten (``forget kb.y``, ``rename kb.x kb.y``, ``rename kb.y kb.z``) or renamed away, the
    commit that forgot or renamed the memory the id held before: a link made before, and an agent
    told the id, meant that one, not where the renames went (``link_target``,
    ``Context.renamed_to``)."""

    moves: tuple[tuple[str, str], ...]
    forgotten: str | None
    before: str | None


def renamed_away(store: GitStore, memory_id: str, deleting: str | None = None, last_two: list[str] | None = None) -> Away | None:
    """Where ``memory_id`` went when the commit that last deleted its file (``deleting``, found
    when not given; ``last_two``, the last two ``deletions`` when read already) renamed it, followed
    move by move (1 -> kb.b, then kb.b -> kb.c: kb.c) to the id it has at HEAD or the commit that
    forgot it (and no ``restore --rev`` brought it back); None when that commit did not rename it.
    Each step is the next deletion of the file the last one gave (``next_deletion``): a later rename
    of an id it passed through, given to another memory since (a forget and a save, ``--reuse-id``),
    moves that other memory, not this one. Whether the first rename moved the memory first given
    the id (``Away.before``) costs a ``git log`` only where the file was deleted before it."""
    found = [deleting] if deleting else last_two if last_two is not None else deletions(store, memory_id)
    if not found or (first := renamed_in(store, found[0]).get(memory_id)) is None:
        return None
    # Found here with no earlier deletion of the file: the id held one memory until the rename.
    before = _forgot_before(store, memory_id, found[0]) if deleting or len(found) > 1 else None
    deleting = found[0]
    moves, at, since = [(first, deleting)], first, deleting
    while at != memory_id and len(moves) <= 100:  # a chain back to the start, or absurdly long: stop
        step = next_deletion(store, at, since)
        if step is None:
            break
        if step.renamed_to is None:  # forgotten, unless 'restore --rev' brought it back there since
            if (back := restored_after(store, at, step.commit)) is None:
                return Away(tuple(moves), step.commit, before)
            since = back
            continue
        at, since = step.renamed_to, step.commit
        moves.append((at, step.commit))
    return Away(tuple(moves), None, before)


def link_target(store: GitStore, memory_id: str) -> tuple[str, str] | None:
    """Where a link to ``memory_id`` goes that no merge's sides tell of (``prune``, ``validate``
    in a KB with no sync to run): the id the memory has now and the commit that first renamed it
    (``renamed_away``), when HEAD holds that id's file and the rename moved the memory first given
    ``memory_id`` (no ``Away.before``). A rename of a memory given the id after the first was forgotten
    (``forget kb.y``, ``rename kb.x kb.y``, ``rename kb.y kb.z``) moved another memory: a link made
    before meant the forgotten one. A merge commit that deleted the new id's file is no deletion
    ``renamed_away`` sees: HEAD's tree is asked."""
    away = renamed_away(store, memory_id)
    if away is None or away.forgotten or away.before or (head := store.head()) is None:
        return None
    new, commit = away.moves[-1][0], away.moves[0][1]
    path = store.repo_path(memory_path(new))
    return None if store.objects.blobs_at(store.objects.tree_of(head), [path])[path] is None else (new, commit)


def _forgot_before(store: GitStore, memory_id: str, commit: str) -> str | None:
    """``Away.before`` of the rename ``commit`` of ``memory_id`` (``_held_since``)."""
    if _held_since(store, "", commit, memory_id):
        return None
    path = store.repo_path(memory_path(memory_id))
    events = _events(store, "", store.objects.parents(commit)[0], path).get(path, [])
    return next(c for status, c, _s in reversed(events) if status == "D")


@dataclass(frozen=True)
class Deletion:
    """A commit that deleted a memory's file: a rename to ``renamed_to``, or a forget (None)."""

    commit: str
    renamed_to: str | None


def next_deletion(store: GitStore, memory_id: str, since: str, head: str = "HEAD") -> Deletion | None:
    """The first commit of ``since..head`` that deleted ``memory_id``'s file (``since``: the commit
    that gave the memory that id), and whether it renamed it; None when none did (``head`` holds
    it). This is where a chain of renames goes on, or ends: a chain whose end was later forgotten
    is over, whatever a later memory given the id again (a save, ``--reuse-id``) does with it."""
    first = first_deletion(store, memory_id, since, head)
    return None if first is None else Deletion(first, renamed_in(store, first).get(memory_id))


def first_deletion(store: GitStore, memory_id: str, since: str, head: str) -> str | None:
    """The commit of ``next_deletion`` alone, for a caller that asks only whether the chain goes
    on (no ``diff-tree`` of it): only a commit that descends from ``since`` (a rename's): a
    deletion of the id on another line of history (the other side renamed or forgot the memory it
    held there, a merge since joining both) is of that memory, not of the one ``since`` gave the id."""
    out = store.git("log", "--reverse", "--format=%H", "--diff-filter=D", "--ancestry-path", f"{since}..{head}", "--",
                    store.repo_path(memory_path(memory_id)), env=LITERAL_PATHS).stdout.decode().split()
    return out[0] if out else None


@dataclass(frozen=True)
class Renamed:
    """The ids among some asked of that commits renamed: {old: new} by whether the new id still
    has its file (``live``: a link to the old id follows the move) or not (``gone``: renamed,
    then forgotten, or the rename undone by a conflict resolved by hand: a link to either id is
    a link to a forgotten memory)."""

    live: dict[str, str]
    gone: dict[str, str]


def renamed_since(store: GitStore, base: str, head: str, olds: Collection[str], also: str = "") -> Renamed:
    """``Renamed`` of the ids among ``olds`` that ``base..head`` renamed (and ``base..also``: a
    branch as it was before a rebase replayed it), and of every id those renames gave that
    ``head`` lacks, each followed to the id it has at ``head``. One memory renamed on two sides,
    each to its own id (a merge of both, or a rebase whose conflict's steps dropped this branch's
    rename), ends where ``head`` holds its file: a link to the old id, or to the id the dropped
    rename gave, follows the kept rename."""
    # ``head``'s last: of two ids both held (a merge resolved by keeping both files), its own.
    made = _of_memories(store, (_moves(store, base, also) if also else []) + _moves(store, base, head))
    if not made:
        return Renamed({}, {})
    # Each chain's ids: the rename that gave it (two memories renamed onto one id, each on its own
    # line of history, are two chains through it: a later rename of it continues its own line's).
    gave = {(root, new): commit for commit, _old, new, root in made}
    first: dict[str, str] = {}  # every id the renames gave: the id it had at ``base``
    # Every id at ``base`` a rename moved: the ids its chains end at, last last. An id a chain
    # passed through is no end: held at ``head``, it is another memory that reused the id.
    ends: dict[str, list[str]] = {}
    given: list[str] = []
    for _commit, old, new, root in made:
        first[new] = root
        chain = ends.setdefault(root, [])
        if old in chain:
            chain.remove(old)
        chain.append(new)
        given.append(new)
    given = list(dict.fromkeys(given))
    out = store.git("ls-tree", "-z", "--name-only", head, "--", *(store.repo_path(memory_path(i)) for i in given),
                    env=LITERAL_PATHS).stdout
    there = {path[len(store.prefix):] for path in out.decode("utf-8", "surrogateescape").split("\0") if path}
    held = {i for i in given if memory_path(i) in there}
    live: dict[str, str] = {}
    gone: dict[str, str] = {}
    # An id among ``olds`` is an id at ``base``, its own chain's root, even where a later rename
    # gave it to another memory (``--reuse-id``); an id only the renames gave goes back to its root.
    # (An id among ``olds`` that the renames also gave, and moved on again, is read as the id at
    # ``base`` alone: a link to it meant that memory.)
    roots = [*((i, i) for i in olds if i in ends), *((i, first[i]) for i in given if i not in held and i not in olds)]
    for i, root in roots:
        kept = [new for new in dict.fromkeys(ends[root]) if new in held and new != i]
        # A chain whose end was forgotten since is over: a memory saved at that id later is another.
        if kept and first_deletion(store, kept[-1], gave[root, kept[-1]], head) is not None:
            gone[i] = kept[-1]
        elif kept:
            live[i] = kept[-1]
        elif i in ends and ends[i][-1] != i:  # renamed, then forgotten (or its rename undone by hand)
            gone[i] = ends[i][-1]
    return Renamed(live, gone)


class TipRenames:
    """``renames_between`` of ``base`` and each tip asked of it, read of git once a tip, when first
    asked: sync's choice of a replay and its naming of the files merged ask of the same tips."""

    def __init__(self, store: GitStore, base: str) -> None:
        self.store, self.base = store, base
        self._read: dict[str, dict[str, str]] = {}

    def __call__(self, tip: str) -> dict[str, str]:
        if tip not in self._read:
            self._read[tip] = renames_between(self.store, self.base, tip)
        return self._read[tip]


def rename_meets(store: GitStore, base: str, tips: tuple[str, str], renames: TipRenames) -> bool:
    """Whether a memory one of ``tips`` renamed since ``base`` (``renames`` of ``base``) had its
    old file changed (edited, forgotten, renamed) by the other: sync's replay, which takes a
    deleted file for a forget, leaves those to git's rebase, which follows a moved file. A rename
    the other side did not touch replays as it is, and the replay's other rules (a forget undone
    by a later upsert) stay."""
    for tip, other in (tips, tips[::-1]):
        if (olds := renames(tip)) and store.git("diff", "--name-only", "--no-renames", base, other, "--",
                                                *(store.repo_path(memory_path(old)) for old in olds),
                                                env=LITERAL_PATHS).stdout.strip():
            return True
    return False


def merged_where(store: GitStore, parted: str, tips: tuple[str, str], both: list[str],
                 renames: TipRenames) -> list[str]:
    """Of ``both`` (the KB paths both ``tips`` wrote since ``parted``), those a merge of the two
    joined both sides' changes of, named where the result holds them: a memory one side renamed
    (its trailer; ``renames`` of ``parted``, as ``rename_meets`` read them) and left as it was is
    only moved, no change to join; one it renamed and changed is named by its new file. A side's
    renames are read only where its tip lacks such a file."""
    objects = store.objects
    memories = {path: memory_id for path in both if (memory_id := id_of_path(path)) is not None}
    if not memories:
        return both
    named = {path: path for path in both}
    forgotten = set(memories)  # absent at both tips and not moved: both forgot it, no change to join
    for tip in tips:
        at_tip = objects.blobs_at(objects.tree_of(tip), [store.repo_path(path) for path in memories])
        absent = [path for path in memories if at_tip[store.repo_path(path)] is None]
        forgotten &= set(absent)
        renamed = renames(tip) if absent else {}
        moved = {path: memory_path(renamed[memories[path]]) for path in absent if memories[path] in renamed}
        if not moved:
            continue
        was = objects.blobs_at(objects.tree_of(parted), [store.repo_path(path) for path in moved])
        now = objects.blobs_at(objects.tree_of(tip), [store.repo_path(new) for new in moved.values()])
        for path, new in moved.items():
            changed = now[store.repo_path(new)] != was[store.repo_path(path)]
            named[path] = new if changed and named[path] else ""
    return list(dict.fromkeys(new for path, new in named.items() if new and (new != path or path not in forgotten)))


@dataclass(frozen=True)
class Crossing:
    """A memory ``forgot`` (a tip) forgot while ``other`` (the other tip) renamed it from
    ``memory_id`` to ``new``, or only edited it (``new`` None), and ``forgot`` then gave
    ``memory_id`` to another memory: renamed ``given_by`` to it (None: saved one there). git sees
    that side edit the file the other moved, and puts the other memory under ``new``; or sees two
    edits of one file, and merges the other's edit into the other memory. ``soft``: that edit was
    a ``forget --soft``: both sides forgot the memory, and the one given the id simply stays."""

    forgot: str
    other: str
    memory_id: str
    new: str | None
    given_by: str | None
    soft: bool = False


def crossings(store: GitStore, base: str, tips: tuple[str, str]) -> list[Crossing]:
    """Each ``Crossing`` of ``tips`` since ``base``: a memory file at ``base`` that one tip holds
    changed and the other lacks, which that one gave again (``_given_again``) and the other
    renamed, the rename's end still held there; or one both tips hold changed, each its own way,
    which one gave again and the other never deleted. The trees read in this process; one ``git
    log`` a tip for the files deleted and added since (``_events``), asked only where one side
    changed a memory and the other deleted or changed it; renames read only past a forget."""
    objects, folder = store.objects, store.repo_path(MEMORIES_DIR)
    trees = [objects.tree_of(commit) for commit in (base, *tips)]
    names = [set(objects.names_in(tree, folder)) for tree in trees]
    events: dict[str, dict[str, list[tuple[str, str, str]]]] = {}

    def of(tip: str, memory_id: str) -> list[tuple[str, str, str]]:
        if tip not in events:
            events[tip] = _events(store, base, tip)
        return events[tip].get(store.repo_path(memory_path(memory_id)), [])

    def changed(held: set[bytes], *sides: int) -> list[tuple[str, list[str | None]]]:
        """The memories among ``held`` (names in ``folder``) each of ``sides`` (indexes of ``trees``)
        holds changed, each its own way: each id, and its blobs at ``base`` and ``sides``."""
        paths = [f"{folder}/{name.decode('utf-8', 'surrogateescape')}" for name in held]
        blobs = [objects.blobs_at(trees[n], paths) for n in (0, *sides)]
        return [(i, versions) for path in paths if len(set(versions := [b[path] for b in blobs])) == len(blobs)
                and (i := id_of_path(path[len(store.prefix):]))]

    found = []
    for (forgot, kept), (other, lost) in ((tips[0], 1), (tips[1], 2)), ((tips[1], 2), (tips[0], 1)):
        forgotten = [i for i, blobs in changed((names[0] & names[kept]) - names[lost], kept)
                     if _given_again(store, i, of(forgot, i), blobs)]
        moved = renames_between(store, base, other) if forgotten else {}
        targets = [store.repo_path(memory_path(moved[i])) for i in forgotten if i in moved]
        ends = objects.blobs_at(trees[lost], targets)
        # A memory of the forgetting side's own at the rename's end: git's merge stops on the two
        # files there (both created it), with the steps to keep both; held as a crossing, it was lost.
        taken = objects.blobs_at(trees[kept], targets)
        gave = chains(store, base, forgot)[0] if ends else {}
        found += [Crossing(forgot, other, i, moved[i], gave.get(i)) for i in forgotten
                  if i in moved and ends[path := store.repo_path(memory_path(moved[i]))] is not None and taken[path] is None]
    for i, (was, *now) in changed(names[0] & names[1] & names[2], 1, 2):
        for n in (0, 1):
            if (not any(status == "D" for status, _c, _s in of(tips[1 - n], i))
                    and _given_again(store, i, of(tips[n], i), [was, now[n]])):
                found.append(Crossing(tips[n], tips[1 - n], i, None, chains(store, base, tips[n])[0].get(i),
                                      _soft_forgot(store, i, was, now[1 - n])))
    return found


def given_and_moved_on(store: GitStore, base: str, tips: tuple[str, str]) -> dict[str, tuple[str, bool]]:
    """The ids at ``base`` that a tip forgot (its first deletion of the file since, no rename),
    then put back and moved on or forgot again (``forget kb.y``, ``rename kb.x kb.y``, ``rename
    kb.y kb.z``), and whose file the other tip changed (edited, renamed, forgotten), each with
    that tip and whether what it first put back (where git's replay stops again) was another
    memory (a ``save --id`` or a ``rename`` onto the id: ``_given_again``) rather than the one
    forgotten, brought back (``restore``). No ``Crossing``, the id being left at that tip, but
    git's rebase replays the forget, and once that stop's steps kept the other side's memory at
    the id, stops again on what was put back; a merge of the tips sees the memory forgotten, and
    the other moved. The trees read in this process; one ``git log`` a tip (``_events``) where it
    lacks a memory the other changed."""
    objects, folder = store.objects, store.repo_path(MEMORIES_DIR)
    trees = [objects.tree_of(commit) for commit in (base, *tips)]
    names = [set(objects.names_in(tree, folder)) for tree in trees]
    found: dict[str, tuple[str, bool]] = {}
    for n, tip in enumerate(tips):
        paths = [f"{folder}/{name.decode('utf-8', 'surrogateescape')}" for name in names[0] - names[n + 1]]
        was, there = objects.blobs_at(trees[0], paths), objects.blobs_at(trees[2 - n], paths)
        changed = [path for path in paths if there[path] != was[path]]
        events = _events(store, base, tip) if changed else {}
        for path in changed:
            seen = events.get(path, [])
            gone = next((k for k, (status, _c, _s) in enumerate(seen) if status == "D"), None)
            memory_id = id_of_path(path[len(store.prefix):])
            if gone is None or memory_id is None or memory_id in found:
                continue
            back = next((k for k in range(gone, len(seen)) if seen[k][0] == "A"), None)
            # The forget's own commit read last (a git process), where a put-back makes it matter.
            if back is not None and memory_id not in renamed_in(store, seen[gone][1]):
                put = objects.blobs_at(objects.tree_of(seen[back][1]), [path])[path]
                found[memory_id] = (tip, _given_again(store, memory_id, seen[:back + 1], [was[path], put]))
    return found


def brought_back(store: GitStore, base: str, tip: str, other: str) -> list[str]:
    """The memories at ``base`` that ``tip`` forgot since (its file's first deletion, no rename)
    and holds again (``restore``, ``git revert`` of the forget, a checkout of an older version),
    whose file ``other`` changed (edited, or renamed: ``renames_between``): git's rebase of ``tip``
    onto ``other`` replays the forget onto that change and stops on a forget against an edit or a
    rename (whose steps then keep the memory at both ids), where a merge of the two joins the
    change into the memory brought back, or moves it. One ``git log`` (``_events``), and one more
    where ``other`` lacks such a file."""
    deleted = {path: commit for path, events in _events(store, base, tip).items()
               if (commit := next((c for status, c, _s in events if status == "D"), None))}
    objects = store.objects
    was, here, there = (objects.blobs_at(objects.tree_of(commit), deleted) for commit in (base, tip, other))
    moved = renames_between(store, base, other) if None in there.values() else {}
    return [memory_id for path, commit in deleted.items()
            if (memory_id := id_of_path(path[len(store.prefix):])) is not None
            and None not in (was[path], here[path]) and memory_id not in renamed_in(store, commit)
            and (memory_id in moved if there[path] is None else there[path] != was[path])]


def _events(store: GitStore, base: str, tip: str, path: str = "") -> dict[str, list[tuple[str, str, str]]]:
    """{memory file (repository-relative): each deletion and addition of it ``base..tip`` (no
    ``base``: ``tip``'s whole history) made, oldest first: its status (D, A), commit and subject},
    from one ``git log``; of ``path`` alone when given."""
    out = store.git("log", "--reverse", "--no-renames", "--diff-filter=AD", "--name-status", "-z",
                    "--format=%x01%H%x00%s", f"{base}..{tip}" if base else tip, "--",
                    path or store.repo_path(f"{MEMORIES_DIR}/"), env=LITERAL_PATHS).stdout.decode("utf-8", "surrogateescape")
    events: dict[str, list[tuple[str, str, str]]] = {}
    for entry in out.split("\x01")[1:]:
        commit, subject, *changes = entry.split("\0")
        for status, path in zip(changes[::2], changes[1::2], strict=False):
            events.setdefault(path, []).append((status.strip(), commit, subject))
    return events


def _given_again(store: GitStore, memory_id: str, events: list[tuple[str, str, str]], blobs: list[str | None]) -> bool:
    """Whether a tip forgot ``memory_id`` (its first deletion since they parted, not by a rename,
    among ``events``, its file's ``_events``) and holds another memory at the id now: what put the
    file back last is a ``save`` of the id or a ``rename`` onto it, or ``blobs`` (its file where
    they parted and at that tip) hold two ``created_at``. A memory brought back (``restore``, ``git
    revert`` of the forget, a checkout of an older version, a merge that kept it) keeps its
    ``created_at``, whatever was edited since: the same memory. ``created_at`` is kept to the
    second, so the commit is asked first: two memories saved in one second hold the same."""
    gone = next((commit for status, commit, _subject in events if status == "D"), None)
    if gone is None or memory_id in renamed_in(store, gone):
        return False
    status, commit, subject = events[-1]
    if status == "A" and (subject.startswith(f"memory: save {memory_id} (")
                          or subject == f"memory: save {memory_id}" or memory_id in renamed_in(store, commit).values()):
        return True
    texts = store.objects.read_many("blob", [blob for blob in blobs if blob])
    try:
        return len({loads(text.decode("utf-8", "surrogateescape"), memory_id).created_at for text in texts.values()}) > 1
    except MemoryFileError:  # a version that does not parse is no memory to call the same
        return True


def _soft_forgot(store: GitStore, memory_id: str, was: str | None, now: str | None) -> bool:
    """Whether the memory's file went from ``was`` (a blob) to ``now`` by a ``forget --soft``."""
    texts = store.objects.read_many("blob", [blob for blob in (was, now) if blob])
    try:
        memories = [loads(texts[blob].decode("utf-8", "surrogateescape"), memory_id) for blob in (was, now) if blob]
    except MemoryFileError:  # not a memory: no forget to tell
        return False
    return len(memories) == 2 and not memories[0].is_deleted and memories[1].is_deleted


def renames_between(store: GitStore, base: str, head: str = "HEAD") -> dict[str, str]:
    """{old id: the id it has at the end} for the renames the commits ``base..head`` made, in
    the order they were made (1 -> kb.a, then kb.a -> kb.b: 1 -> kb.b)."""
    return chains(store, base, head)[1]


def forgotten_ends(store: GitStore, base: str, head: str, olds: Collection[str]) -> set[str]:
    """Of ``olds``, the ids ``base..head`` renamed whose chain a later commit of that range ended by
    deleting the file of the id it had come to (a forget, ``next_deletion``): the memory is gone,
    and one saved at that id since is another memory, not where the rename went. ``_moves``' one
    ``git log``, and one for each chain asked of."""
    ends: dict[str, tuple[str, str]] = {}  # each old id: the id its chain came to, the commit that gave it
    for commit, old, new, root in _of_memories(store, _moves(store, base, head)):
        ends = {was: ((new, commit) if now == old else (now, at)) for was, (now, at) in ends.items()}
        if root == old:  # else a chain through ``old`` goes on: the memory ``old`` held there is not this one
            ends[old] = (new, commit)
    return {old for old, (new, commit) in ends.items()
            if old in olds and new != old and first_deletion(store, new, commit, head) is not None}


def chains(store: GitStore, base: str, head: str = "HEAD") -> tuple[dict[str, str], dict[str, str]]:
    """{every id the renames of ``base..head`` gave: the id it had at ``base``} (1 -> kb.b, then kb.b
    -> kb.c: kb.b and kb.c were 1), and ``renames_between`` of the same, from one ``git log``."""
    first: dict[str, str] = {}
    final: dict[str, str] = {}
    for _commit, old, new, root in _of_memories(store, _moves(store, base, head)):
        first[new] = first.get(old, old)
        final = {was: (new if now == old else now) for was, now in final.items()}
        # A rename of an id an earlier rename gave (kb.x -> kb.y -> kb.z) moves that chain's memory
        # on: whatever ``old`` held where the walk starts (forgotten, or moved away) did not go there.
        if root == old:
            final[old] = new
    return ({new: old for new, old in first.items() if old != new},
            {old: new for old, new in final.items() if old != new})


def _moves(store: GitStore, base: str, head: str) -> list[tuple[str, str, str]]:
    """The (commit, old id, new id) of each rename ``base..head`` made, oldest first. Not one of an
    id ``base`` holds whose file an earlier commit of the line deleted (``forget kb.y``, ``save --id
    kb.y``, ``rename kb.y kb.z``): that moves a memory saved since, and the one ``base`` held there
    went nowhere. (An id an earlier rename gave is ``_of_memories``' to tell.)"""
    # Basic regex whatever grep.patternType says (fixed strings would match no "^").
    out = store.git("log", "--reverse", "-z", "--format=%H%n%B", "--basic-regexp", f"--grep=^{_KEY}", head,
                    f"^{base}", "--").stdout
    moves: list[tuple[str, str, str]] = []
    for entry in filter(None, out.decode("utf-8", "replace").split("\0")):
        commit, _, message = entry.strip("\n").partition("\n")
        moves += ((commit, old, new) for old, new in _checked(store, commit, message).items())
    gave: set[str] = set()
    kept = []
    for commit, old, new in moves:
        if old in gave or _held_since(store, base, commit, old):
            kept.append((commit, old, new))
        gave.add(new)
    return kept


def _held_since(store: GitStore, base: str, commit: str, memory_id: str) -> bool:
    """Whether the memory file ``commit`` (a rename) moved away holds the memory the id held at
    ``base`` (no ``base``: the one first given the id), or the id held none then: the same memory
    unless a commit on the rename's line since deleted the file (no rename) and then gave the id to
    another (``_given_again``). One brought back (``restore``) and edited since is the same memory.
    ``base..`` the rename's parent, so a ``base`` that is no ancestor of it (the other side of a
    merge) counts only the rename's own line. Read in this process; one ``git log`` (of the file)
    only for a version that changed."""
    objects, path = store.objects, store.repo_path(memory_path(memory_id))
    parent = objects.parents(commit)[0]  # a rename deleted a file: never a root commit
    now = objects.blobs_at(objects.tree_of(parent), [path])[path]
    was = objects.blobs_at(objects.tree_of(base), [path])[path] if base else None
    if base and (was is None or was == now):
        return True
    events = _events(store, base, parent, path).get(path, [])
    if not base:
        first = next((c for status, c, _s in events if status == "A"), None)
        was = objects.blobs_at(objects.tree_of(first), [path])[path] if first else None
        if was is None or was == now:
            return True
    return not _given_again(store, memory_id, events, [was, now])


def _of_memories(store: GitStore, moves: list[tuple[str, str, str]]) -> list[tuple[str, str, str, str]]:
    """Of ``moves`` (``_moves``'), those of the memories the ids named where the walk starts (and
    of the ids those took), each with the id its memory had there (its chain's root): a rename of an id an earlier rename moved away, in a commit that one
    is an ancestor of, moves another memory given the id since (``--reuse-id``), not the one a link
    made before meant. Two renames of one id on two lines of history (each side renamed the
    memory) both stay. Dropped too: a rename of an id a rename gave, once that id was forgotten
    in between (and saved again for another memory): a chain whose end was forgotten is over
    (``next_deletion``). A rename of an id that only another line of history's renames gave (one
    side forgot kb.y and renamed kb.x to it, the other renamed kb.y to kb.m) moves the memory its
    own line held there: it goes before those, so no chain runs on through it whatever the commit
    dates. Two memories renamed onto one id, each on its own line, and one renamed on again: the
    chain it goes on is that of the rename on its line (an ancestor of it), whatever the dates.
    A ``git merge-base`` only where one id was renamed twice or given and renamed again, a
    ``git log`` only where a chain goes on from an id a rename gave."""
    left: dict[str, list[str]] = {}  # {id: the commits that moved a memory away from it}
    given: dict[str, list[tuple[str, str, str, str]]] = {}  # {id: the kept renames that gave it}
    kept: list[tuple[str, str, str, str]] = []
    for commit, old, new in moves:
        if any(_is_ancestor(store, earlier, commit) for earlier in left.get(old, ())):
            continue
        givers = given.get(old, [])
        on_line = [giver for giver in givers if _is_ancestor(store, giver[0], commit)]
        if givers and not on_line:
            move = (commit, old, new, old)
            kept.insert(min(kept.index(giver) for giver in givers), move)
        elif on_line and first_deletion(store, old, on_line[-1][0], commit) != commit:
            continue
        else:
            move = (commit, old, new, on_line[-1][3] if on_line else old)
            kept.append(move)
        left.setdefault(old, []).append(commit)
        left.pop(new, None)  # the memory back under an id it left: its next rename moves it again
        given.setdefault(new, []).append(move)
    return kept


def _is_ancestor(store: GitStore, ancestor: str, commit: str) -> bool:
    return store.git("merge-base", "--is-ancestor", ancestor, commit, check=False).returncode == 0


def _checked(store: GitStore, commit: str, message: str) -> dict[str, str]:
    if not _TRAILER.search(message):
        return {}
    out = store.git("diff-tree", "--no-commit-id", "-r", "-z", "--no-renames", "--name-status", "--root", commit,
                    "--", store.repo_path(f"{MEMORIES_DIR}/")).stdout.decode("utf-8", "surrogateescape")
    return _made_pairs(store, message, out)


def _made_pairs(store: GitStore, message: str, name_status: str) -> dict[str, str]:
    """The ``message``'s trailers whose moves the commit made: ``name_status`` (``-z``) deleted the
    old id's file and added the new one's."""
    if not (pairs := dict(_TRAILER.findall(message))):
        return {}
    out = name_status.split("\0")
    made = {(status, path[len(store.prefix):]) for status, path in zip(out[::2], out[1::2], strict=False)}
    return {old: new for old, new in pairs.items()
            if ("D", memory_path(old)) in made and ("A", memory_path(new)) in made}
