"""A sync meeting an id one side renamed and then gave a new memory (``rename``, then ``save
--reuse-id``), which the other side's commits changed too. Replayed on the renaming side, an
edit or forget the other side made of the old memory would land on the new one (git follows no
move it cannot see: the file is still there), and two sides that both renamed the id and gave it
again hold two memories for one id; so do two sides that each gave one new id to a memory of
its own (a rename to it, a ``save --id``). The tool cannot tell which memory such a change meant, so
sync stops with steps that work, as it does on any other conflict. The other way round (this
side renamed, the upstream edited), git's rebase replays the rename onto the edit and follows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ConflictError, MemoryFileError
from ..core.ids import fold_id, free_variant, is_auto_id
from ..core.locate import id_of_path, memory_path
from ..core.memory import loads
from ..core.problems import cd_step, command_in, words
from ..store.gitenv import LITERAL_PATHS
from ..store.renames import renames_between, trailer
from ..store.repo import GitStore
from .snapshot import memory_ids_at


@dataclass(frozen=True)
class Retry:
    """The command that stopped, as its message names it and its steps run it again: ``sync``
    (which fetches first) or ``merge REF`` (which merges the ref as it is)."""

    command: str
    fetch: bool
    meets: str  # how this branch's change would meet the upstream's
    who: str
    undone: str  # what did not happen

    @classmethod
    def sync(cls) -> Retry:
        return cls("sync", True, "replayed there", "sync", "pushed")

    @classmethod
    def merge(cls, ref: str) -> Retry:
        return cls(f"merge {words(ref)}", False, "merged", "the merge", "merged")

    @classmethod
    def rebase(cls, ref: str) -> Retry:
        return cls(f"rebase {words(ref)}", False, "replayed there", "the rebase", "rebased")


def refuse_reuse(store: GitStore, root: Path, parted: str, tips: tuple[str, str], ref: str, retry: Retry,
                 both: list[str]) -> None:
    """``reuse_stop`` for ``slayer-kb merge`` or ``rebase`` (``retry``) of ``ref`` (``tips``: its
    commit and this branch's, parted at ``parted``; ``both``: the files both wrote since,
    ``written_on_both``), raised before either writes anything."""
    renames = (renames_between(store, parted, tips[0]), renames_between(store, parted, tips[1])) if both else ({}, {})
    if both and (stop := reuse_stop(store, root, parted, tips, renames, both, ref, retry.command.startswith("merge"),
                                    retry)):
        raise ConflictError(stop)


def reuse_stop(store: GitStore, root: Path, parted: str, tips: tuple[str, str],
               renames: tuple[dict[str, str], dict[str, str]], both: list[str], name: str,
               merges: bool, retry: Retry) -> str | None:
    """Why sync (or ``merge``: ``retry``) must stop, with the steps, when an id among ``both`` (the
    files both ``tips``, the upstream ``name`` and this branch, wrote since ``parted``;
    ``renames``: each one's ``renames_between``) was renamed and given again on one side and
    changed on the other (on either side in a merge; on the upstream's in a rebase); None when
    none was."""
    ids = {i for path in both if (i := id_of_path(path)) is not None}
    if stop := _given_onto_one(store, root, parted, tips, renames, ids, name, retry):
        return stop
    theirs, mine = ({old: new for old, new in found.items() if old in ids} for found in renames)
    if not theirs and not (mine and merges):
        return None
    held = [_held(store, tip, [*theirs, *mine]) for tip in tips]
    base = parted[:12]
    aside = _Aside(store, root)
    for old in sorted({*theirs, *mine}):
        there, here = old in theirs and old in held[0], old in mine and old in held[1]
        if there and here:
            return (f"Memory '{old}' was renamed on both sides (by your commits to '{mine[old]}', by {name}'s to "
                    f"'{theirs[old]}'), and each side gave '{old}' to a new memory (--reuse-id): two memories for one "
                    f"id, and a link to '{old}' means a different one on each side. {retry.who.capitalize()} cannot tell which one a link "
                    f"or an agent meant, so nothing was {retry.undone} and the repository is back as it was. Keep one "
                    f"side's '{old}': to give up yours, {_steps(aside, base, old, name, retry, renames[1], mine[old])} then, before "
                    f"syncing, save your new memory again under an id of its own ({command_in(root)} save ... --id "
                    f"NEW-ID; its text is in {aside.file(old, 'mine')}), point your links to it there and those to "
                    f"'{mine[old]}' at '{theirs[old]}', and {command_in(root)} {retry.command}; the other side's clone does the "
                    "same to give up theirs.")
        if there:
            return (f"Your commits changed memory '{old}' (an edit, a forget or a rename), which {name} renamed to "
                    f"'{theirs[old]}' and then gave '{old}' to a new memory (--reuse-id): {retry.meets}, your change "
                    f"would land on the new memory, and {retry.who} cannot tell it from one meant for that memory, so "
                    f"nothing was {retry.undone} and the repository is back as it was. Make it on '{theirs[old]}' "
                    f"instead: {_steps(aside, base, old, name, retry, renames[1])} {command_in(root)} {retry.command}; then make your change again there "
                    f"({command_in(root)} edit {words(theirs[old])}, your version in {aside.file(old, 'mine')}; or "
                    f"{command_in(root)} forget {words(theirs[old])}).")
        if here and merges:  # in a rebase, git replays this side's rename onto the upstream's change
            # That change is upstream already, made before the rename reached its clone: it meant
            # the renamed memory. So the merge keeps this side's new memory, and it is made again there.
            return (f"{name} changed memory '{old}', which your commits renamed to '{mine[old]}' and then gave to a "
                    "new memory (--reuse-id): merged, its change could land on the new memory, so nothing was "
                    f"{retry.undone} and the repository is back as it was. Merge keeping your '{old}', and make "
                    f"that change on '{mine[old]}': {_merge_steps(aside, old, name, retry)} then make it again "
                    f"there ({command_in(root)} edit {words(mine[old])}, their version in {aside.file(old, 'theirs')}; or "
                    f"{command_in(root)} forget {words(mine[old])} if they forgot it) and {command_in(root)} sync.")
    return None


def _given_onto_one(store: GitStore, root: Path, parted: str, tips: tuple[str, str],
                    renames: tuple[dict[str, str], dict[str, str]], ids: set[str], name: str, retry: Retry) -> str | None:
    """Why sync (``merge``, ``rebase``: ``retry``) must stop when each of ``tips`` (the upstream
    ``name``, this branch) gave one id among ``ids`` to a memory of its own (``given_onto_one``):
    this branch, the second to come, gives its memory another id (``rename`` rewrites its links)
    and merges, since a rebase would replay its first rename or save onto the upstream's file again."""
    clash = given_onto_one(store, parted, tips, renames, ids)
    if not clash:
        return None
    new, (theirs, mine) = clash[0]
    kb = command_in(root)
    fetch = [f"git fetch {words(name.partition('/')[0])}"] if retry.fetch else []
    replayed = "rename" if mine.startswith("renamed") else "save"
    steps = [*cd_step(root), f"{kb} rename {words(new, free_id(store, tips, new))} (or another id: it rewrites your "
             "links to it)", *fetch,
             f"{kb} merge {words(name)} (a rebase would replay your {replayed} onto {name}'s {new} again)", f"{kb} sync"]
    return (f"Your commits {mine}, and {name} {theirs}: {GIVEN_ONTO_ONE.format(new=new)}. {retry.who.capitalize()} "
            f"keeps {name}'s {new} and will not give it yours, so nothing was {retry.undone} and the repository is back "
            f"as it was: give yours another id, and merge. To merge by hand: {'; '.join(steps)}.")


# What two memories given one new id are, as sync, merge and ``validate --against`` say it.
GIVEN_ONTO_ONE = "two memories given one new id, and a link to {new} means a different one on each side"


def given_onto_one(store: GitStore, parted: str, tips: tuple[str, str], renames: tuple[dict[str, str], dict[str, str]],
                   ids: set[str]) -> list[tuple[str, list[str]]]:
    """The ids among ``ids`` (files both wrote) that each of ``tips`` (the other side, this
    branch; parted at ``parted``) gave to a memory of its own and holds there, in id order, each
    with what each side did (``saved a new memory as ID (created ...)``, ``renamed OLD to ID``):
    a rename of a different memory to it (``renames``: each side's), or a new one saved under it
    (``save --id``) that the other side's is not (another ``created_at``). git stops on one file
    both created, and its keep-both steps kept this branch's memory under another id while its
    commits (a rename's trailer, the ``memory:`` links it wrote) still said the id, which then
    names the other memory. One memory both saved (one ``created_at``: a cherry-pick, an amended
    save) or one topic key, which the merge driver folds as one memory, is no clash; nor is an
    auto id both gave, which sync renumbers (``renumber``)."""
    ends = [{new: old for old, new in found.items()} for found in renames]
    paths = {i: store.repo_path(memory_path(i)) for i in sorted(ids)}
    objects = store.objects
    held = [objects.blobs_at(objects.tree_of(commit), paths.values()) for commit in (parted, *tips)]
    given = {i: (held[1][path], held[2][path]) for i, path in paths.items() if held[1][path] and held[2][path]}
    # Read only what may clash: a named id new on both sides (one the merge base held was edited, not given).
    saved = {i: pair for i, pair in given.items() if held[0][paths[i]] is None and not is_auto_id(i)
             and not (i in ends[0] and i in ends[1])}
    texts = objects.read_many("blob", {blob for pair in saved.values() for blob in pair if blob})
    clash: list[tuple[str, list[str]]] = []
    for i in given:  # in id order: the first clash is the one sync's steps name
        if i in ends[0] and i in ends[1]:
            if ends[0][i] != ends[1][i]:
                clash.append((i, [f"renamed {ends[0][i]} to {i}", f"renamed {ends[1][i]} to {i}"]))
            continue
        if i not in saved:
            continue
        made = _made(i, [texts[blob] for blob in saved[i] if blob])
        if made and made[0] != made[1]:
            clash.append((i, [f"renamed {ends[s][i]} to {i}" if i in ends[s] else
                              f"saved a new memory as {i} (created {made[s]})" for s in (0, 1)]))
    return clash


def free_id(store: GitStore, tips: tuple[str, str], memory_id: str) -> str:
    """An id for this branch's memory given ``memory_id``, which neither of ``tips`` holds
    (``kb.x-2``): the one the steps name."""
    taken = {fold_id(i) for tip in tips for i in memory_ids_at(store, tip)}
    return free_variant(memory_id, taken)


def _made(memory_id: str, texts: list[bytes]) -> list[str] | None:
    """The ``created_at`` of each of two versions of ``memory_id``'s file; None when they share a
    topic key (one memory, whenever each was saved) or one does not read (git's stop names it)."""
    try:
        memories = [loads(text.decode("utf-8", "surrogateescape"), memory_id) for text in texts]
    except MemoryFileError:
        return None
    keys = {memory.topic_key for memory in memories}
    return None if len(memories) != 2 or len(keys) == 1 and None not in keys else [m.created_at for m in memories]


class _Aside:
    """Where the steps keep the version of a memory they set aside (``OLD.mine.yaml``,
    ``OLD.theirs.yaml``): a folder of this worktree's git folder. No command reads memories
    outside ``memories/``, but in the KB's folder the file sat untracked in the work tree, and a
    person's ``git add -A`` committed it into the KB. Named from the KB's folder ``root``, where
    the steps run, when it holds the git folder (``.git/...``), else in full."""

    def __init__(self, store: GitStore, root: Path) -> None:
        self.root, self.folder = root, store.git_dirs()[0] / "slayer-kb-set-aside"

    def _named(self, path: Path) -> str:
        return words(str(path.relative_to(self.root) if path.is_relative_to(self.root) else path))

    def file(self, old: str, side: str) -> str:
        return self._named(self.folder / f"{old}.{side}.yaml")

    def kept(self, source: str, old: str, side: str) -> list[str]:
        """The steps that keep ``source`` (a ``git show`` argument) as ``file(old, side)``."""
        return [f"mkdir -p {self._named(self.folder)}", f"git show {words(source)} > {self.file(old, side)}"]


def _steps(aside: _Aside, base: str, old: str, name: str, retry: Retry, renamed: dict[str, str], copy: str = "") -> str:
    """The steps that take this branch's change of ``old`` off it (kept in ``OLD.mine.yaml``, in
    ``aside``) and commit the rest (the caller says when to sync): its commits since ``base``
    become one, the file as it was at ``base``, and ``copy`` (this side's rename of it, which the
    other side's rename keeps) removed. That one commit says the branch's other renames
    (``renamed``: where each id went since ``base``), or a sync would take them for forgets and
    strip links to them."""
    path = words(memory_path(old))
    fetch = [f"git fetch {words(name.partition('/')[0])}"] if retry.fetch else []
    trailers = "".join(f" --trailer {words(trailer(was, now))}" for was, now in renamed.items() if was != old)
    steps = [*cd_step(aside.root), *fetch, *aside.kept(f"HEAD:./{memory_path(old)}", old, "mine"),
             f"git reset --soft {base}", f"git restore --source={base} --staged --worktree -- {path}",
             *([f"git rm -q -f -- {words(memory_path(copy))}"] if copy else []),
             "git commit -m 'My changes, memory " + old.replace("'", "") + f" set aside'{trailers} (if anything is left)"]
    return "; ".join(steps) + ";"


def _merge_steps(aside: _Aside, old: str, name: str, retry: Retry) -> str:
    """The steps that merge the upstream ``name`` by hand, its version of ``old`` kept aside in
    ``OLD.theirs.yaml`` (in ``aside``; none when it forgot it) and this branch's kept, then run the
    command again."""
    path = words(memory_path(old))
    fetch = [f"git fetch {words(name.partition('/')[0])}"] if retry.fetch else []
    root = aside.root
    # A merge that conflicts elsewhere stops at the commit, naming the files, as git's does.
    steps = [*cd_step(root), *fetch, *aside.kept(f"{name}:./{memory_path(old)}", old, "theirs"),
             f"git merge -q --no-ff --no-commit {words(name)}", f"git checkout HEAD -- {path}",
             f"{command_in(root)} validate", "git commit --no-edit", f"{command_in(root)} {retry.command};"]
    return "; ".join(steps)


def _held(store: GitStore, tip: str, ids: list[str]) -> set[str]:
    """The ids among ``ids`` whose memory file ``tip`` holds."""
    out = store.git("ls-tree", "-z", "--name-only", tip, "--", *(store.repo_path(memory_path(i)) for i in ids),
                    env=LITERAL_PATHS).stdout.decode("utf-8", "surrogateescape")
    return {i for p in out.split("\0") if p and (i := id_of_path(p[len(store.prefix):])) is not None}
