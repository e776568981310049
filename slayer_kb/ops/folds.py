"""One memory per topic key: a key this branch saved first while the other side (``sync``'s
upstream, the branch ``merge`` takes in) saved it too is folded into one of the two (which one:
below), in one commit (``memory: merge 102 into 28 (topic decision/retry-budget)``): the newest content, the
revision counts summed, this branch's version kept in git's history, and ``memory:`` references
to it rewritten. Engram's de-duplication the same way: a save both sides made alike is one
memory (``memory: merge 103 into 29 (same save)``), the duplicate counts summed; one record of an
Engram export imported on both sides is folded with its counts as they are (one import, not two
saves). The caller records the moves (``store/moves.py``).

Which of the two memories keeps its id, in ``sync``, ``slayer-kb rebase`` and ``slayer-kb merge``
alike, whichever way round it is run: the one the team holds (``Standing``). A memory on the
remote's default branch (as the remote names it, else ``origin/HEAD``, else ``origin/main`` or
``origin/master``: the clone that made the team has no ``origin/HEAD``; offline with none of
those, the branch's upstream, a team's ``trunk``) is kept before one that is
not, then one pushed to any branch of the remote before one that is not, then the one saved first
(``created_at``); the other side (the upstream, the branch merged) wins a tie. A sync's own
memories are on no branch of the remote yet, so it keeps the upstream's, as before; a memory
another branch took in from ``main`` keeps its id through that branch's sync. So a reviewer's
``slayer-kb merge origin/agent-y`` on ``main`` keeps ``main``'s memory and folds the agent's into
it, as ``slayer-kb merge origin/main`` on ``agent-y`` does."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.engram import content_hash, is_import
from ..core.errors import KBError
from ..core.locate import id_of_path, memory_link, memory_path
from ..core.memory import FIELD_NAMES, Memory, loads, parse_time, time_order
from ..core.merging import carry_through_fold, fold_subject, folded_by, merge_topic_revisions
from ..store import claims, mergedriver
from ..store.foldlog import fold_moves, folded_to
from ..store.gitenv import LITERAL_PATHS
from ..store.repo import Change, GitStore
from ..store.revisions import added_version
from ..transaction import Transaction, memory_change
from .renumber import renumbered_text
from .snapshot import blobs_at
from .syncfetch import default_branch

if TYPE_CHECKING:
    from ..context import Context


class Standing:
    """Which of two memories a fold keeps in sync, ``slayer-kb rebase`` and ``slayer-kb merge``
    (see the module doc), read of the remote-tracking branches of ``store`` as they are now."""

    def __init__(self, store: GitStore, remote: str, before: str = "") -> None:
        self.store = store
        self.remote = remote
        # A merge pushed already (sync's ``fold_pulled``): its first parent, the default branch
        # before it, whose memory ``slayer-kb merge`` would have kept; "" for none.
        self.before = before

    @functools.cached_property
    def _tips(self) -> list[str]:
        """Every remote-tracking branch's commit, read once a fold asks (most syncs and merges
        fold nothing: no git process)."""
        refs = self.store.git("for-each-ref", "--format=%(objectname)", "refs/remotes/").stdout.decode().split()
        return list(dict.fromkeys(refs))

    @functools.cached_property
    def _default(self) -> str:
        """The commit of the remote's default branch ('' when none): as the remote names it now
        (asked once, bounded), else as this clone knows it (``origin/HEAD`` is stale once the
        remote's default changed, and the clone that made the team, ``git remote add`` and a push,
        has none), else ``main`` or ``master``, else the branch's upstream. Asked only when both
        memories are on the remote: a sync's own saves are not."""
        if not self.remote:
            return ""
        said = claims.network(self.store, "ls-remote", "--symref", self.remote, "HEAD")
        told = default_branch(said.stdout.decode("utf-8", "replace")) if said is not None and said.returncode == 0 else ""
        named = (f"refs/remotes/{self.remote}/{name}" for name in (told, "HEAD", "main", "master") if name)
        if tip := next((tip for ref in named if (tip := self.store.tip(ref))), ""):
            return tip
        # Offline, with no origin/HEAD, main or master: the branch's upstream (a team's ``trunk``),
        # last: on an agent's branch it is the agent's own, which must not outrank main.
        upstream = _upstream_ref(self.store)
        return self.store.tip(upstream) or "" if upstream.startswith(f"refs/remotes/{self.remote}/") else ""

    @property
    def default_tip(self) -> str:
        """The commit of the remote's default branch, '' when none (``_default``)."""
        return self._default

    def keeps_mine(self, mine: Memory, theirs: Memory) -> bool:
        """Whether ``mine`` (this branch's) is kept and ``theirs`` (the branch merged's) folded into it."""
        held = [self._held(m) for m in (mine, theirs)]
        if bool(held[0]) != bool(held[1]):  # one is on the remote, the other on no branch of it
            return bool(held[0])
        ranks = [self._default in tips for tips in held] if held[0] else [False, False]
        if ranks[0] != ranks[1]:
            return ranks[0]
        if self.before:
            path = [memory_path(m.id) for m in (mine, theirs)]
            was = [text is not None for text in blobs_at(self.store, [(self.before, p) for p in path])]
            if was[0] != was[1]:
                return was[0]
        return time_order(mine.created_at) < time_order(theirs.created_at)

    def _held(self, memory: Memory) -> set[str]:
        """The remote-tracking branches' commits holding the memory's id, whatever its text now (an
        earlier fold gave it the earlier ``created_at``, an update changed its text; ids never
        collide on one remote: leases, the checks of named ids)."""
        tips = self._tips
        held = blobs_at(self.store, [(tip, memory_path(memory.id)) for tip in tips])
        return {tip for tip, text in zip(tips, held, strict=True) if text is not None}


def fold_topic_keys(kb: Context, tx: Transaction, ours: list[str], merged: dict[str, str],
                    catch_up: Callable[[], None], standing: Standing | None = None, brought: set[str] | None = None,
                    followed: dict[str, dict[str, str]] | None = None,
                    ready: Callable[[], None] | None = None) -> bool:
    """Fold each of ``ours`` (the memories this branch adds) whose topic key another memory
    holds into the oldest such memory, or that memory into it where ``standing`` keeps this
    branch's (None: never); True when it made the commit, the moves added to ``merged``.
    ``brought``: those of ``ours`` a merge's other side brought (a sync after a plain ``git
    merge``), each folded with one not among them, the rest with one not among the rest.
    ``catch_up`` brings the index, which finds a key's holders, up to date: called only for a
    memory that has a key. ``followed``: given each memory folded again whose fields both hold two
    ways (``_fold_again``), change ``refolded``, with the fields and the ``git show`` of the
    memory kept before. ``ready``: called before the fold's commit, which it may refuse."""
    brought = brought or set()
    folds: dict[str, Memory] = {}
    changes: list[Change] = []
    for memory_id in ours:
        with contextlib.suppress(KBError):
            mine = kb.read(memory_id)
            if not mine.topic_key or mine.is_deleted or memory_id in folds or any(m.id == memory_id for m in folds.values()):
                continue  # folded already, with one of the other side's
            catch_up()
            side = brought if memory_id in brought else set(ours) - brought
            theirs = [m for m in tx.live(topic_key=mine.topic_key, project=mine.project, scope=mine.scope)
                      if m.id != memory_id and m.id not in side]
            if not theirs:
                continue
            keeper = min(theirs, key=lambda m: time_order(m.created_at))
            # One record of an export imported on both clones: revised since from that record (its
            # counts once), not two saves (None: the counts of both summed).
            again = _fold_again(kb.store, mine, keeper)
            folded = again[0] if again else merge_topic_revisions(_imported_record(kb, mine, keeper), keeper, mine)
            # Kept the other way round, the same memory (content, counts) under this branch's id.
            gone, folded = ((keeper.id, folded.evolve(id=memory_id)) if standing is not None
                            and standing.keeps_mine(mine, keeper) else (memory_id, folded))
            if again and again[1] and followed is not None:
                # Said, not silent: the memory kept held those fields another way, the fold's parent shows how.
                followed[gone] = _refolded(kb.store, folded.id, again[1])
            folds[gone] = folded
            changes += [memory_change(folded), Change(memory_path(gone), None)]
    if not folds:
        return False
    if ready is not None:
        ready()
    keys = ", ".join(sorted({m.topic_key or "" for m in folds.values()}))
    _commit(tx, folds, changes, f"topic {keys}", merged)
    return True


def _refolded(store: GitStore, kept: str, fields: list[str]) -> dict[str, str]:
    """``followed``'s entry of a memory folded again into ``kept`` whose ``fields`` both held two
    ways: the ``git show`` of ``kept`` as HEAD holds it before the fold's commit."""
    path = store.repo_path(memory_path(kept))
    return {"kept": kept, "change": "refolded", "fields": ", ".join(fields),
            "edit": f"git show {(store.head() or '')[:12]}:{path}", "folded_on": "this branch"}


def _fold_again(store: GitStore, mine: Memory, keeper: Memory) -> tuple[Memory, list[str]] | None:
    """Under ``keeper``'s id, the memory ``mine`` and ``keeper`` make where an earlier fold took one
    into the other and it came back since (a plain ``git merge`` of an edit of it, kept by hand):
    each field it changed since the version that fold took in carried (``merging.carry_through_fold``;
    a field both hold two ways the returning one's, as a later save under the key), the others
    the memory kept's, and only the revisions the memory kept does not hold already counted; with
    the fields both hold two ways, for the reply to name. None when no fold took one into the other."""
    subjects = store.git("log", "--format=%H %s", "--grep=^memory: merge ", "HEAD").stdout.decode("utf-8", "replace")
    for line in subjects.splitlines():
        commit, _, subject = line.partition(" ")
        moves = (folded_by(subject) or ({}, False))[0]
        for back, holder in ((mine, keeper), (keeper, mine)):
            if moves.get(back.id) != holder.id:
                continue
            path = store.repo_path(memory_path(back.id))
            blob = store.objects.blobs_at(store.objects.tree_of(f"{commit}^1"), [path])[path]
            if blob is None:
                return None
            base = loads(store.objects.read_many("blob", [blob])[blob].decode("utf-8", "replace"), back.id)
            safe, every = carry_through_fold(base, holder, back)
            both = [name for name in sorted(FIELD_NAMES - {"revision_count", "updated_at"})
                    if getattr(safe, name) != getattr(every, name)]
            return every.evolve(id=keeper.id), both
    return None


def fold_duplicates(kb: Context, tx: Transaction, ours: list[str], theirs: Callable[[], list[str]],
                    deduplicated: dict[str, str], standing: Standing | None = None) -> bool:
    """Fold each of ``ours`` that repeats a memory the other side added since the sides parted
    (``theirs``, asked only for a memory that may repeat one: a save the other side held before
    would have been counted as a duplicate here) into the oldest such memory, as one clone's save
    would have counted a duplicate there: no topic key, the same title, type, text, project,
    scope, session, links and description, saved within the de-duplication window of it and not edited
    since (a fold keeps only one of the two), or that memory into it where ``standing``
    keeps this branch's (None: never). True when it made the commit, the moves added to
    ``deduplicated``."""
    folds: dict[str, Memory] = {}
    kept: dict[str, Memory] = {}  # the memories kept so far, as folded, by id
    changes: list[Change] = []
    added: list[Memory] | None = None
    for memory_id in ours:
        with contextlib.suppress(KBError):
            mine = kb.read(memory_id)
            if mine.topic_key or mine.is_deleted:
                continue
            if added is None:
                added = _live(kb, theirs())
            if imported := [m for m in added if mine.evolve(id=m.id) == m == _imported_record(kb, mine, m)]:
                # One record of an export imported on both clones (its updated_at the export's) and
                # left as it was: its count once, as the import on one clone would skip it the
                # second time (a duplicate counted since and not committed goes with it).
                oldest = min(imported, key=lambda m: time_order(m.created_at))
                _fold(mine, oldest, lambda keeper, _folded: keeper, kept, folds, changes, standing)
                continue
            if not mine.title or mine.updated_at:
                # A key is folded by key; a memory with no title is SLayer's, never de-duplicated;
                # one edited since its save is no longer that save (its edit would be dropped).
                continue
            made, same = parse_time(mine.created_at), _save_of(mine)
            twins = [m for m in added if not m.topic_key and _save_of(m) == same
                     and abs(parse_time(m.created_at) - made) <= kb.dedup_window]
            if not twins:
                continue
            oldest = min(twins, key=lambda m: time_order(m.created_at))
            _fold(mine, oldest, _counted, kept, folds, changes, standing)
    if not folds:
        return False
    changes += [memory_change(m) for m in kept.values()]
    _commit(tx, {old: kept[m.id] for old, m in folds.items()}, changes, "same save", deduplicated)
    return True


def _fold(mine: Memory, oldest: Memory, joined: Callable[[Memory, Memory], Memory], kept: dict[str, Memory],
          folds: dict[str, Memory], changes: list[Change], standing: Standing | None) -> None:
    """Fold ``mine`` into ``oldest`` (the other side's), or ``oldest`` into ``mine`` where
    ``standing`` keeps this branch's: ``joined`` makes the kept memory of the one kept and the
    one folded (the counts). One of the other side's memories ``kept`` already (another of this
    branch's folded into it) stays kept; one folded away already takes in no more."""
    if oldest.id in folds:
        return
    keeper = kept.get(oldest.id)
    if keeper is None and standing is not None and standing.keeps_mine(mine, oldest):
        kept[mine.id] = folds[oldest.id] = joined(mine, oldest)
        changes.append(Change(memory_path(oldest.id), None))
        return
    keeper = keeper or oldest
    kept[keeper.id] = folds[mine.id] = joined(keeper, mine)
    changes.append(Change(memory_path(mine.id), None))


def _counted(keeper: Memory, folded: Memory) -> Memory:
    """``keeper`` counting ``folded``'s saves as duplicates of its own."""
    return keeper.evolve(duplicate_count=(keeper.duplicate_count or 1) + (folded.duplicate_count or 1))


def _imported_record(kb: Context, mine: Memory, theirs: Memory) -> Memory | None:
    """The record of an Engram export both ``mine`` and ``theirs`` were imported from (each added
    by an ``import-engram`` commit, the two versions alike but for the id), under ``theirs``'s id;
    None when they are not one import (two saves, or two records)."""
    def kept(m: Memory) -> tuple[object, ...]:  # what a revision keeps: a look before asking git
        return m.created_at, m.project, m.scope, m.topic_key

    if kept(mine) != kept(theirs):
        return None
    added = [added_version(kb.store, memory_path(m.id)) for m in (mine, theirs)]
    if any(version is None or not is_import(version[0]) for version in added):
        return None
    records = [loads(version[1], m.id).evolve(id=theirs.id)
               for version, m in zip(added, (mine, theirs), strict=True) if version is not None]
    return records[0] if records[0] == records[1] else None


def _save_of(memory: Memory) -> tuple[object, ...]:
    """What two saves share when they are one save made twice."""
    return (memory.title, memory.type, memory.project, memory.scope, memory.session_id, sorted(memory.entities),
            memory.description, content_hash(memory.learning))


def _live(kb: Context, ids: list[str]) -> list[Memory]:
    out = []
    for memory_id in ids:
        with contextlib.suppress(KBError):
            if not (memory := kb.read(memory_id)).is_deleted:
                out.append(memory)
    return out


def carry_dropped(store: GitStore, tx: Transaction, parted: str, upstream: tuple[str, str], ours: str,
                  dropped: list[str], followed: dict[str, dict[str, str]], held: list[str]) -> list[str]:
    """Of ``dropped`` (memories this branch, at ``ours``, edited since ``parted`` that a sync's
    replay onto the upstream, ``upstream``: its commit and name, dropped as gone there) and of
    ``held`` (those the replay kept, an edit later than the upstream's delete), those the
    upstream folded into another memory (``folded_to``): no forget, so the edit is carried
    onto the memory kept, field by field from the folded one's version at ``parted``
    (``mergedriver.carried``), and a held one's file goes, in one commit, ``followed`` given each
    as ``follow_folds`` gives it (a soft forget as a forget: the memory kept stays); one
    whose edit changed a field the memory kept holds another way is given as ``dropped`` with the
    ``git show`` of the edit (a held one's file gone too: the fold stands). The rest of
    ``dropped`` are returned, for sync to say forgotten there."""
    moved = {old: new for old, new in folded_to(store, parted, upstream[0]).items()
             if old in dropped or old in held} if dropped or held else {}
    changes: list[Change] = []
    kept: dict[str, Memory] = {}
    objects = store.objects
    lost: list[str] = []
    refolded: dict[str, str] = {}  # the held files this commit deletes: folded again
    for old, new in moved.items():
        path, folded = store.repo_path(memory_path(new)), store.repo_path(memory_path(old))
        base, now, edit = (objects.blobs_at(objects.tree_of(rev), [at])[at]
                           for rev, at in ((parted, folded), ("HEAD", path), (ours, folded)))
        if base is None or now is None or edit is None:
            continue
        carry = carried_upserts(store, parted, (upstream[0], new), (ours, old), path, (base, now, edit))
        if old in held:
            changes.append(Change(memory_path(old), None))
            refolded[old] = new
        if carry is None or carry.kept != carry.edited:
            # A field both changed: the edit dropped, said with where git holds it (not as a forget).
            lost.append(old)
            followed[old] = {"kept": new, "change": "dropped", "folded_on": upstream[1],
                             "edit": f"git show {ours[:12]}:{folded}"}
            continue
        followed[old] = {"kept": new, "change": "forgot" if carry.forgot else "edited", "folded_on": upstream[1]}
        if carry.forgot or carry.kept == now:  # the memory kept stays as it is, or holds the edit already
            continue
        data = store.objects.read_many("blob", [carry.kept])[carry.kept]
        with contextlib.suppress(KBError, UnicodeDecodeError):
            kept[new] = loads(data.decode("utf-8"), new)
            changes.append(Change(memory_path(new), data))
    if changes:
        carried = [old for old in moved if old in followed and old not in lost]
        # A held file deleted is its fold made again: its line in the body is the record ``get`` reads.
        record = f"\n\n{fold_subject(refolded, _fold_why(tx, set(refolded.values())))}" if refolded else ""
        tx.commit(changes, f"memory: {'carry' if carried else 'drop'} the edit of {', '.join(carried or lost)} to "
                  f"{', '.join(sorted({moved[old] for old in carried or lost}))}, which {upstream[1]} merged it into"
                  f"{record}", kept)
    return [memory_id for memory_id in dropped if memory_id not in followed]


def _fold_why(tx: Transaction, kept: set[str]) -> str:
    """A fold subject's reason for the memories ``kept`` as HEAD holds them: their topic keys, or
    "same save" where none has one."""
    keys = {memory.topic_key for memory, _text in tx.committed(kept) if memory.topic_key}
    return f"topic {', '.join(sorted(keys))}" if keys else "same save"


def forgotten_folded(store: GitStore, parted: str, upstream: tuple[str, str], ours: str, both: list[str],
                     followed: dict[str, dict[str, str]]) -> None:
    """Give ``followed`` each memory this branch (at ``ours``) forgot (or soft-forgot) since ``parted`` that the
    upstream (``upstream``: its commit and name) had folded into another memory, which HEAD still
    holds: the forget took the memory kept away no more than ``slayer-kb merge`` lets it
    (``follow_folds``), and is said as that merge says it. Looked for among ``both``, the
    files both sides changed (a fold deletes the file too): no git process where none is a memory's."""
    objects = store.objects
    ids = {i for path in both if (i := id_of_path(path)) is not None}
    moved = {old: new for old, new in folded_to(store, parted, upstream[0]).items() if old in ids} if ids else {}
    if moved:  # a fold both sides made (two reviewers' merges of one branch) is no forget of this branch's
        moved = {old: new for old, new in moved.items() if old not in folded_to(store, parted, ours)}
    if not moved:
        return
    paths = [store.repo_path(memory_path(old)) for old in moved]
    ours_held, was = (objects.blobs_at(objects.tree_of(rev), paths) for rev in (ours, parted))
    # Its file deleted, or the memory soft-forgotten (``forget --soft``, MCP's ``mem_delete``).
    moved = {old: new for old, new in moved.items() if _forgot(store, store.repo_path(memory_path(old)), was, ours_held)}
    held = objects.blobs_at(objects.tree_of("HEAD"), [store.repo_path(memory_path(new)) for new in moved.values()])
    for old, new in moved.items():
        if held[store.repo_path(memory_path(new))] is not None and old not in followed:
            followed[old] = {"kept": new, "change": "forgot", "folded_on": upstream[1]}


def _forgot(store: GitStore, path: str, was: dict[str, str | None], now: dict[str, str | None]) -> bool:
    """Whether the memory file ``path`` is gone in ``now`` (blobs by path) or soft-forgotten since ``was``."""
    before, after = was[path], now[path]
    if after is None or before is None or before == after:
        return after is None
    got = store.objects.read_many("blob", {before, after})
    return mergedriver.soft_forgotten(path, got[before].decode("utf-8", "replace"), got[after].decode("utf-8", "replace"))


def fold_renamed(kb: Context, tx: Transaction, moved: dict[str, str]) -> None:
    """One fold's commit of each id of ``moved`` into the memory it maps to, which holds its
    content already: the other side's new id of a memory this branch had folded away, renamed
    there since (``follow_folds``). A fold, not a forget: links to it follow
    (``unlinks.py``), and ``get`` of it says where it went."""
    if not moved:
        return
    kb.reread()
    folds = {old: kb.read(new) for old, new in moved.items()}
    keys = sorted({m.topic_key for m in folds.values() if m.topic_key})
    _commit(tx, folds, [Change(memory_path(old), None) for old in moved], f"topic {', '.join(keys)}" if keys
            else "same save", {})


def _commit(tx: Transaction, folds: dict[str, Memory], changes: list[Change], why: str,
            moved: dict[str, str]) -> None:
    """One commit of ``folds`` (this branch's id -> the memory it is folded into) and ``changes``,
    ``memory:`` references to the folded ids rewritten; the moves added to ``moved``."""
    mapping = {old: m.id for old, m in folds.items()}
    for other_id, _memory, text in tx.referrers([memory_link(old) for old in mapping]):
        if other_id not in mapping:
            new_text = renumbered_text(other_id, text, mapping)
            if new_text is not None:
                changes.append(Change(memory_path(other_id), new_text.encode("utf-8")))
    tx.commit(changes, fold_subject(mapping, why), {m.id: m for m in folds.values()})
    moved.update(mapping)


def own_moves(store: GitStore, others: str | list[str], moves: dict[str, str]) -> dict[str, str]:
    """Of ``moves`` (a fold's, made against the other side's commit ``others``, or several), those
    of this branch's memories, which the caller records as this clone's moves: one of the other
    side's folded into this branch's (``Standing`` kept it) moved no id this clone gave, and
    ``get`` of it names the fold's commit; nor one no commit of this branch's own line added. In
    ``slayer-kb merge``, ``rebase`` and sync alike."""
    paths = {old: store.repo_path(memory_path(old)) for old in moves}
    held = [store.objects.blobs_at(store.objects.tree_of(other), paths.values())
            for other in ([others] if isinstance(others, str) else others)] if moves else []
    moves = {old: new for old, new in moves.items() if all(there[paths[old]] is None for there in held)}
    if not moves:
        return moves
    # Nor one another branch gave: added by a merge (its other parent brought it) or by a commit
    # another remote branch than this branch's upstream holds (a fast-forward brought it, as an
    # agent's 'merge origin/agent-x' brings that agent's memory).
    out = store.git("log", "--first-parent", "--diff-filter=A", "--name-only", "--format=%x00%H %P", "HEAD", "--",
                    *(paths[old] for old in moves), env=LITERAL_PATHS).stdout.decode("utf-8", "surrogateescape")
    adds: dict[str, list[str]] = {}
    for entry in out.split("\0")[1:]:
        head, *names = entry.strip("\n").split("\n")
        for name in names:
            adds.setdefault(name, head.split())
    mine = {_upstream_ref(store)} | _symbolic(store)
    return {old: new for old, new in moves.items() if (add := adds.get(paths[old])) is not None and len(add) == 2
            and not (set(store.git("for-each-ref", "--contains", add[0], "--format=%(refname)",
                                   "refs/remotes/").stdout.decode().split()) - mine)}


def _upstream_ref(store: GitStore) -> str:
    """The full name of the branch's upstream (``refs/remotes/origin/agent-y``), '' for none."""
    return store.git("rev-parse", "-q", "--symbolic-full-name", "@{upstream}", check=False).stdout.decode().strip()


def _symbolic(store: GitStore) -> set[str]:
    """The remote-tracking refs that only name another (``origin/HEAD``)."""
    out = store.git("for-each-ref", "--format=%(refname) %(symref)", "refs/remotes/").stdout.decode().splitlines()
    return {line.split()[0] for line in out if len(line.split()) == 2}


def upserted(store: GitStore, parted: str, side: str, memory_id: str) -> bool:
    """Whether ``side``'s last change since ``parted`` of ``memory_id``'s file is a save under its
    topic key (``memory: revise 27 (topic ...)``, Engram's upsert) or a fold of another save of
    the key into it (``memory: merge 301 into 27 (topic ...)``), not an edit by id or by hand:
    two upserts meeting through a fold are the newer one's, as the saves would be one after the
    other; two edits are a person's to weigh."""
    subject = store.git("log", "-1", "--format=%s", side, "--not", parted, "--", store.repo_path(memory_path(memory_id)),
                        env=LITERAL_PATHS).stdout.decode("utf-8", "replace").strip()
    fold = folded_by(subject)
    return subject.startswith(f"memory: revise {memory_id} (topic ") or (
        fold is not None and not fold[1] and memory_id in fold[0].values())


def carried_upserts(store: GitStore, parted: str, kept: tuple[str, str], edit: tuple[str, str], path: str,
                    blobs: tuple[str, str, str]) -> mergedriver.Carried | None:
    """``mergedriver.carried`` of ``blobs`` at ``path``, the newer save's fields where both
    sides (``kept``: the folding side's commit and the id kept; ``edit``: the other side's and
    the folded id there) last revised the memory by an upsert and hold a field two ways."""
    carry = mergedriver.carried(store, path, blobs)
    if carry is not None and carry.kept != carry.edited and all(
            upserted(store, parted, side, memory_id) for side, memory_id in (kept, edit)):
        return mergedriver.carried(store, path, blobs, upserts=True)
    return carry


def folds_into(store: GitStore, parted: str, side: str) -> dict[str, set[str]]:
    """The ids each memory took in by a fold's commit between ``parted`` and ``side``."""
    into: dict[str, set[str]] = {}
    for moves in fold_moves(store, parted, side):
        for gone, kept in moves.items():
            into.setdefault(kept, set()).add(gone)
    return into


def recount(kb: Context, tx: Transaction, sides: tuple[str, str, str], paths: list[str]) -> None:
    """Make sure every revision of a topic-key memory both sides changed (``paths``) is counted
    once: the count of (where they parted, the upstream, this branch before the rebase), as
    ``merge_topic_revisions`` sums them. The driver sums each commit it replays, but git never asks
    it when both sides made the very same file (two clones folding their memories into an upstream
    one alike), and takes one side's count for both: one commit puts the missing revisions back.
    Where both sides folded one memory into it and then differ (two reviewers' ``slayer-kb merge``
    of one branch, an edit of the folded memory carried by one between), the driver summed what
    each fold took in: the folded memory's revisions both took in (``_taken_in_both``) count once,
    never fewer than either side holds. Sync's, after its rebase or merge."""
    store = kb.store
    changes: list[Change] = []
    fixed: dict[str, Memory] = {}
    memories = [(path, memory_id) for path in paths if (memory_id := id_of_path(path)) is not None]
    found = iter(blobs_at(store, [(rev, path) for path, _ in memories for rev in sides]) if memories else [])
    folds: list[dict[str, set[str]]] | None = None
    for _path, memory_id in memories:
        texts = [next(found) for _ in sides]
        if texts[1] is None or texts[2] is None:
            continue
        folds = folds if folds is not None else [folds_into(store, sides[0], side) for side in sides[1:]]
        shared = folds[0].get(memory_id, set()) & folds[1].get(memory_id, set())
        # The same file on both sides may be one fold made on both: its revisions counted once, not twice.
        if texts[1] == texts[2] and folds[0].get(memory_id) and folds[0].get(memory_id) == folds[1].get(memory_id):
            continue
        with contextlib.suppress(KBError):
            upstream, ours = (loads(text.decode("utf-8"), memory_id) for text in texts[1:] if text is not None)
            now = kb.read(memory_id)
            if not (upstream.topic_key and upstream.topic_key == ours.topic_key == now.topic_key):
                continue
            count = now.revision_count or 1
            if texts[0] is not None:  # none where a criss-cross merge's first base lacks it
                count = max(count, merge_topic_revisions(loads(texts[0].decode("utf-8"), memory_id), upstream,
                                                         ours).revision_count or 1)
            if texts[1] != texts[2] and shared:
                count = max(count - _taken_in_both(store, sides[1:], shared), upstream.revision_count or 1,
                            ours.revision_count or 1)
            if count != (now.revision_count or 1):
                fixed[memory_id] = now.evolve(revision_count=count)
                changes.append(memory_change(fixed[memory_id]))
    if changes:
        tx.commit(changes, f"memory: count both sides' revisions of {', '.join(fixed)}", fixed)


def _taken_in_both(store: GitStore, tips: tuple[str, ...], folded: set[str]) -> int:
    """The revisions of the ``folded`` memories both ``tips`` took in: each memory's count in the
    newest version of it either tip's history holds (through any merge: an edit one side carried
    into the memory kept is in the branch it merged), the lower of the two."""
    total = 0
    for memory_id in sorted(folded):
        path = store.repo_path(memory_path(memory_id))
        counts = []
        for tip in tips:
            last = store.git("log", "-1", "--full-history", "--format=%H", "--diff-filter=AM", tip, "--", path,
                             env=LITERAL_PATHS).stdout.decode().strip()
            blob = store.objects.blobs_at(store.objects.tree_of(last), [path])[path] if last else None
            with contextlib.suppress(KBError, UnicodeDecodeError):
                text = store.objects.read_many("blob", [blob])[blob].decode("utf-8") if blob else ""
                counts.append(loads(text, memory_id).revision_count or 1 if text else 0)
        total += min(counts, default=0)
    return total
