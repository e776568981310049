"""``sync``: pull, merge what git cannot, revalidate, push, reindex; retried under contention.

fetch, then a rebase of this branch's commits onto the upstream. With leased ids
(``store/leases.py``) two clones never add the same file, so the rebase meets only files both
sides changed, which git merges with the KB's merge driver (``store/mergedriver.py``):

- **session files** both sides wrote (Engram's default session of a new project, above all):
  merged (``core/merging.py``: the union of prompts, the earliest start, the latest end);
- **topic-key memories** both sides revised: the newest content, both sides' revisions counted
  (a line merge would take a ``revision_count`` both sides raised alike as one revision);
- **two edits of one memory**: git's line merge; a conflict is a true one, which a person
  resolves (the error names the files and steps that work as written).

A branch whose unpushed commits include a merge is not rebased (a rebase would flatten it, and
git would no longer count the merged branch as merged): the upstream is merged in instead, as
``slayer-kb merge`` merges it (``merge.py``: the same driver).

After the rebase, a topic key this branch saved first while the upstream saved it too is folded
into the memory the team holds (``folds.Standing``: the upstream's, unless this branch's came from
the remote's default branch), one memory per key, the revisions summed, the other kept in git's
history. Ids allocated before leases (or with ``slayer-kb.ids sequential``) that the upstream
used for other memories are renumbered first (``renumber.py``). Both kinds of move are recorded
(``store/moves.py``): a command on a moved id refuses and names both memories.

A push refused because others pushed first is retried (pull again, push again) after a jittered
wait, shorter the more often this sync was refused; one a hook of the remote declined is not (the
remote's rule would refuse it again): sync stops at once with the hook's message. The race with the other clones, from the
fetch to the push, holds only what must be in it: the lock and the check of the work tree come
before the fetch, and the re-index of the pulled memories (unless a topic key to fold needs it)
and the counting after the push. Each attempt's phases are timed (``SyncResult.timings``).
Whenever sync cannot finish it puts the branch, index and work tree back exactly where they
were and says how to go on. What it did is kept in its pull record (``store/pulls.py``,
``syncreport.py``) until it is done: the next sync says what one killed after its push did not.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections import Counter
from typing import TYPE_CHECKING

from ..core.errors import ConflictError, IndexLockedError, InvalidInputError, KBError, MemoryFileError, StoreError
from ..core.locate import id_of_path, memory_path
from ..core.merging import folded_by
from ..core.outcomes import SyncResult
from ..core.problems import cd_step, command, command_in, git_command, words
from ..core.session import SESSIONS_DIR
from ..core.text import shown_value
from ..store.foldlog import folded_to
from ..store.moves import MovedIds
from ..store.pulls import Pull, Pulls
from ..store.renames import TipRenames, brought_back, crossings, given_and_moved_on, merged_where, rename_meets
from ..store.replay import forgets, replay
from ..store.repo import GitStore
from ..store.worktree import reset_keep
from ..transaction import Transaction
from .byhand import finish_merge_by_hand, fold_pulled, unchecked
from .folds import Standing, carry_dropped, fold_renamed, forgotten_folded, own_moves, recount
from .merge import merge_conflict_message, merge_in, merging
from .rebase import conflict_message, in_progress, run, start_args
from .renumber import plan, renumber_commit, require_clean, rewrite_commits
from .reuses import Retry, reuse_stop
from .revalidation import Moves, Revalidated, finish, on_top, revalidate
from .snapshot import merge_bases, session_projects, written_on_both, written_on_either
from .syncfetch import Fetch, no_remote
from .syncpush import push
from .syncreport import DONE, compose, pulled_warnings, rename, reported
from .turn import Turn

if TYPE_CHECKING:
    from ..context import Context

PUSH_ATTEMPTS = 30
# The wait after the n-th refused push (n from 1): uniform in [0, W / n], W the time the refused
# attempt took (at most BACKOFF_WINDOW). Random, so clones that collided spread out instead of
# colliding again in step, over about the time one attempt holds the remote; shorter the more
# often this sync was refused, so the clone that has waited longest is the first back at the
# remote (a growing wait would favour the newcomers, which push without waiting, and starve it).
BACKOFF_WINDOW = 0.6
# Characters git refuses in a ref name, and so in a remote's (git check-ref-format).
_NOT_IN_NAMES = "~^:?*[\\"
_JITTER = random.Random()  # noqa: S311 (spreads clones out; nothing secret)


def backoff(refused: int, rng: random.Random, attempt: float = BACKOFF_WINDOW) -> float:
    """Seconds to wait after this sync's ``refused``-th refused push, whose attempt took
    ``attempt`` seconds."""
    return rng.uniform(0, min(attempt, BACKOFF_WINDOW) / refused)


def sync(kb: Context, remote: str | None = None) -> SyncResult:
    """Pull (rebase), merge, revalidate, push and reindex (see the module doc); ``remote``
    defaults to the one ids are leased from (``Context.shared_remote``)."""
    return _sync(kb, kb.store, kb.shared_remote() if remote is None else remote)


def _sync(kb: Context, store: GitStore, remote: str) -> SyncResult:
    result = SyncResult(remote, "")
    laps = _Laps(result.timings)
    store.refuse_during_git_operation()  # a rebase left stopped detaches HEAD: named first
    branch = store.branch()
    if not branch:
        raise InvalidInputError(f"HEAD is detached; check out a branch ({git_command(store.root, 'switch NAME')}) "
                                "before syncing.")
    result.branch = branch
    # The config as the leases keep it (read again only when the file changed): a long-lived
    # server's sync asks git nothing before the fetch.
    if not remote or remote[0] == "-" or any(ch.isspace() or ch in _NOT_IN_NAMES for ch in remote):
        raise InvalidInputError(
            f"{shown_value(remote)} is not a git remote's name (empty, starting with '-', or holding a space or one of "
            f"{_NOT_IN_NAMES}); pass --remote with one that 'git remote -v' lists."
        )
    if kb.git_setting(f"remote.{remote}.url") is None:
        raise no_remote(store, remote)
    upstream_branch = _upstream_branch(kb, branch, remote)
    tracking = f"refs/remotes/{remote}/{upstream_branch}"
    turn = Turn(store, remote, upstream_branch)
    fetch = Fetch(store, kb.leases, remote, upstream_branch, tracking, turn)
    head = store.head()
    upstream = ""
    known = store.tip(tracking) if head is not None else ""  # the upstream as the last fetch saw it
    fetched = bool(known) and head == known
    if fetched:
        # Nothing of this branch's own to push, as the last fetch knew it: with nothing to pull
        # either, no lock and no index check (a team syncs often).
        laps.lap("lock")
        upstream, holder = fetch()
        laps.lap("fetch")
        # A record of a pull left (a sync killed after its push) holds what that sync did not report yet.
        if head == upstream and Pulls(store, branch).found is None and not unchecked(store, head):
            result.head = head
            _top_up(kb, fetch, result)
            return result
        fetched = turn.free(holder)  # else the first attempt waits for the other clone's turn
    # The lock and the check of the work tree come before the fetch, and the re-index after the
    # push: the race with other clones (from the fetch to the push) holds only what must be in it.
    # Nothing to pull or push, only a merge tip to read (``unchecked``): a hand edit in progress
    # is refused only if a fold must be committed (``fold_pulled``), or once there is a pull.
    quiet = bool(upstream) and head == upstream
    with kb.transaction() as tx:
        if not quiet:
            require_clean(store)
        if (start := store.head()) is None:
            raise InvalidInputError("The repository has no commit yet; save a memory first.")
        index = _Index(kb, store, start)
        noted = _Noted(kb.moves, store)
        pulls = Pulls(store, result.branch)
        laps.lap("lock")
        try:
            for attempt in range(PUSH_ATTEMPTS):
                result.attempts = attempt + 1
                if attempt:
                    laps.next()
                if attempt or not fetched:
                    upstream = fetch.in_turn(laps.lap)
                    if quiet and upstream != start:
                        require_clean(store)
                        quiet = False
                _pull(kb, tx.store, tx, remote, upstream_branch, (upstream, known), result, index, start, noted, pulls)
                fold_pulled(kb, store, tx, (start, upstream), result, index.catch_up, Standing(store, remote))
                noted.note(result, upstream)
                # Killed from here on (its push may land), the sync leaves what it did for the next to say.
                tip = store.head() or ""
                pulls.say(reported(pulls.earlier, result), tip if tip != upstream else "")
                laps.lap("pull")
                pushed = push(store, remote, upstream_branch, tracking, upstream, result, turn)
                laps.lap("push")
                if pushed:
                    break
                race = laps.race()
                turn.take()
                laps.lap("turn")
                if turn.mine is None:  # another clone has the turn (the next fetch waits), or none can
                    time.sleep(backoff(attempt + 1, _JITTER, race))
                    laps.lap("wait")
            else:
                raise ConflictError(f"The push to {remote} was refused {PUSH_ATTEMPTS} times (others keep pushing); "
                                    f"the repository is back as it was. Run '{command(store.root)} sync' again.")
            turn.give_back()
            index.catch_up()
            result.warnings = pulled_warnings(kb, index.broken, start, f"{remote}/{upstream_branch}")
            if upstream:
                result.pulled = _count(store, upstream, start)
                result.pushed_again = _pushed_again(store, known, upstream, start) if result.pushed else 0
        except BaseException as exc:
            turn.give_back()
            noted.undo()
            stuck = _put_back(store, start)
            pulls.undo()
            kb.reread()
            if stuck is not None:
                raise StoreError(f"{exc}\n{stuck}") from exc
            if isinstance(exc, IndexLockedError):  # before the push: nothing left this clone
                raise IndexLockedError(f"{exc}; nothing was pushed, and the repository is back as it was.") from None
            raise
        result.head = store.head()
        # What a sync left owed did and never reported (killed after its push, or before), said now.
        for name, said in reported(pulls.earlier, result).items():
            setattr(result, name, said)
        # The moves are recorded as the last attempt made them (``noted``); the duplicate counts
        # not yet committed go with them now.
        for moves in (result.renumbered, result.merged, result.deduplicated):
            kb.carry_pending(moves)
        pulls.done()  # last: a sync killed before this says on its next run what it did
    _top_up(kb, fetch, result)
    laps.lap("finish")
    return result


class _Laps:
    """Where a sync's time goes (``SyncResult.timings``): the seconds of each phase, one dict per
    push attempt (the first also holds the lock, the last the finish)."""

    def __init__(self, timings: list[dict[str, float]]) -> None:
        self.timings = timings
        self.timings.append({})
        self._mark = time.perf_counter()

    def next(self) -> None:
        self.timings.append({})

    def race(self) -> float:
        """The seconds this attempt held the race with other clones: its fetch, pull and push."""
        return sum(self.timings[-1].get(phase, 0.0) for phase in ("fetch", "pull", "push"))

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        here = self.timings[-1]
        here[phase] = round(here.get(phase, 0.0) + now - self._mark, 4)
        self._mark = now


class _Noted:
    """The ids a sync moves, recorded before its branch holds the commits that move them (a
    renumbering) or once the attempt's pull is done (a fold: after its commit, the strips and the
    revalidation), before the push: a sync killed in its push (kill -9) leaves them on the branch,
    and a command on a moved id must refuse then as after. A sync that fails puts the record back
    as it found it."""

    def __init__(self, moves: MovedIds, store: GitStore) -> None:
        self.moves, self.store = moves, store
        self.merged_in = ""  # the branch a merge committed by hand took in, whose memories are not this clone's
        self.found: str | None = None  # the record as the sync found it, once ``noted``
        self.noted = False
        self._recorded: list[dict[str, str]] = [{}, {}, {}]  # what the record holds on top of ``found``

    def note(self, result: SyncResult, upstream: str) -> None:
        """Record what the attempt that just pulled ``upstream`` moved (a retry's moves replace the
        last's): one write, and none when that is what the record holds already (the common case:
        nothing moved, no file read). A fold of the upstream's memory into this branch's moved no
        id this clone gave (``folds.own_moves``)."""
        others = [upstream, *filter(None, [self.merged_in])]
        groups = [(result.renumbered, "renumbered", False), (own_moves(self.store, others, result.merged), "merged", False),
                  (own_moves(self.store, others, result.deduplicated), "merged", True)]
        if [moves for moves, _why, _duplicate in groups] == self._recorded:
            return
        if not self.noted:
            self.found, self.noted = self.moves.snapshot(), True
        self.moves.record_over(self.found, groups)
        self._recorded = [dict(moves) for moves, _why, _duplicate in groups]

    def undo(self) -> None:
        if self.noted:
            self.moves.restore(self.found)
            self.noted, self._recorded = False, [{}, {}, {}]


class _Index:
    """The commit the index describes, brought to HEAD only when a step needs it (a topic key
    to fold) and once after the push: re-indexing pulled memories on every push attempt would
    hold the race with other clones open."""

    def __init__(self, kb: Context, store: GitStore, at: str) -> None:
        self.kb = kb
        self.store = store
        self.at = at
        self.broken: dict[str, MemoryFileError | None] = {}  # each memory file pulled: why it does not read

    def back_to(self, was: str, now: str) -> None:
        """The branch went back from ``was`` to ``now`` (a retry's reset): the index, which learnt
        ``was``'s commits (a renumber commit's rewritten links, which the next renumbering looks
        up there), describes ``now`` again."""
        _reindex(self.kb, self.store, was)
        self.at, self.broken = now, {}

    def catch_up(self) -> None:
        head = self.store.head()
        if head is not None and head != self.at:
            self.broken.update(_reindex(self.kb, self.store, self.at))
            self.at = head


def _top_up(kb: Context, fetch: Fetch, result: SyncResult) -> None:
    """Ids for the saves that follow, while the remote is at hand (never fails the sync); and the
    blocks the fetch found another clone's (``Fetch.given_up``) in ``result``."""
    result.given_up = fetch.given_up
    with contextlib.suppress(KBError):
        kb.top_up_leases()


def _upstream_branch(kb: Context, branch: str, remote: str) -> str:
    """The remote's branch ``branch`` syncs with: its own name. A branch made from another
    (``git switch -c agent-a origin/main`` tracks ``main``) is refused, as git's ``push.default``
    ``simple`` refuses it: its sync would push an agent's work to ``main``, past the review."""
    configured_remote, merge = kb.git_setting(f"branch.{branch}.remote"), kb.git_setting(f"branch.{branch}.merge") or ""
    if configured_remote == remote and merge.startswith("refs/heads/") and merge != f"refs/heads/{branch}":
        other = merge[len("refs/heads/"):]
        raise InvalidInputError(
            f"Branch '{branch}' tracks {remote}/{other}, a branch of another name, so a sync would push its commits "
            f"to {other}. To sync it with a branch of its own on {remote} ({remote}/{branch}), run "
            f"'{git_command(kb.root, 'branch --unset-upstream')}' and sync again; to take {other} in, run "
            f"'{git_command(kb.root, f'fetch {remote}')}' and '{command(kb.root)} merge {words(f'{remote}/{other}')}'; to work on "
            f"{other} itself, '{git_command(kb.root, f'switch {words(other)}')}'."
        )
    return branch


def _pull(kb: Context, store: GitStore, tx: Transaction, remote: str, upstream_branch: str, tips: tuple[str, str],
          result: SyncResult, index: _Index, start: str, noted: _Noted, pulls: Pulls) -> None:
    """Bring the fetched upstream in (``tips``: it, and it as the last fetch left it; none: no such
    branch yet); ``start``: the branch as the sync began; ``noted`` records a renumbering as soon as
    the branch holds it; ``pulls`` the pull, before the branch moves, and what a killed sync owes."""
    upstream, known = tips
    if not upstream:
        return
    head = store.head()
    assert head is not None
    name = f"{remote}/{upstream_branch}"

    def moving(ours: str, parted: str) -> None:  # before each move: killed after it, the next sync finishes
        pulls.write(Pull(result.branch, start, parted, upstream, ours, name, store.request or "",
                         reported(pulls.earlier, result)))

    # One merge-base tells all three cases: up to date, fast-forward, diverged (and from where).
    parted = store.git("merge-base", upstream, head, check=False).stdout.decode().strip()
    if parted == upstream:
        # Nothing to pull, but commits made by hand (a conflict resolved) may be pushed: check them;
        # and a sync killed once it had pulled left its steps after the pull to make.
        if head != upstream:
            noted.merged_in = finish_merge_by_hand(kb, store, tx, upstream, result, index.catch_up,
                                                   Standing(store, remote))
            _finish_owed(kb, store, tx, pulls, result, index)
            _refuse(kb, revalidate(kb, store, upstream, on_top(store, upstream)), result, merged=False)
        return
    if parted == head:
        moving(head, parted)
        store.git_writing_index("merge", "-q", "--ff-only", upstream)
        result.action = "fast-forward"
        return
    # A merge among this branch's own commits: a rebase would replay it as a line of commits, and
    # git would no longer count the merged branch as merged. So the upstream is merged in instead,
    # into the branch as the sync found it (a retry's merge is made again, not stacked on the last).
    merges = bool(store.git("rev-list", "-1", "--min-parents=2", start, f"^{upstream}").stdout.strip())
    if merges and head != start:
        reset_keep(store, start)
        # The last attempt's commits are undone with it, so is what they said they did: its
        # renumbering, folds, strips and merged files are made again, or not, against this upstream.
        for done in DONE:
            getattr(result, done).clear()
        index.back_to(head, start)
        parted = store.git("merge-base", upstream, start, check=False).stdout.decode().strip()
    _finish_owed(kb, store, tx, pulls, result, index)  # against the upstream the killed sync pulled
    # A save the upstream held as this clone last saw it, whose commit one side rewrote since
    # (amended, force-pushed), is an edit of that memory, not another at its id.
    base, mapping = plan(kb, upstream, parted=parted or None, replayed=not merges, seen=known)
    compose(result.renumbered, mapping)
    # A retry's renumbering moves a memory the last attempt's commits folded or stripped (a
    # rebase replays them): said under the id it has now, as the commits say it.
    for moved in (result.merged, result.deduplicated):
        rename(moved, mapping)
    for stripped in (result.unlinked, result.cascaded):
        rename(stripped, mapping)
    rename(result.relinked, mapping)
    rename(result.relinked_merged, mapping)
    # Recorded before the branch moves: killed in between, a command on the old id refuses (until
    # the next sync renumbers again) rather than answer with the upstream's memory.
    noted.note(result, upstream)
    if mapping:
        moving(store.head() or "", parted)
    if mapping and merges:
        renumber_commit(kb, tx, mapping, name)  # one commit: the merge's history stays as it was
    elif mapping:
        reset_keep(store, rewrite_commits(store, base, mapping))
    ours = store.head()
    assert ours is not None
    # Where they part, asked again (renumbered commits part elsewhere), with every base at once.
    bases = merge_bases(store, (upstream, ours))
    parted = bases[0] if bases else ""
    both = written_on_both(store, parted, (upstream, "HEAD")) if parted else []
    # Each side's renames, read once a tip for the checks below and the files named as merged.
    renames = TipRenames(store, parted)
    if both and (stop := reuse_stop(store, kb.root, parted, (upstream, ours), (renames(upstream), renames(ours)),
                                    both, name, merges, Retry.sync())):
        raise ConflictError(stop)
    # A memory forgot and its id given again on one side, renamed on the other: git's rebase replays
    # the rename onto the memory given the id; the merge stops on the forget against the rename.
    # Given again and moved on: the replay stops twice, and its first steps' choice to keep the
    # other side's memory meets the memory given its id; the merge stops once, on the forget.
    merging = merges or bool(both and (crossings(store, parted, (upstream, ours))
                                       or given_and_moved_on(store, parted, (upstream, ours))))
    # A renamed memory the other side changed (``rename``'s trailer; its old file is then written
    # on both sides): git's rebase follows the move, the replay would take it for a forget and let
    # it win over a soft forget or edit.
    replayed = None if merging or (both and rename_meets(store, parted, (upstream, ours), renames)) else replay(
        store, upstream, ours, known)
    # A memory this branch forgot and brought back, the upstream changed: git's rebase replays the
    # forget and stops on it, a merge joins the change into the memory brought back. Renamed by
    # the upstream, the replay drops the forget (the file is gone there too) and puts the memory
    # back at its old id beside the renamed one. Not looked for (a ``git log``) where the replay
    # saw the branch delete no memory file.
    merging = merging or bool(parted and (replayed is None or replayed.deleted_memory is not False)
                              and brought_back(store, parted, ours, upstream))
    moving(ours, parted)
    if merging:
        _merge(store, remote, name, (upstream, known), bool(mapping), written_on_either(store, (upstream, ours), bases),
               bases, result.followed)
        fold_renamed(kb, tx, {f["renamed"]: f["kept"] for f in result.followed.values() if "renamed" in f})
    elif replayed is None or replayed.tip is None:
        _rebase(store, remote, upstream_branch, (upstream, known), bool(mapping),
                written_on_either(store, (upstream, ours), bases), bases)
    else:
        tip = replayed.tip  # neither merged nor rebased: the replay made it
        reset_keep(store, tip)
        if both:
            weighed = forgets(store, [store.repo_path(path) for path in both], (parted, upstream, ours, tip))
            dropped = carry_dropped(store, tx, parted, (upstream, name), ours, weighed.dropped, result.followed,
                                    weighed.unforgotten)
            result.unforgotten += [memory_id for memory_id in weighed.unforgotten if memory_id not in result.unforgotten
                                   and memory_id not in result.followed and memory_id not in dropped]
            result.dropped += [memory_id for memory_id in dropped if memory_id not in result.dropped]
    if parted:
        forgotten_folded(store, parted, (upstream, name), ours, both, result.followed)
    result.resolved += [path for path in merged_where(store, parted, (upstream, ours), both, renames)
                        if path not in result.resolved and id_of_path(path) not in result.followed]  # said as followed
    result.session_projects.update(session_projects(store, (upstream, ours), both))
    result.action = "merged" if merging else "rebased"
    if parted:
        recount(kb, tx, (parted, upstream, ours), both)
    moves = Moves(result.merged, result.unlinked, result.cascaded, result.deduplicated, result.relinked,
                  result.relinked_merged, result.followed)
    _refuse(kb, finish(kb, store, tx, upstream, parted, moves, index.catch_up, ours=ours, standing=Standing(store, remote)),
            result)


def _finish_owed(kb: Context, store: GitStore, tx: Transaction, pulls: Pulls, result: SyncResult, index: _Index) -> None:
    """The steps after the pull that a sync which did not finish (killed once its branch held the
    upstream) may not have made (``store/pulls.py``): made now against the upstream it pulled,
    from where the sides parted then and its branch before it moved. Those it made make nothing."""
    pull = pulls.owed(result.branch)
    if pull is None:
        return
    # Its folds committed before it recorded them, said and recorded as they would have been: not another clone's (fetched).
    made = store.git("log", "--format=%s", "HEAD", "--not", pull.upstream, pull.ours, "--remotes").stdout.decode()
    for subject in made.splitlines():
        if (fold := folded_by(subject)) is not None:
            (result.deduplicated if fold[1] else result.merged).update(fold[0])
    if pull.parted:
        recount(kb, tx, (pull.parted, pull.upstream, pull.ours),
                 written_on_both(store, pull.parted, (pull.upstream, pull.ours)))
    moves = Moves(result.merged, result.unlinked, result.cascaded, result.deduplicated, result.relinked,
                  result.relinked_merged, result.followed)
    finish(kb, store, tx, pull.upstream, pull.parted, moves, index.catch_up, ours=pull.ours,
           standing=Standing(store, kb.shared_remote()))


def _count(store: GitStore, tip: str, exclude: str) -> int:
    """The commits ``tip`` has that ``exclude`` (a commit, or ``--remotes=NAME``) has not."""
    return int(store.git("rev-list", "--count", tip, *(["--not", exclude] if exclude else [])).stdout.decode().strip() or 0)


def _pushed_again(store: GitStore, known: str, upstream: str, start: str) -> int:
    """The commits of this branch (at ``start``) that the remote's branch held when this clone
    last fetched it (``known``) and holds no more (its history rewritten, as by a force push), and
    that the push sent again (sync never drops what a clone holds): each a commit pushed with the
    same author and date (a renumbering changes its subject). A dropped commit whose changes the
    new history holds already (a history made anew from the same files) was not sent again."""
    if not known or known == upstream or store.git("merge-base", "--is-ancestor", known, upstream,
                                                   check=False).returncode == 0:
        return 0
    base = store.git("merge-base", start, known, check=False).stdout.decode().strip()
    if not base:
        return 0

    def stamps(tip: str) -> Counter[str]:
        return Counter(store.git("log", "--format=%an %ae %at", tip, "--not", upstream).stdout.decode().splitlines())

    return sum((stamps(base) & stamps("HEAD")).values())


def _reindex(kb: Context, store: GitStore, before: str) -> dict[str, MemoryFileError | None]:
    """Bring the index, which described the files at ``before``, to HEAD: only the memory files
    that changed in between are re-read (a full freshness pass stats every file, on every push
    attempt). A changed catalog file (anything else but sessions, which the index does not hold)
    takes the full pass, which also re-reads the catalog. Each file that changed: why it does
    not read as a memory, or None."""
    out = store.git("diff", "--name-only", "-z", "--no-renames", before, "HEAD", "--", store.prefix or ".").stdout
    changed = [p.decode("utf-8", "surrogateescape")[len(store.prefix):] for p in out.split(b"\0") if p]
    ids = [id_of_path(path) for path in changed if not path.startswith(f"{SESSIONS_DIR}/")]
    report = kb.reread(None if None in ids else [i for i in ids if i is not None])
    problems = {problem.path: problem for problem in report.problems}
    return {path: problems.get(path) for path in changed}


def _rebase(store: GitStore, remote: str, upstream_branch: str, tips: tuple[str, str], renumbered: bool,
            written: list[str] | None, bases: list[str]) -> None:
    """Rebase onto the upstream (``tips``: it, and it as this clone last fetched it: ``rebase.run``'s
    ``seen``) with the KB's merge driver (``rebase.run``: session files and topic-key memories both
    sides wrote are merged as records; ``written``, the files either
    side's commits wrote, are the ones it may be handed), git's rename guess held to exact moves
    where it pairs only forgets and new saves since they parted (at ``bases``; ``rename_detection``); a conflict it leaves (two edits of one
    memory, a forget against an edit) aborts the rebase and raises, with the steps to merge by
    hand through ``slayer-kb rebase``, which uses the driver too (a plain ``git rebase`` would
    stop on the files the driver merges)."""
    name, (upstream, known) = f"{remote}/{upstream_branch}", tips
    stopped = run(store, start_args(store, bases, "HEAD", upstream), name, written, known)
    if stopped is not None:
        store.git_writing_index("rebase", "--abort", check=False)
        folds = folded_to(store, bases[0], upstream) if len(bases) == 1 else {}
        # A change of a memory the upstream folded away: 'slayer-kb rebase' carries it (carry.follow_folds), or
        # stops on the memory kept with steps of its own; git's stop here, on the folded file, has other steps.
        if held := {i: folds[i] for path in stopped[0] if (i := id_of_path(path.removeprefix(store.prefix))) in folds}:
            raise ConflictError(_folded_stop(store, (remote, name, upstream), held))
        first = [f"git fetch {remote}"]
        if renumbered:
            # A rebase of the ids as they are would stop on two different memories with one
            # id; renumbering first makes it meet only the real conflict.
            first.append(f"{command_in(store.root)} renumber --onto {words(name)} --rewrite")
        first.append(f"{command_in(store.root)} rebase {words(name)} (it stops on the conflict)")
        raise ConflictError(conflict_message(store, *stopped, name, tuple(first), tips=("HEAD", upstream)))


def _folded_stop(store: GitStore, names: tuple[str, str, str], held: dict[str, str]) -> str:
    """Sync's stop on a change of memories the upstream folded away (``held``: each id -> the id
    kept; ``names``: the remote, the upstream's name, its commit), with what 'slayer-kb rebase' does
    then (``carry.follow_folds``): carries the change to the memory kept, or stops there; with the
    memory kept forgotten for good upstream (no file left), stops on the folded one (a forget
    against the edit)."""
    remote, name, upstream = names
    paths = {kept: store.repo_path(memory_path(kept)) for kept in held.values()}
    there = store.objects.blobs_at(store.objects.tree_of(upstream), paths.values())
    gone = sorted(old for old, kept in held.items() if there[paths[kept]] is None)
    said = ", ".join(f"{old}, which {name} had merged into {kept}{' and forgot since' if old in gone else ''}"
                     for old, kept in held.items())
    carried = sorted({kept for old, kept in held.items() if old not in gone})
    does = [f"carries the change to {', '.join(carried)} or stops there with its steps"] if carried else []
    does += [f"stops on {', '.join(gone)} with its steps"] if gone else []
    return (f"Your commits changed {said}; the repository is back as it was. To merge by hand: " + "; ".join(
        [*cd_step(store.root), f"git fetch {remote}", f"{command_in(store.root)} rebase {words(name)}, which "
         f"{' and '.join(does)}", f"{command_in(store.root)} sync"]) + ".")


def _merge(store: GitStore, remote: str, name: str, tips: tuple[str, str], renumbered: bool,
           written: list[str] | None, bases: list[str], followed: dict[str, dict[str, str]]) -> None:
    """Merge the upstream (``name``, its tracking ref; ``tips``: it, and it as this clone last fetched
    it) with the KB's merge driver (``merge.merge_in``, as ``slayer-kb merge``; ``written``: the files
    either side's commits wrote; ``bases``: where they parted; ``followed``: as ``merge_in``'s); a
    conflict aborts the merge and raises, the steps and the folds as ``slayer-kb merge`` says them."""
    upstream, known = tips
    stopped = merge_in(store, name, upstream, written, bases, known, followed)
    if stopped is not None:
        store.git_writing_index("merge", "--abort", check=False)
        first = [f"git fetch {remote}"]
        if renumbered:
            first.append(f"{command_in(store.root)} renumber --onto {words(name)}")
        first.append(f"{command_in(store.root)} merge {words(name)} (it stops on the conflict)")
        raise ConflictError(merge_conflict_message(store, name, *stopped, first=tuple(first), tips=("HEAD", upstream),
                                                   followed=followed))


def _refuse(kb: Context, checked: Revalidated, result: SyncResult, merged: bool = True) -> None:
    """Refuse to push what does not validate (``revalidation.py``); a stale example query, which a
    catalog delete leaves (SLayer's rule), is pushed and named in ``result.stale_queries``."""
    result.stale_queries, result.untouched_queries = checked.stale_queries, checked.untouched_queries
    if checked.problems:
        raise ConflictError(
            f"{'After merging the upstream these' if merged else 'These'} memories do not validate, so nothing "
            "was pushed and the repository is back as it was:\n" + "\n".join(checked.problems)
            + f"\nFix them on your branch (each names its fix; commit what you change by hand) and run '{command(kb.root)} sync' again."
        )


def _put_back(store: GitStore, start: str) -> str | None:
    """Undo a sync that could not finish: no rebase in progress, branch and files at ``start``;
    None when done, else why not and the steps that finish it (git's index stayed locked)."""
    try:
        if in_progress(store):
            store.git_writing_index("rebase", "--abort", check=False)
        if merging(store):
            store.git_writing_index("merge", "--abort", check=False)
        if store.head() != start:
            reset_keep(store, start, check=False)
        return None
    except IndexLockedError as exc:
        steps = [*cd_step(store.root), *(["git rebase --abort"] if in_progress(store) else []),
                 *(["git merge --abort"] if merging(store) else []), f"git reset --keep {start}"]
        return (f"Nor could sync put the branch back where it was: {exc}. Once it can, run {'; '.join(steps)}; "
                f"then {command_in(store.root)} sync.")
