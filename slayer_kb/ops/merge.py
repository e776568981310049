"""``slayer-kb merge REF``: git's merge with the KB's merge driver, for an agent's branch taking
in ``main`` (branch per agent, docs/teams.md).

A plain ``git merge origin/main`` knows neither the driver (``store/mergedriver.py``: session
files and topic-key memories both sides wrote) nor that a memory both sides added alike is one
memory: after ``main`` merged the agent's pull request by squash or rebase (each memory added again
under a commit of its own) and then edited one, git's merge base predates both adds and the merge
stopped on an add/add of ``memories/N.yaml``. Here such a path is merged from the version both
added (``rebase.settle``; one the driver merged from git's empty base is merged again from it, so
a topic key's revisions count the add once), and the driver is passed to git for this run only
(nothing is written to the git config). A memory the branch forgot after REF took it in that way is one git's merge
would bring back (the merge base predates it): it stays forgotten, or, when REF edited it since,
is held as a forget against an edit. An id one side forgot and gave to another memory while the
other renamed or edited the memory it named (``renames.Crossing``) is held too, the memory given
the id kept there: git would merge the two as one. What still conflicts (two edits of one memory,
a forget against an edit) stops the merge, names the files and gives the steps. After the merge, what sync
does once the upstream is in (``revalidation.py``): a topic key the branch saved first while REF
saved it too is one memory, REF's or the branch's, whichever the team holds (``folds.Standing``:
on the remote's default branch, pushed, saved first), links to what REF forgot or deleted are stripped, and
what the branch adds or changes on top of REF is validated, the problems a sync would refuse to
push named in the reply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import ConflictError, StoreError
from ..core.locate import MEMORIES_DIR, id_of_path, memory_path
from ..core.outcomes import MergeResult
from ..core.problems import cd_step, command, command_in, git_command, words
from ..store import mergedriver, mergemark
from ..store.foldlog import renamed_folded
from ..store.gitenv import LITERAL_PATHS
from ..store.guesses import rename_detection
from ..store.renames import (
    Crossing,
    Renamed,
    crossings,
    forgotten_ends,
    renamed_on_each,
    renamed_since,
    renames_between,
)
from ..store.revisions import added_alike, resolve_rev, shallow_parting
from ..store.worktree import require_shown
from .carry import follow_folds, held_words, kept_paths, record_held_renames
from .conflictsteps import crossed_words, opening, reuse_steps
from .folds import Standing, fold_renamed
from .rebase import conflict_steps, held_stages, merge_from, push_step, settle, swap_sides, unmerged
from .renumber import refuse_clashes, require_clean
from .replaced import replaced_here
from .reuses import Retry, refuse_reuse
from .revalidation import Moves, finish_or_put_back, take_in
from .snapshot import merge_bases, session_projects, written_on_both, written_on_either

if TYPE_CHECKING:
    from ..context import Context
    from ..store.repo import GitStore
    from ..transaction import Transaction


def merge(kb: Context, ref: str) -> MergeResult:
    """Merge ``ref`` into the branch (see the module doc); a conflict raises with the steps."""
    return _merge(kb, kb.store, ref)


def _merge(kb: Context, store: GitStore, ref: str) -> MergeResult:
    with kb.transaction() as tx:
        require_clean(store)
        sha = resolve_rev(store, ref)
        if (owed := mergemark.owed(store)) is not None and owed[1] == sha:
            # Killed once git's merge of REF was committed: its folds and checks made now, on that commit.
            return _finish(kb, store, tx, ref, owed[1:])
        before = store.head()
        assert before is not None
        bases = merge_bases(store, (before, sha))
        parted = bases[0] if bases else ""
        # What sync refuses before it merges, this refuses too: an id REF renamed and gave again.
        both = written_on_both(store, parted, (sha, before)) if parted else []
        refuse_reuse(store, kb.root, parted, (sha, before), ref, Retry.merge(ref), both)
        if parted:
            refuse_clashes(store, sha, parted, ref, f"merge {words(ref)}",
                           default=lambda: Standing(store, kb.shared_remote()).default_tip)
        followed: dict[str, dict[str, str]] = {}
        # Kept by a kill alone (mergemark.py): the next command names what git left.
        with mergemark.recorded(store, ref, sha, before):
            stopped = merge_in(store, ref, sha, written_on_either(store, (sha, before), bases), bases, followed=followed)
            if stopped is not None:
                raise ConflictError(merge_conflict_message(store, ref, *stopped, tips=("HEAD", sha), followed=followed))
            kb.reread()
            head = store.head()
            assert head is not None
            branch = store.branch()
            result = MergeResult(ref, "up to date" if head == before else "fast-forward" if head == sha else "merged", head,
                                 push_step(kb.shared_remote(), branch, 0, store.root))
            result.followed = followed
            # A memory this branch holds that REF's commits replaced under its id (a reviewer's "keep
            # theirs"): the merge takes the replacement in, and the branch held the only copy but one.
            result.warnings = replaced_here(store, before, ref)
            if result.action == "merged":
                # A memory REF renamed that this branch had folded away, its edits in the memory kept.
                fold_renamed(kb, tx, {f["renamed"]: f["kept"] for f in followed.values() if "renamed" in f})
                _fixes(kb, store, tx, result, (sha, parted, before, head), both)
            return result


def _fixes(kb: Context, store: GitStore, tx: Transaction, result: MergeResult, commits: tuple[str, str, str, str],
           both: list[str]) -> None:
    """What follows git's merge once committed (``commits``: REF's, where the sides parted, HEAD
    before, the merge's): what sync does once the upstream is in, the same fixes (folds, links
    stripped), and its revalidation named, in ``result``."""
    sha, parted, before, made = commits
    # Before the fixes' commits, HEAD holds the merged sessions.
    result.session_projects = session_projects(store, (sha, before), both)
    moves = Moves(result.folded, result.unlinked, result.cascaded, result.deduplicated, result.relinked,
                  result.relinked_merged, result.followed)
    checked = finish_or_put_back(kb, store, tx, sha, parted, moves, before, made,
                                 standing=Standing(store, kb.shared_remote()))
    take_in(kb, store, result, checked, (sha, result.folded), "merge", made)


def _finish(kb: Context, store: GitStore, tx: Transaction, ref: str, owed: tuple[str, str, str]) -> MergeResult:
    """``slayer-kb merge REF`` again after one killed once git's merge was committed (``owed``: REF's
    commit, HEAD before, the merge's commit; ``mergemark.owed``): its fixes made on that commit,
    as the merge would have made them, said as a merge ("merged"). No follow of a fold: git's merge
    ran it before its commit (``merge_in``); its renames to fold (``fold_renamed``) read again."""
    sha, before, made = owed
    parted = store.git("merge-base", before, sha).stdout.decode().strip()
    both = written_on_both(store, parted, (sha, before))
    with mergemark.recorded(store, ref, sha, before):
        result = MergeResult(ref, "merged", made, push_step(kb.shared_remote(), store.branch(), 0, store.root))
        # What the merge's follow found and the kill cut off: a rename one side made of a memory the
        # other side folded, its new file committed beside the memory kept (which holds its edits).
        result.followed = {old: {"kept": kept, "change": "renamed", "folded_on": ("this branch", ref)[folding],
                                 "renamed": new}
                           for old, (kept, new, folding) in renamed_folded(store, [before, sha]).items()
                           if kb.memory_exists(new) and kb.memory_exists(kept)}
        fold_renamed(kb, tx, {f["renamed"]: f["kept"] for f in result.followed.values()})
        _fixes(kb, store, tx, result, (sha, parted, before, made), both)
    mergemark.folded(store, made)
    return result


def unrelated(store: GitStore, ref: str, sha: str) -> StoreError:
    """The error of a merge of ``ref`` (commit ``sha``) that shares no commit with the branch: a
    shallow clone's missing history (``shallow_parting``), else two knowledge bases begun apart,
    whose memories are brought over by the steps that work for the branch (a merge commit on it
    cannot be rewritten by ``renumber --rewrite``; git then merges, by hand)."""
    if (shallow := shallow_parting(store, ref)) is not None:
        return shallow
    run, given = command(store.root), words(ref)
    if store.git("rev-list", "-1", "--min-parents=2", "HEAD", f"^{sha}").stdout.strip():
        steps = (f"'{run} renumber --onto {given}', then "
                 f"'{git_command(store.root, f'merge --allow-unrelated-histories {given}')}' (resolve what it stops on, "
                 f"then '{run} validate' and 'git commit')")
    else:
        steps = f"'{run} renumber --onto {given} --rewrite', then '{run} rebase {given}'"
    return StoreError(f"'{ref}' and this branch have no commit in common: they are two knowledge bases begun apart "
                      "(each by its own init), and git refuses to merge unrelated histories. Nothing was changed. If "
                      f"'{ref}' is not the one you meant, check its name ('{git_command(store.root, 'remote -v')}', "
                      f"'{git_command(store.root, 'branch -a')}'); to bring this branch's memories onto it, give them "
                      f"ids it does not use and bring them there: {steps}.")


def merge_in(store: GitStore, ref: str, sha: str, written: list[str] | None,
             bases: list[str], seen: str = "", followed: dict[str, dict[str, str]] | None = None
             ) -> tuple[list[str], dict[str, set[int]]] | None:
    """``git merge REF`` (``sha``, its commit) with the KB's merge driver, committed (see the
    module doc); None when it finished, else the unmerged paths and their stages as
    ``conflict_steps`` reads them, the merge stopped on them (``sync`` aborts it). ``written``: the
    KB's files either side's commits wrote since they parted (``snapshot.written_on_either``), the
    ones git can hand the driver (``mergedriver.require_driver``); ``bases``: where HEAD and
    ``sha`` parted (``snapshot.merge_bases``; the first, of several, as rough as another for the
    checks after git's merge: git merges from all of them), none with no common ancestor;
    ``seen``: sync's upstream as this clone last fetched it (``rebase.first_version``);
    ``followed``: given each memory REF forgot or edited that this branch had folded into another
    (``carry.follow_folds``)."""
    before = store.head()
    assert before is not None
    if not bases:  # git refuses the merge and says only that, not what to do
        raise unrelated(store, ref, sha)
    parted = bases[0]
    require_shown(store, parted, sha)
    options, env, attributes = mergedriver.git_config(store.prefix, ("this branch", ref))
    try:
        mergedriver.require_driver(store, options, written)
        proc = store.git_writing_index(*options, "merge", "--no-edit", "--no-commit", "-q",
                                       *rename_detection(store, bases, (before, sha), replays=False), "--end-of-options", ref,
                                       check=False, env=env, undo=("merge", "--quit"))
    finally:
        attributes.unlink(missing_ok=True)
    stopped: list[str] = []  # a merge git finished leaves no unmerged path to ask git for
    if proc.returncode != 0:
        stopped = unmerged(store)
        if not stopped:
            store.git_writing_index("merge", "--abort", check=False)
            raise ConflictError(f"git merge {ref} failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
        stopped = [] if settle(store, stopped, "MERGE_HEAD", seen) else unmerged(store)
    if not merging(store):
        return None
    # The memory files each side added since they parted (KB-relative), read once for the checks below.
    added = tuple(set(store.added_paths(parted, tip, f"{MEMORIES_DIR}/")) for tip in (before, sha))
    _merge_added_alike(store, before, sha, added, stopped)
    held_renames: dict[str, tuple[str, str]] = {}
    if followed is not None and follow_folds(store, parted, (before, sha), ("this branch", ref), followed, held_renames):
        record_held_renames(store, held_renames)
        stopped = unmerged(store)
    forget, edited = _forgotten_here(store, parted, before, sha, added[0])
    if forget:
        store.git_writing_index("rm", "-q", "-f", "--", *forget, env=LITERAL_PATHS)
    if edited:
        # Held as git holds a file deleted here and changed there: REF's version alone, at
        # stage 3, so that 'git rm' and 'git add' resolve it and a commit waits for them.
        store.git_writing_index("update-index", "--index-info", input="".join(
            f"0 {'0' * 40}\t{path}\n100644 {blob} 3\t{path}\n" for path, blob in edited.items()).encode())
        stopped = unmerged(store)
    if _hold_unseen_renames(store, parted, (before, sha), added):
        stopped = unmerged(store)
    if _hold_crossed(store, parted, (before, sha)):
        stopped = unmerged(store)
    if stopped:
        # In a merge git holds this branch's version at stage 2 and REF's at 3, the other
        # way round from a rebase's.
        return stopped, swap_sides(held_stages(store, "MERGE_HEAD", seen))
    store.git_writing_index("commit", "--no-edit", "-q")
    return None


def merging(store: GitStore) -> bool:
    """Whether a merge is in progress (git holds ``MERGE_HEAD``)."""
    return store.git("rev-parse", "-q", "--verify", "MERGE_HEAD", check=False).returncode == 0


def _merge_added_alike(store: GitStore, ours: str, theirs: str, added: tuple[set[str], ...],
                       unresolved: list[str]) -> None:
    """Merge again, from the version both added, each memory both sides added alike since they
    parted (``added``: each side's added memory files; a pull request merged by squash or rebase)
    and then changed: git's merge base
    predates the add, so git handed the driver an empty base, and it counted the revision both
    sides hold twice (a topic key squash-merged, then revised on both sides). ``unresolved``: the
    paths the merge left unmerged, left as they are."""
    paths = sorted(rp for rp in map(store.repo_path, added[0] & added[1]) if rp not in unresolved)
    objects = store.objects
    here, there = objects.blobs_at(objects.tree_of(ours), paths), objects.blobs_at(objects.tree_of(theirs), paths)
    for path in paths:
        mine, other = here[path], there[path]
        if mine is not None and other is not None and mine != other:
            base = added_alike(store, path, ours, theirs)
            if base is not None:
                merge_from(store, path, "100644", (base, mine, other))


def _forgotten_here(store: GitStore, parted: str, ours: str, theirs: str,
                    added: set[str]) -> tuple[list[str], dict[str, str]]:
    """The memories ``ours`` added (``added``) and then forgot since it parted from ``theirs``, which
    ``theirs`` holds as one memory with them (a pull request merged by squash or rebase before the
    forget): git's merge base predates the add, so the merge brings them back. Returns (those
    ``theirs`` left as added, whose forget stands; those it edited, a forget against an edit,
    with their blobs there), repository-relative. An id ``theirs`` renamed away since is neither:
    its file there, if any, is another memory it gave the id to (``--reuse-id``)."""
    paths = [store.repo_path(p) for p in sorted(added)]
    objects = store.objects
    here, there = objects.blobs_at(objects.tree_of(ours), paths), objects.blobs_at(objects.tree_of(theirs), paths)
    forget: list[str] = []
    edited: dict[str, str] = {}
    held = {path: blob for path, blob in there.items() if blob is not None and here[path] is None}
    # An id ``theirs`` renamed away since, its file there another memory given the id: no forget of it.
    ids = {path: id_of_path(path[len(store.prefix):]) or "" for path in held}
    moved = renamed_since(store, parted, theirs, list(ids.values())) if held else Renamed({}, {})
    for path, blob in held.items():
        if ids[path] in moved.live.keys() | moved.gone.keys():
            continue
        if (first := added_alike(store, path, ours, theirs)) is not None:
            if blob == first:
                forget.append(path)
            else:
                edited[path] = blob
    return forget, edited


def _hold_unseen_renames(store: GitStore, parted: str, tips: tuple[str, str], added: tuple[set[str], ...]) -> bool:
    """Hold as unmerged this branch's new file of each memory both ``tips`` (this branch, REF)
    renamed since ``parted`` to two ids where git saw neither rename (each side's edit made its file
    too unlike the old one): git merged both new files as adds, one memory twice. Held as git
    holds a rename it saw against a forget (the old file's version and this branch's), so that
    the stop pairs the two by the renames' trailers and a commit waits for the steps; whether any was."""
    if not (added[0] - added[1] and added[1] - added[0]):  # a rename adds its new id on each side
        return False
    # ... and deletes the old one: a memory file both deleted, read of the trees (no git process),
    objects, folder = store.objects, store.repo_path(MEMORIES_DIR)
    parted_names, *tip_names = (set(objects.names_in(objects.tree_of(c), folder)) for c in (parted, *tips))
    gone = [f"{folder}/{name.decode('utf-8', 'surrogateescape')}" for name in parted_names - set().union(*tip_names)]
    # by a commit recording a rename on each side (both forgot it, each saving a new memory: none).
    if not gone or not renamed_on_each(store, parted, tips, gone):
        return False
    mine, theirs = (renames_between(store, parted, tip) for tip in tips)
    pairs = {old: (store.repo_path(memory_path(new)), store.repo_path(memory_path(end)))
             for old, new in mine.items() if (end := theirs.get(old)) not in (None, new)}
    if not pairs:
        return False
    out = store.git("ls-files", "-s", "-z", "--", *(p for pair in pairs.values() for p in pair),
                    env=LITERAL_PATHS).stdout.decode("utf-8", "surrogateescape")
    merged = {path: info.split() for info, _, path in (entry.partition("\t") for entry in out.split("\0") if entry)}
    # Both merged cleanly (stage 0): git saw neither rename, else it stopped on them already.
    pairs = {old: pair for old, pair in pairs.items() if all(merged.get(p, ["", "", "?"])[2] == "0" for p in pair)}
    # A side that forgot the memory its rename gave has no rename to pair: the file at that id
    # now is another memory, saved there since.
    for tip in tips if pairs else ():
        pairs = {old: pair for old, pair in pairs.items() if old not in forgotten_ends(store, parted, tip, pairs)}
    if not pairs:
        return False
    at_parted = objects.blobs_at(objects.tree_of(parted), [store.repo_path(memory_path(old)) for old in pairs])
    olds = {old: at_parted[store.repo_path(memory_path(old))] for old in pairs}
    store.git_writing_index("update-index", "--index-info", input="".join(
        f"0 {'0' * 40}\t{new}\n" + (f"{merged[new][0]} {olds[old]} 1\t{new}\n" if olds[old] else "")
        + f"{merged[new][0]} {merged[new][1]} 2\t{new}\n" for old, (new, _end) in pairs.items()).encode())
    return True


# What ``git checkout`` takes to write a stage held (0: resolved) to the work tree.
_SIDE = {0: (), 2: ("--ours",), 3: ("--theirs",)}


def _hold_crossed(store: GitStore, parted: str, tips: tuple[str, str]) -> bool:
    """Undo git's pairing of each ``Crossing`` of ``tips`` (this branch, REF): the memory the
    forgetting side gave the id to is put back at the id, as that side holds it, and the other's
    renamed file is held as git holds a rename against a forget (the old file's version and the
    renaming side's), so the stop names that forget and a commit waits for the person's choice.
    An edit's is held at the id as git holds two edits (``conflictsteps.reuse_steps`` reads it),
    the forgetting side's version in the work tree; a soft forget's (both forgot the memory) is
    resolved to that version, no stop. Whether any crossing was found."""
    crossed = crossings(store, parted, tips)
    if not crossed:
        return False
    objects = store.objects
    lines, stages = [], {}
    for c in crossed:
        old = store.repo_path(memory_path(c.memory_id))
        was = objects.blobs_at(objects.tree_of(parted), [old])[old]
        if c.soft:  # git would merge that forget into the memory given the id
            given = objects.blobs_at(objects.tree_of(c.forgot), [old])[old]
            lines += [f"0 {'0' * 40}\t{old}\n", f"100644 {given} 0\t{old}\n"]
            stages[old] = 0
            continue
        if c.new is None:
            held = [was, *(objects.blobs_at(objects.tree_of(tip), [old])[old] for tip in tips)]
            lines += [f"0 {'0' * 40}\t{old}\n", *(f"100644 {blob} {n}\t{old}\n" for n, blob in enumerate(held, 1))]
            stages[old] = 2 if c.forgot == tips[0] else 3
            continue
        new = store.repo_path(memory_path(c.new))
        given = objects.blobs_at(objects.tree_of(c.forgot), [old])[old]
        renamed = objects.blobs_at(objects.tree_of(c.other), [new])[new]
        stages[new] = 2 if c.other == tips[0] else 3  # a merge's stage 2 is this branch's
        lines += [f"0 {'0' * 40}\t{old}\n", f"100644 {given} 0\t{old}\n", f"0 {'0' * 40}\t{new}\n",
                  f"100644 {was} 1\t{new}\n", f"100644 {renamed} {stages[new]}\t{new}\n"]
    store.git_writing_index("update-index", "--index-info", input="".join(lines).encode())
    for c in crossed:
        if c.new:
            store.git_writing_index("checkout", "--", store.repo_path(memory_path(c.memory_id)), env=LITERAL_PATHS)
    for path, stage in stages.items():
        store.git_writing_index("checkout", *_SIDE[stage], "--", path, env=LITERAL_PATHS)
    for c in crossed:
        _carry_edit(store, parted, c, tips)
    return True


def _carry_edit(store: GitStore, parted: str, c: Crossing, tips: tuple[str, str]) -> None:
    """Where the forgetting side renamed ``c.given_by`` to the id and the other side edited that
    memory's old file: git saw that side forget the file the other edited (it paired no move, the
    id's file being there already). The edit goes where the memory went, as git carries an edit
    across a rename it sees, and the old file goes: into the id's file, or, where the other side
    edited the memory it forgot (``c.new`` None), into the forgetting side's version held there
    (resolved there, after a soft forget). Two edits of one field: at a rename's id, held as git holds them, the base the old file's, in
    git's conflict markers; beside the other edit, left as git held them."""
    if c.given_by is None:
        return
    objects = store.objects
    old, at = store.repo_path(memory_path(c.given_by)), store.repo_path(memory_path(c.memory_id))
    was, edited = (objects.blobs_at(objects.tree_of(commit), [old])[old] for commit in (parted, c.other))
    if was is None or edited is None or edited == was:
        return
    given = objects.blobs_at(objects.tree_of(c.forgot), [at])[at]
    assert given is not None  # a crossing's id: the forgetting side holds the memory it gave it to
    here = c.forgot == tips[0]
    ours, theirs = (given, edited) if here else (edited, given)
    if c.new is None:  # into the forgetting side's stage, which the steps keep, and the work tree
        if (merged := mergedriver.merged_blob(store, at, (was, ours, theirs))) is not None:
            stage = 0 if c.soft else 2 if here else 3
            store.git_writing_index("rm", "-q", "-f", "--", old, env=LITERAL_PATHS)
            store.git_writing_index("update-index", "--index-info", input=f"100644 {merged} {stage}\t{at}\n".encode())
            store.git_writing_index("checkout", *_SIDE[stage], "--", at, env=LITERAL_PATHS)
        return
    store.git_writing_index("rm", "-q", "-f", "--", old, env=LITERAL_PATHS)
    if not merge_from(store, at, "100644", (was, ours, theirs)):
        store.git_writing_index("update-index", "--index-info", input="".join(
            [f"0 {'0' * 40}\t{at}\n", *(f"100644 {blob} {n}\t{at}\n" for n, blob in enumerate((was, ours, theirs), 1))]
        ).encode())
        store.git_writing_index("checkout", "-m", "--", at, env=LITERAL_PATHS)  # both edits, in git's markers


def merge_conflict_message(store: GitStore, ref: str, paths: list[str], held: dict[str, set[int]],
                           first: tuple[str, ...] = (), *, tips: tuple[str, ...],
                           followed: dict[str, dict[str, str]]) -> str:
    """What conflicts on ``paths`` and the steps (``held``: their stages as ``conflict_steps`` reads
    them; ``tips``: both sides' commits): after ``first`` (sync's fetch and the merge's start) when
    sync put the repository back, else from where the merge stopped. Then, of ``followed``
    (``merge_in``'s), each fold whose memory kept is among ``paths``: the edit of the folded id
    held there (the file names an id the other side never held)."""
    parted = store.git("merge-base", *tips[:2], check=False).stdout.decode().strip()
    # A soft forget's ``Crossing`` the merge resolved: no stop of its own.
    crossed = [c for c in crossings(store, parted, (tips[0], tips[1])) if not c.soft] if parted else []
    # An edit's ``Crossing`` is no edit of both sides to join: its words and steps are its own.
    reused = [c for c in crossed if c.new is None]
    apart = {store.repo_path(memory_path(c.memory_id)) for c in reused}
    what, steps = conflict_steps(store, [p for p in paths if p not in apart], held, ref, "This branch",
                                 ("--theirs", "--ours"), tips=tips, folded=kept_paths(store, followed))
    said = "; ".join(filter(None, [what, *crossed_words(crossed, {tips[0]: "this branch", tips[1]: ref})]))
    kb = command_in(store.root)
    steps = [*cd_step(store.root), *first, *steps, *reuse_steps(store, reused, tips[0], ref, tips), f"{kb} validate",
             "git commit --no-edit", f"{kb} sync"]
    where = ("the repository is back as it was" if first else
             f"the merge stopped, and {git_command(store.root, 'merge --abort')} would put the branch back as it was")
    return f"{opening(said)}; {where}. To merge by hand: " + "; ".join(steps) + "." + held_words(
        store, followed, paths, ("this branch", ref))
