"""The steps of a stop on conflicting memory files, for ``rebase`` and ``merge`` alike: what each
side did to each file (edited, forgot, renamed, created) in words, and the git and slayer-kb
commands that keep one side, the other, or both."""

from __future__ import annotations

from collections.abc import Collection

from ..core.ids import fold_id, free_variant
from ..core.locate import MEMORIES_DIR, id_of_path, memory_path
from ..core.problems import command_in, words
from ..store.guesses import guessed_moves
from ..store.renames import Crossing, chains, forgotten_ends
from ..store.repo import GitStore
from .snapshot import files_at, memory_ids_at


def conflict_steps(store: GitStore, paths: list[str], held: dict[str, set[int]], other: str,
                   ours: str, checkout: tuple[str, str] = ("--ours", "--theirs"), *,
                   tips: tuple[str, ...], folded: Collection[str] = ()) -> tuple[str, list[str]]:
    """What conflicts on ``paths`` (repository-relative; ``held``: their stages as ``held_stages``
    gives them, 2 ``other``'s version, 3 ``ours``), and the steps that resolve each file;
    ``checkout``: git's ``checkout`` options that take ``other``'s and ``ours``'s version (a rebase's
    ``--ours`` is the upstream); ``tips``: commits whose trees hold both sides' files, where a
    memory both created is kept under a new id only if that id is free. Every path is shown from
    the KB's folder: slayer-kb runs there, which may be a folder of the repository (``repo/kb/``),
    and git there reads paths from that folder too (the repository's ``app.py``: ``../app.py``).
    ``folded``: the paths of memories kept that hold the edit of a memory folded into them
    (``carry.follow_folds``): two edits of that memory, never git's guess of a move into it."""

    def shown(path: str) -> str:
        return path[len(store.prefix):] if path.startswith(store.prefix) else "../" * store.prefix.count("/") + path

    def files(group: list[str]) -> str:
        return ", ".join(map(shown, group))

    def args(group: list[str]) -> str:
        return words(*map(shown, group))

    # A forget on one side and an edit on the other is no edit to merge: the steps say which
    # command keeps which side. A file with no base version was created on both sides (one
    # named id given to two memories): no edit either, and both may be kept.
    created = [p for p in paths if held.get(p) == {2, 3}]
    edited = [p for p in paths if {2, 3} <= held.get(p, {2, 3}) and p not in created]
    # A soft forget keeps the file: git holds two versions, but one side forgot, not edited.
    soft_here = [p for p in paths if {2, -3} <= held.get(p, set())]
    soft_there = [p for p in paths if {-2, 3} <= held.get(p, set())]
    sides = {p: {abs(n) for n in held.get(p, {2, 3})} & {2, 3} for p in paths}  # the versions git holds
    forgot_here = [p for p in paths if sides[p] == {2}]
    kept_at = _kept_as(store, edited + forgot_here)  # one read of the stages for both
    kept = {p: kept_at[p] for p in edited if p in kept_at}
    kept_forgotten = {p: kept_at[p] for p in forgot_here if p in kept_at}
    edited = [p for p in edited if p not in kept]
    forgot_here = [p for p in forgot_here if p not in kept_forgotten]
    forgot_there = [p for p in paths if sides[p] == {3}]
    # A memory one side renamed: git holds its new file on that side alone, as if forgotten on the other.
    was, by_tip, base = _renamed_from(store, forgot_here + forgot_there, tips)
    ends: dict[str, set[str]] = {}  # each old id: the ids the sides' renames give it at their tips
    for _gave, final in by_tip.values():
        for old, new in final.items():
            ends.setdefault(old, set()).add(new)
    # Both renamed one memory, to two ids: the other's id is kept (in a rebase, dropping this
    # branch's rename; in a merge, this branch's new file), and the links to this branch's id
    # follow it once the rebase goes on (or the merge is synced: ``renames.renamed_since``).
    both = [(here, there) for here in forgot_here for there in forgot_there if here in was and was[here] == was.get(there)]
    # Git missed one side's rename (its edit made the file too unlike the old one): that side's new
    # file merged as a plain add, so only the other's stops, read as a forget. The renames' ends
    # pair them, or the step that keeps the other's id would drop that file and its edits unseen
    # (in a merge), or keep both files, one memory twice (in a rebase).
    missed = _missed_renames(store, forgot_here, forgot_there, both, was, by_tip, base)
    both += missed
    paired = {p for pair in both for p in pair}
    renamed_there = [p for p in forgot_here if p in was and p not in paired]
    renamed_here = [p for p in forgot_there if p in was and p not in paired]
    forgot_here = [p for p in forgot_here if p not in was]
    forgot_there = [p for p in forgot_there if p not in was]
    rebasing = checkout == ("--ours", "--theirs")
    # A new memory git's rename guess paired with one its side forgot (saved later: no move).
    guessed = _guessed_moves(store, [p for p in forgot_here + forgot_there + edited if p not in folded], tips)
    edited, forgot_here, forgot_there = ([p for p in group if p not in guessed]
                                         for group in (edited, forgot_here, forgot_there))
    # Git holds only the base: both sides deleted the file (two renames of it, or a rename and a
    # forget). A rebase's reset step for two renames puts it back; else it is to be removed.
    olds = {was[here] for here, _there in both}  # in a merge, removed by the step that keeps one id
    gone = [p for p in paths if not sides[p] and p not in olds] if not (both and rebasing) else []
    what: list[str] = []
    steps: list[str] = []

    def subject() -> str:
        # A clause after the first goes on with the sentence: "...; this branch forgot ...".
        return ours if not what else ours[:1].lower() + ours[1:]

    take_other, take_ours = checkout
    if created:
        what.append(f"{subject()} and {other} both created {files(created)}")
        steps += [f"edit {files(created)} to keep what both sides meant{_keep_both(store, created, checkout, tips)}",
                  f"git add {args(created)}"]
    if edited:
        what.append(f"{subject()} and {other} both edited {files(edited)}")
        steps += [f"edit {files(edited)} to keep what both sides meant", f"git add {args(edited)}"]
    for path, moved in kept.items():
        what.append(f"{subject()} changed {files([path])} again after both sides created it, and an earlier commit's "
                    f"steps kept your version as {files([moved])}")
        steps.append(f"move this change there: git checkout {take_ours} {args([path])} && mv {args([path, moved])} && "
                     f"git checkout {take_other} {args([path])} && git add {args([path, moved])} (or edit "
                     f"{files([path])} to keep what both sides meant, then git add {args([path])})")
    for path, moved in kept_forgotten.items():
        what.append(f"{subject()} forgot {files([path])} after both sides created it, and an earlier commit's steps "
                    f"kept your version as {files([moved])}")
        steps.append(f"forget that one instead: git add {args([path])} && git rm -q {args([moved])} (or git rm "
                     f"{args([path])} to forget {other}'s)")
    for here, there in both:  # ``here``: the other's new file, ``there`` this branch's
        theirs, mine = (_id(store, p) for p in (here, there))
        # The id this branch's renames end at (a rebase stops at the first of 1 -> kb.b -> kb.c);
        # none but ``theirs`` when they come back to it (1 -> kb.b -> kb.a): no rename to give.
        last = next(iter(sorted(ends.get(_id(store, was[here]), {mine}) - {theirs})), None)
        yours = (f"once synced, {command_in(store.root)} rename {words(theirs, last)} gives the memory yours"
                 if last else f"your later rename ends at {theirs} too")
        what.append(f"{subject()} renamed {files([was[here]])} to {mine}, and {other} renamed it to {theirs}"
                    + (", each file holding its side's edits, which git did not merge" if (here, there) in missed
                       else ""))
        if (here, there) in missed:
            steps.append(f"edit {files([here])} to keep what both sides meant (your edits are in {files([there])})")
        if rebasing and (here, there) not in missed:
            steps.append(f"git reset -q --hard to keep {other}'s id {theirs} (it drops your rename; {yours})")
        else:  # a reset would drop the edit just made to the other's file
            # The old file, which both deleted (git holds its base alone), goes with this branch's new one.
            drop = [there, *([was[here]] if was[here] in paths else [])]
            links = (f"it drops your rename, and validate names the links to {mine} until rebase --continue points "
                     f"them at {theirs}" if rebasing else
                     f"validate names the links to {mine} until the sync, which points them at {theirs}")
            steps.append(f"git rm -q {args(drop)} && git add {args([here])} to keep {other}'s id {theirs} ({links}; "
                         f"{yours})")
    # A merge's links to the memory let go are stripped by the sync its steps end with.
    stripped = "as the rebase goes on" if rebasing else "by the sync (validate names them until then)"
    # Each side's own commit: in a rebase HEAD is the upstream's side, in a merge this branch's.
    revs = {True: "HEAD" if rebasing else "MERGE_HEAD", False: "REBASE_HEAD" if rebasing else "HEAD"}
    for path, (by_other, old) in guessed.items():
        saver, editor = (other, ours.lower()) if by_other else (ours.lower(), other)
        keep = f"git checkout {revs[by_other]} -- {args([path])}"
        if sides[path] == {2, 3}:  # the other side's edit of ``old`` merged into it
            what.append(f"{subject() if by_other else editor} edited {files([old])}, which {saver} forgot; git took "
                        f"{saver}'s new memory {files([path])} for a move of it and merged the edit into that")
            steps.append(f"{keep} to keep that memory as {saver} saved it, then git checkout {revs[not by_other]} -- "
                         f"{args([old])} to keep the edit of {files([old])} (or leave it forgotten)")
        else:
            what.append(f"{saver if by_other else subject()} saved {files([path])}, a new memory git took for a move "
                        f"of {files([old])}, which it forgot")
            steps.append(f"{keep} to keep it as {saver} saved it")
    for path in renamed_there:
        what.append(f"{subject()} forgot {files([was[path]])}, which {other} renamed to {_id(store, path)}")
        steps.append(f"git rm {args([path])} to keep it forgotten, the links to it stripped {stripped} "
                     f"(or git add {args([path])} to keep it, renamed)")
    for path in renamed_here:
        what.append(f"{other} forgot {files([was[path]])}, which {ours.lower()} renamed to {_id(store, path)}")
        steps.append(f"git add {args([path])} to keep it, renamed (or git rm {args([path])} to let it go, the "
                     f"links to it stripped {stripped})")
    if forgot_here:
        what.append(f"{subject()} forgot {files(forgot_here)}, which {other} edited")
        steps.append(f"git rm {args(forgot_here)} to keep it forgotten (or git add {args(forgot_here)} "
                     f"to keep {other}'s edit)")
    if forgot_there:
        what.append(f"{other} forgot {files(forgot_there)}, which {ours.lower()} edited")
        steps.append(f"git add {args(forgot_there)} to keep your edit (or git rm {args(forgot_there)} "
                     "to let it go)")
    if soft_here:
        what.append(f"{subject()} forgot {files(soft_here)} (forget --soft), which {other} edited")
        steps += [f"git checkout {take_ours} {args(soft_here)} to keep it forgotten (or git checkout {take_other} "
                  f"{args(soft_here)} to keep {other}'s edit)", f"git add {args(soft_here)}"]
    if soft_there:
        what.append(f"{other} forgot {files(soft_there)} (forget --soft), which {ours.lower()} edited")
        steps += [f"git checkout {take_ours} {args(soft_there)} to keep your edit (or git checkout {take_other} "
                  f"{args(soft_there)} to let it stay forgotten)", f"git add {args(soft_there)}"]
    if gone:
        what.append(f"{subject()} and {other} both moved or forgot {files(gone)}")
        steps.append(f"git rm -q {args(gone)} (neither side keeps it)")
    return "; ".join(what), steps


def merge_settles(crossed: list[Crossing]) -> str:
    """What ``slayer-kb merge`` does with ``crossed``, for the refusals that send the person to it."""
    stops = [c for c in crossed if not c.soft]
    against = " and ".join(dict.fromkeys("the rename" if c.new else "the edit" for c in stops))
    ids = list(dict.fromkeys(c.memory_id for c in crossed))
    kept = f"the memory given {ids[0]} where it is" if len(ids) == 1 else \
        f"the memories given {', '.join(ids[:-1])} and {ids[-1]} where they are"
    return f"it keeps {kept}, and " + (f"stops on the forget against {against} with the steps to keep either" if stops
                                        else "lets the memory both sides forgot go, without a stop")


def opening(said: str) -> str:
    """``said`` opening a message: the words "this branch" and "your commits" capitalised, a ref
    (``thistle/main``) left as it is."""
    return said[:1].upper() + said[1:] if said.startswith(("this branch", "your commits")) else said


def crossed_words(crossed: list[Crossing], names: dict[str, str]) -> list[str]:
    """What each ``Crossing`` did that git gets wrong, ``names`` naming each tip, for a merge's stop
    (a rename's after its words on the forget against the rename) or a rebase's refusal."""
    said = []
    for c in crossed:
        gave = f"renamed {c.given_by} to {c.memory_id}" if c.given_by else f"saved another memory as {c.memory_id}"
        if c.soft:
            said.append(f"{names[c.forgot]} forgot {c.memory_id} and then {gave}, and {names[c.other]} forgot "
                        f"{c.memory_id} too (forget --soft): git takes both for edits of one memory and merges that "
                        "forget into the other memory")
            continue
        if c.new is None:
            said.append(f"{names[c.forgot]} forgot {c.memory_id}, which {names[c.other]} edited, and then {gave}: git "
                        f"takes both for edits of one memory and merges that edit into the other memory")
            continue
        said.append(f"{names[c.forgot]} forgot {c.memory_id} and then {gave}, and {names[c.other]} renamed "
                    f"{c.memory_id} to {c.new}: git takes that for an edit of {c.memory_id} and puts the other "
                    f"memory's text under {c.new}")
    return said


def reuse_steps(store: GitStore, crossed: list[Crossing], here: str, other: str, tips: tuple[str, ...]) -> list[str]:
    """The step for each ``Crossing`` of an edit (``new`` None) a merge holds (``merge._hold_crossed``:
    git's two versions, the forgetting side's in the work tree), ``here`` the tip of this branch,
    ``other`` naming the other: keep the memory given the id at it, and let the edited memory go or
    keep it under a new id, this branch's choice first."""
    steps: list[str] = []
    taken: dict[str, set[str]] = {}
    for c in crossed:
        path = memory_path(c.memory_id)
        # A merge's --ours is this branch's version, --theirs the other's.
        given, edited = ("--ours", "--theirs") if c.forgot == here else ("--theirs", "--ours")
        new, aside = _aside(store, path, (given, edited), tips, taken)
        keep = f"{aside} && git add {words(path, new)}"
        drop = f"git checkout {given} {words(path)} && git add {words(path)}"
        steps.append(f"{drop} to keep it forgotten, yours at {c.memory_id} (or {keep} to keep the memory {other} "
                     f"edited, as {id_of_path(new)})" if c.forgot == here else
                     f"{keep} to keep the memory you edited, as {id_of_path(new)}, and {other}'s at {c.memory_id} "
                     f"(or {drop} to let it go)")
    return steps


def _renamed_from(store: GitStore, paths: list[str],
                  tips: tuple[str, ...]) -> tuple[dict[str, str], dict[str, tuple[set[str], dict[str, str]]], str]:
    """Of ``paths`` (repository-relative memory files git holds on one side only), those a
    ``rename`` commit of a side made since ``tips`` parted (its trailer), each with the path of the
    file it was; for each tip, the ids its renames gave and where each old id's chain ends there
    (1 -> kb.b -> kb.c: kb.b and kb.c given, 1 ends at kb.c); and where the tips parted."""
    ids = {p: id_of_path(p[len(store.prefix):]) for p in paths}
    if not any(ids.values()):
        return {}, {}, ""
    base = store.git("merge-base", "--octopus", *tips, check=False).stdout.decode().strip()
    if not base:
        return {}, {}, ""
    # An id a later rename moved on counts too: the rebase replays the rename commits one by one.
    old_of: dict[str, str] = {}
    by_tip: dict[str, tuple[set[str], dict[str, str]]] = {}
    at_base = memory_ids_at(store, base)
    for tip in dict.fromkeys(tips):
        first, final = chains(store, base, tip)
        # An id a memory held where they parted, which the tip's renames passed through and left
        # (forget kb.y, rename kb.x kb.y, rename kb.y kb.z): the file there is that memory's (kb.y,
        # the other side's edit), not one the renames gave. (A rebase stops at each rename commit:
        # an id only they gave, since left, is the stop's.)
        left = at_base - memory_ids_at(store, tip)
        old_of |= {new: old for new, old in first.items() if new not in left}
        by_tip[tip] = (set(first), final)
    return {p: store.repo_path(memory_path(old_of[i])) for p, i in ids.items() if i in old_of}, by_tip, base


def _missed_renames(store: GitStore, forgot_here: list[str], forgot_there: list[str], both: list[tuple[str, str]],
                    was: dict[str, str],
                    by_tip: dict[str, tuple[set[str], dict[str, str]]], base: str) -> list[tuple[str, str]]:
    """(the other's new file, this branch's) for each memory both sides renamed where git paired
    one side's rename alone: the other's new file merged as an add, held where another tip's
    renames (``by_tip``, of ``_renamed_from``, since ``base``) end (in a rebase stopped at
    1 -> kb.b, this branch's own later kb.c is no other side's)."""
    paired = {p for pair in both for p in pair}
    pairs = []
    for path in forgot_here + forgot_there:
        if path not in was or path in paired:
            continue
        own, old = _id(store, path), _id(store, was[path])
        found = sorted({(end, tip) for tip, (gave, final) in by_tip.items()
                        if own not in gave and (end := final.get(old)) not in (None, own)})
        # A chain the tip then ended by forgetting its memory is no rename to pair: a file at its
        # last id is another memory, saved there since.
        new = next((store.repo_path(memory_path(end)) for end, tip in found if files_at(store, tip, memory_path(end))
                    and old not in forgotten_ends(store, base, tip, {old})), None)
        if new is not None:
            was.setdefault(new, was[path])  # the other's new file, merged as an add: the same old file
            pairs.append((path, new) if path in forgot_here else (new, path))
    return pairs


def _guessed_moves(store: GitStore, paths: list[str], tips: tuple[str, ...]) -> dict[str, tuple[bool, str]]:
    """Of ``paths`` (repository-relative files git holds unmerged), the memories absent where
    ``tips`` parted that git's rename guess paired with one the same side forgot, the two saved at
    different times (``Guess.saved``: a new memory, no move), which git then merged as a move. Each
    with whether the other side saved it (``tips[1]``, the upstream or REF; a rebase's HEAD holds
    its files too, so it is asked first) and the file it was paired with."""
    base = store.git("merge-base", "--octopus", *tips, check=False).stdout.decode().strip() if paths else ""
    if not base:
        return {}
    at_base = {store.repo_path(p) for p in files_at(store, base, f"{MEMORIES_DIR}/")}
    new = {p for p in paths if p not in at_base}
    guessed: dict[str, tuple[bool, str]] = {}
    for tip in dict.fromkeys((tips[1], *tips)) if new else ():
        for guess in guessed_moves(store, base, tip):
            if guess.saved and guess.new in new and guess.new not in guessed:
                guessed[guess.new] = (tip == tips[1], guess.old)
    return guessed


def _id(store: GitStore, path: str) -> str:
    memory_id = id_of_path(path[len(store.prefix):])
    assert memory_id is not None
    return memory_id


def _keep_both(store: GitStore, created: list[str], checkout: tuple[str, str], tips: tuple[str, ...]) -> str:
    """The alternative to merging memory files both sides created: this side's memory kept under
    a new id (the file name is the id), the other side's at the id (``_aside``). Empty for other
    files."""
    moves = []
    taken: dict[str, set[str]] = {}
    for path in created:
        if id_of_path(kb_path := path[len(store.prefix):]) is not None:
            new, aside = _aside(store, kb_path, checkout, tips, taken)
            moves.append(f"{aside} && git add {words(new)}")
    return f" (or keep both, yours under a new id: {' && '.join(moves)})" if moves else ""


def _aside(store: GitStore, kb_path: str, checkout: tuple[str, str], tips: tuple[str, ...],
           taken: dict[str, set[str]]) -> tuple[str, str]:
    """A memory file git holds two versions of, one kept at its id and the other under a new id
    (the file name is the id): the new file, and the steps that move ``checkout[1]``'s version
    there and put ``checkout[0]``'s back (git's ``checkout`` options). The new id is free in every
    commit of ``tips`` (both sides' tips: sync asks after putting the work tree back, which then
    lacks the upstream's files), and the steps refuse to move onto a file that exists when they
    run. ``taken``: a folder's ids on every tip, folded as macOS and Windows fold them, read once."""
    stay, away = checkout
    folder = kb_path.rpartition("/")[0]
    if folder not in taken:
        taken[folder] = {fold_id(i) for tip in tips for name in files_at(store, tip, folder)
                         if (i := id_of_path(name)) is not None}
    memory_id = id_of_path(kb_path)
    assert memory_id is not None
    new = f"{folder}/{free_variant(memory_id, taken[folder])}.yaml"
    return new, " && ".join([f"test ! -e {words(new)}", f"git checkout {away} {words(kb_path)}",
                             f"mv {words(kb_path, new)}", f"git checkout {stay} {words(kb_path)}"])


def _kept_as(store: GitStore, edited: list[str]) -> dict[str, str]:
    """The memory files among ``edited`` (both sides edited, or the other edited and this branch
    forgot; repository-relative) whose base, the version this branch's commit changes, HEAD holds
    byte for byte under another id: where an earlier commit's keep-both steps (``_keep_both``)
    moved this branch's memory, so that this commit's change belongs there, not to the other
    side's memory. Each such path and the other."""
    stages = unmerged_stages(store)
    bases = {path: stages[path][1][1] for path in edited
             if 1 in stages.get(path, {}) and id_of_path(path[len(store.prefix):]) is not None}
    if not bases:
        return {}
    folders = {path.rpartition("/")[0] for path in bases}
    held: dict[str, str] = {}
    out = store.git("ls-tree", "-z", "HEAD", "--", *(f"{folder}/" for folder in folders)).stdout
    for entry in out.decode("utf-8", "surrogateescape").split("\0"):
        if entry:
            info, path = entry.split("\t", 1)
            held.setdefault(info.split()[2], path)
    return {path: held[blob] for path, blob in bases.items() if held.get(blob, path) != path}


def unmerged_stages(store: GitStore) -> dict[str, dict[int, tuple[str, str]]]:
    """The (mode, blob) git holds at each stage of each unmerged path."""
    stages: dict[str, dict[int, tuple[str, str]]] = {}
    for entry in store.git("ls-files", "-u", "-z").stdout.decode("utf-8", "surrogateescape").split("\0"):
        if entry:
            info, path = entry.split("\t", 1)
            mode, blob, stage = info.split()
            stages.setdefault(path, {})[int(stage)] = (mode, blob)
    return stages
