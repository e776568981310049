"""``sync``: pull, merge what git cannot, revalidate, reindex, push; retried under contention.

fetch, then a rebase of this branch's commits onto the upstream. With leased ids
(``store/leases.py``) two clones never add the same file, so the rebase meets only files both
sides changed, which git merges with the KB's merge driver (``store/mergedriver.py``):

- **session files** both sides wrote (Engram's default session of a new project, above all):
  merged (``core/merging.py``: the union of prompts, the earliest start, the latest end);
- **topic-key memories** both sides revised: the newest content, both sides' revisions counted
  (a line merge would take a ``revision_count`` both sides raised alike as one revision);
- **two edits of one memory**: git's line merge; a conflict is a true one, which a person
  resolves (the error names the files and steps that work as written).

After the rebase, a topic key this branch saved first while the upstream saved it too is folded
into the upstream's memory (one memory per key, the revisions summed, the other kept in git's
history). Ids allocated before leases (or with ``slayer-kb.ids sequential``) that the upstream
used for other memories are renumbered first (``renumber.py``). Both kinds of move are recorded
(``store/moves.py``): a command on a moved id refuses and names both memories.

A push refused because others pushed first is retried (pull again, push again) with jittered,
growing waits. Whenever sync cannot finish it puts the branch, index and work tree back exactly
where they were and says how to go on.
"""

from __future__ import annotations

import contextlib
import random
import time
from typing import TYPE_CHECKING

from ..core.errors import ConflictError, InvalidInputError, KBError, StoreError
from ..core.locate import MEMORIES_DIR, id_of_path, memory_path
from ..core.memory import Memory, loads
from ..core.merging import merge_topic_revisions
from ..core.results import SyncResult
from ..core.session import SESSIONS_DIR
from ..store import mergedriver
from ..store.replay import replay
from ..store.repo import Change, GitStore
from ..transaction import Transaction, memory_change
from .history import blobs_at
from .renumber import plan, renumbered_text, require_clean, rewrite_commits
from .validate import validate

if TYPE_CHECKING:
    from ..context import Context

PUSH_ATTEMPTS = 30
# The wait after the n-th refused push (n from 1): uniform in [0, BACKOFF_WINDOW / n]. Random,
# so clones that collided spread out instead of colliding again in step; shorter the more often
# this sync was refused, so the clone that has waited longest is the first back at the remote
# (a growing wait would favour the newcomers, which push without waiting, and starve it).
BACKOFF_WINDOW = 0.6
_JITTER = random.Random()  # noqa: S311 (spreads clones out; nothing secret)


def backoff(refused: int, rng: random.Random) -> float:
    """Seconds to wait after this sync's ``refused``-th refused push."""
    return rng.uniform(0, BACKOFF_WINDOW / refused)


def sync(kb: Context, remote: str = "origin") -> SyncResult:
    """Pull (rebase), merge, revalidate, reindex and push (see the module doc)."""
    branch = _branch(kb.store)
    # The config as the leases keep it (read again only when the file changed): a long-lived
    # server's sync asks git nothing before the fetch.
    if kb.git_setting(f"remote.{remote}.url") is None:
        raise InvalidInputError(
            f"No git remote named '{remote}'; add one (git remote add {remote} URL) or pass --remote."
        )
    upstream_branch = _upstream_branch(kb, branch, remote)
    tracking = f"refs/remotes/{remote}/{upstream_branch}"
    result = SyncResult(remote, branch)
    head = _fetched(kb.store, remote, upstream_branch, tracking)
    if head is not None and head == _tip(kb.store, tracking):
        # Nothing to pull or push: no lock, no index check (a team syncs often).
        result.head = head
        _top_up(kb)
        return result
    with kb.transaction() as tx:
        require_clean(tx.store)
        start = tx.head()
        if start is None:
            raise InvalidInputError("The repository has no commit yet; save a memory first.")
        try:
            for attempt in range(PUSH_ATTEMPTS):
                result.attempts = attempt + 1
                if attempt:
                    _fetch(tx.store, remote, upstream_branch, tracking)
                _pull(kb, tx, remote, upstream_branch, tracking, result)
                if _push(tx.store, remote, upstream_branch, tracking, result):
                    break
                time.sleep(backoff(attempt + 1, _JITTER))
            else:
                raise ConflictError(
                    f"The push to {remote} was refused {PUSH_ATTEMPTS} times (others keep pushing); "
                    "the repository is back as it was. Run 'slayer-kb sync' again."
                )
        except BaseException:
            _put_back(tx.store, start)
            kb.reread()
            raise
        result.head = tx.head()
        kb.record_moves(result.renumbered, "renumbered")
        kb.record_moves(result.merged, "merged")
    _top_up(kb)
    return result


def _top_up(kb: Context) -> None:
    """Ids for the saves that follow, while the remote is at hand (never fails the sync)."""
    with contextlib.suppress(KBError):
        kb.top_up_leases()


def _branch(store: GitStore) -> str:
    """The branch checked out (refused when HEAD is detached)."""
    branch = store.git("symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.decode().strip()
    if not branch:
        raise InvalidInputError("HEAD is detached; check out a branch (git switch NAME) before syncing.")
    return branch


def _fetched(store: GitStore, remote: str, upstream_branch: str, tracking: str) -> str | None:
    """HEAD, once the upstream is fetched (refused while a rebase or merge is not concluded)."""
    store.refuse_during_git_operation()
    _fetch(store, remote, upstream_branch, tracking)
    return store.head()


def _fetch(store: GitStore, remote: str, upstream_branch: str, tracking: str) -> None:
    store.git("fetch", "-q", remote, f"+refs/heads/{upstream_branch}:{tracking}", check=False)


def _tip(store: GitStore, ref: str) -> str:
    return store.git("rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False).stdout.decode().strip()


def _upstream_branch(kb: Context, branch: str, remote: str) -> str:
    configured_remote, merge = kb.git_setting(f"branch.{branch}.remote"), kb.git_setting(f"branch.{branch}.merge") or ""
    if configured_remote == remote and merge.startswith("refs/heads/"):
        return merge[len("refs/heads/"):]
    return branch


def _pull(kb: Context, tx: Transaction, remote: str, upstream_branch: str, tracking: str,
          result: SyncResult) -> None:
    """Bring the fetched upstream in (nothing to do when the remote has no such branch yet)."""
    upstream = _tip(tx.store, tracking)
    if not upstream:
        return
    head = tx.head()
    assert head is not None
    # One merge-base tells all three cases: up to date, fast-forward, diverged (and from where).
    parted = _merge_base(tx.store, upstream, head)
    if parted == upstream:
        return
    before = head
    if parted == head:
        _fast_forward(tx.store, upstream)
        result.action = "fast-forward"
        _reindex(kb, before)
    else:
        base, mapping = plan(kb, upstream)
        if mapping:
            _move_to(tx.store, rewrite_commits(tx.store, base, mapping))
            compose(result.renumbered, mapping)
        ours = tx.head()
        assert ours is not None
        if mapping:  # renumbered commits: where they part from the upstream, asked again
            parted = _merge_base(tx.store, upstream, ours)
        both = _changed_on_both_sides(tx.store, parted, upstream) if parted else []
        tip = replay(tx.store, upstream, ours)
        if tip is None:
            _rebase(tx.store, remote, upstream_branch, upstream, bool(mapping))
        else:
            _move_to(tx.store, tip)
        result.resolved += [path for path in both if path not in result.resolved]
        result.action = "rebased"
        _reindex(kb, before)
        if parted:
            _recount(kb, tx, (parted, upstream, ours), both)
        _fold_topic_keys(kb, tx, upstream, result)
    result.pulled += _commits_between(tx.store, before, upstream)
    _revalidate(kb, upstream)


def _merge_base(store: GitStore, one: str, other: str) -> str:
    """Where the two commits parted ("" when they share no history)."""
    return store.git("merge-base", one, other, check=False).stdout.decode().strip()


def _move_to(store: GitStore, commit: str) -> None:
    """The branch and its files to ``commit`` (a reset that keeps uncommitted changes)."""
    store.git("reset", "-q", "--keep", commit)


def _fast_forward(store: GitStore, commit: str) -> None:
    store.git("merge", "-q", "--ff-only", commit)


def _commits_between(store: GitStore, before: str, after: str) -> int:
    return int(store.git("rev-list", "--count", f"{before}..{after}").stdout.decode().strip() or 0)


def _reindex(kb: Context, before: str) -> None:
    """Bring the index, which described the files at ``before``, to HEAD: only the memory files
    that changed in between are re-read (a full freshness pass stats every file, on every push
    attempt). A changed catalog file (anything else but sessions, which the index does not hold)
    takes the full pass, which also re-reads the catalog."""
    ids = [id_of_path(path) for path in _changed(kb.store, before, "HEAD") if not path.startswith(f"{SESSIONS_DIR}/")]
    kb.reread(None if None in ids else [i for i in ids if i is not None])


def _changed(store: GitStore, before: str, after: str, folder: str = "", only: str | None = None) -> list[str]:
    """The KB's files (KB-relative) that changed from ``before`` to ``after``, under ``folder``;
    with ``only``, just those git's ``--diff-filter`` letters take (``A``: added)."""
    out = store.git("diff", "--name-only", "-z", "--no-renames", *([f"--diff-filter={only}"] if only else []),
                    before, after, "--", store.repo_path(folder) if folder else store.prefix or ".").stdout
    return [p.decode("utf-8", "surrogateescape")[len(store.prefix):] for p in out.split(b"\0") if p]


def compose(known: dict[str, str], mapping: dict[str, str]) -> None:
    """Add ``mapping`` to ``known`` as a map from each original id to its final id: a memory
    renumbered twice (27 -> 28 on one attempt, 28 -> 29 on the next) is 27 -> 29."""
    chained = {new: old for old, new in known.items()}
    for old, new in mapping.items():
        known[chained.get(old, old)] = new


def _rebase(store: GitStore, remote: str, upstream_branch: str, upstream: str, renumbered: bool) -> None:
    """Rebase onto ``upstream`` with the KB's merge driver (``store/mergedriver.py``: session files
    and topic-key memories both sides wrote are merged as records); a conflict it leaves (two
    edits of one memory) aborts the rebase and raises."""
    options, env, attributes = mergedriver.git_config(store.prefix)
    try:
        proc = store.git(*options, "-c", "core.editor=true", "rebase", "-q", upstream, check=False, env=env)
        while proc.returncode != 0:
            unmerged = _unmerged(store)
            if unmerged:
                store.git("rebase", "--abort", check=False)
                raise ConflictError(_conflict_message(store, unmerged, remote, upstream_branch, renumbered))
            if store.git("diff", "--cached", "--quiet", check=False).returncode or not _rebasing(store):
                raise StoreError(f"git rebase failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
            # Our commit became empty once merged (the upstream had the same change): drop it.
            proc = store.git(*options, "-c", "core.editor=true", "rebase", "--skip", check=False, env=env)
    finally:
        attributes.unlink(missing_ok=True)


def _recount(kb: Context, tx: Transaction, sides: tuple[str, str, str], paths: list[str]) -> None:
    """Make sure every revision of a topic-key memory both sides changed is counted: the count
    of (where they parted, the upstream, this branch before the rebase), as ``merge_topic_revisions``
    sums them. The driver sums each commit it replays, but git never asks it when both sides made
    the very same file (two clones folding their memories into an upstream one alike), and takes
    one side's count for both; one commit puts the missing revisions back."""
    changes: list[Change] = []
    fixed: dict[str, Memory] = {}
    memories = [(path, memory_id) for path in paths if (memory_id := id_of_path(path)) is not None]
    found = iter(blobs_at(tx.store, [(rev, path) for path, _ in memories for rev in sides]) if memories else [])
    for _path, memory_id in memories:
        texts = [next(found) for _ in sides]
        if any(text is None for text in texts):
            continue
        with contextlib.suppress(KBError):
            parted, upstream, ours = (loads(text.decode("utf-8"), memory_id) for text in texts if text is not None)
            now = kb.read(memory_id)
            if not (upstream.topic_key and upstream.topic_key == ours.topic_key == now.topic_key):
                continue
            wanted = merge_topic_revisions(parted, upstream, ours)
            if (now.revision_count or 1) < (wanted.revision_count or 1):
                fixed[memory_id] = now.evolve(revision_count=wanted.revision_count)
                changes.append(memory_change(fixed[memory_id]))
    if changes:
        tx.commit(changes, f"memory: count both sides' revisions of {', '.join(fixed)}", fixed)


def _changed_on_both_sides(store: GitStore, base: str, upstream: str) -> list[str]:
    """The KB's memory and session files (KB-relative) that both this branch and ``upstream``
    changed since they parted at ``base``: the ones git merges, with the KB's driver."""
    folders = [store.repo_path(f"{MEMORIES_DIR}/"), store.repo_path(f"{SESSIONS_DIR}/")]

    def changed(tip: str) -> set[str]:
        out = store.git("diff", "--name-only", "-z", "--no-renames", base, tip, "--", *folders).stdout
        return {p.decode("utf-8", "surrogateescape")[len(store.prefix):] for p in out.split(b"\0") if p}

    return sorted(changed(upstream) & changed("HEAD"))


def _rebasing(store: GitStore) -> bool:
    git_dir = store.git_dirs()[0]
    return any((git_dir / name).exists() for name in ("rebase-merge", "rebase-apply"))


def _unmerged(store: GitStore) -> list[str]:
    """The unmerged paths (repository-relative)."""
    out = store.git("diff", "--name-only", "-z", "--diff-filter=U").stdout.decode("utf-8", "surrogateescape")
    return sorted(set(filter(None, out.split("\0"))))


def _conflict_message(store: GitStore, paths: list[str], remote: str, upstream_branch: str, renumbered: bool) -> str:
    files = ", ".join(p[len(store.prefix):] for p in paths)
    steps = [f"git fetch {remote}"]
    if renumbered:
        # A plain 'git pull --rebase' would skip the renumbering and stop on two different
        # memories with one id; renumbering first makes the rebase meet only the real conflict.
        steps.append(f"slayer-kb renumber --onto {remote}/{upstream_branch} --rewrite")
    steps += [f"git rebase {remote}/{upstream_branch}", f"edit {files} to keep what both sides meant",
              f"git add {' '.join(paths)}", "slayer-kb validate", "git rebase --continue", "slayer-kb sync"]
    return (f"Your commits and {remote}/{upstream_branch} both edited {files}; the repository is back as "
            "it was. To merge by hand: " + "; ".join(steps) + ".")


def _fold_topic_keys(kb: Context, tx: Transaction, upstream: str, result: SyncResult) -> None:
    """One memory per topic key: a key this branch saved first while the upstream saved it too
    is folded into the upstream's memory, in one commit (see the module doc)."""
    ours = [i for i in map(id_of_path, _changed(tx.store, upstream, "HEAD", f"{MEMORIES_DIR}/", only="A")) if i]
    folds: dict[str, Memory] = {}
    changes: list[Change] = []
    for memory_id in ours:
        with contextlib.suppress(KBError):
            mine = kb.read(memory_id)
            if not mine.topic_key or mine.is_deleted:
                continue
            theirs = [m for m in tx.live(topic_key=mine.topic_key, project=mine.project, scope=mine.scope)
                      if m.id != memory_id and m.id not in ours]
            if not theirs:
                continue
            keeper = min(theirs, key=lambda m: m.created_at)
            merged = merge_topic_revisions(None, keeper, mine)
            folds[memory_id] = merged
            changes += [memory_change(merged), Change(memory_path(memory_id), None)]
    if not folds:
        return
    mapping = {old: m.id for old, m in folds.items()}
    for other_id, _memory, text in tx.referrers([f"memory:{old}" for old in mapping]):
        if other_id not in mapping:
            new_text = renumbered_text(other_id, text, mapping)
            if new_text is not None:
                changes.append(Change(memory_path(other_id), new_text.encode("utf-8")))
    moves = ", ".join(f"{old} into {new}" for old, new in mapping.items())
    keys = ", ".join(sorted({m.topic_key or "" for m in folds.values()}))
    tx.commit(changes, f"memory: merge {moves} (topic {keys})", {m.id: m for m in folds.values()})
    result.merged.update(mapping)


def _revalidate(kb: Context, upstream: str) -> None:
    """The memories this branch adds or changes on top of the upstream must pass ``validate``."""
    changed = _changed(kb.store, upstream, "HEAD", f"{MEMORIES_DIR}/", only="AM")
    paths = [kb.root / kb_path for kb_path in changed if id_of_path(kb_path) is not None]
    problems = [str(p) for p in validate(paths).problems] if paths else []
    if problems:
        raise ConflictError(
            "After merging the upstream these memories do not validate, so nothing was pushed and "
            "the repository is back as it was:\n" + "\n".join(problems)
            + "\nFix them on your branch (slayer-kb edit ID) and run 'slayer-kb sync' again."
        )


def _push(store: GitStore, remote: str, upstream_branch: str, tracking: str, result: SyncResult) -> bool:
    head = store.head()
    assert head is not None
    known = _tip(store, tracking)
    if known == head:
        return True
    ahead = store.git("rev-list", "--count", head, *([f"^{known}"] if known else [])).stdout.decode().strip()
    proc = store.git("push", "-q", "--porcelain", remote, f"{head}:refs/heads/{upstream_branch}", check=False)
    if proc.returncode != 0:
        text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
        if "rejected" in text or "non-fast-forward" in text or "fetch first" in text:
            return False
        raise StoreError(f"git push to {remote} failed: {text.strip()}")
    store.git("update-ref", tracking, head)
    if not known:
        store.git("branch", "-q", f"--set-upstream-to={remote}/{upstream_branch}", check=False)
    if result.action == "up to date":
        result.action = "pushed"
    result.pushed = int(ahead or 0)
    return True


def _put_back(store: GitStore, start: str) -> None:
    """Undo a sync that could not finish: no rebase in progress, branch and files at ``start``."""
    if _rebasing(store):
        store.git("rebase", "--abort", check=False)
    if store.head() != start:
        store.git("reset", "-q", "--keep", start, check=False)
