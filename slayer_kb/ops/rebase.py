"""``slayer-kb rebase``: git's rebase with the KB's merge driver, for the person finishing by hand
what ``sync`` could not (two edits of one memory, or a forget against an edit).

The driver (``store/mergedriver.py``) merges the session files and topic-key memories both sides
wrote; git only uses it when it is named in the run's own ``-c`` options, which ``sync`` passes
and a plain ``git rebase`` typed by a person does not. So the steps of a conflict's message run
this command: every run (the start, ``--continue``, ``--abort``) passes the driver again, and
nothing is written to the user's git config. A run that stops on a conflict raises
``ConflictError`` naming the files and the next steps (``conflict_message``, which also builds
sync's message); a commit that became empty once merged (the upstream had the same change, or
the person kept the upstream's side) is dropped, as ``sync`` drops it. A memory both sides
added alike under two commits (a pull request merged by squash or rebase) is merged from that
version, which git's merge base lacks (``settle``): main's later edit is no add/add conflict;
and a memory one side forgot while the other soft-forgot it goes, as in sync (``settle`` too).
Once the rebase finishes, it does what sync does once the upstream is in (``revalidation.py``:
topic keys folded, links to what the other side forgot or deleted stripped, problems named).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from ..core.errors import ConflictError, InvalidInputError, StoreError, UsageError
from ..core.locate import id_of_path
from ..core.outcomes import RebaseResult
from ..core.problems import cd_step, command, command_in, git_command, words
from ..store import mergedriver
from ..store.gitenv import LITERAL_PATHS
from ..store.gitstate import rebase_folder
from ..store.guesses import rename_detection
from ..store.renames import Crossing, brought_back, crossings, given_and_moved_on
from ..store.repo import GitStore
from ..store.revisions import added_alike, forgot_at, resolve_rev, rewritten_alike
from ..store.worktree import require_shown
from .carry import follow_folds, forgotten_folds, held_words, kept_paths
from .conflictsteps import conflict_steps, crossed_words, merge_settles, opening, unmerged_stages
from .folds import Standing
from .renumber import refuse_clashes, require_clean
from .reuses import Retry, refuse_reuse
from .revalidation import Moves, finish_or_put_back, take_in
from .snapshot import merge_bases, session_projects, written_on_both, written_on_either

if TYPE_CHECKING:
    from pathlib import Path

    from ..context import Context

CONTINUE, ABORT = "continue", "abort"


def rebase(kb: Context, upstream: str | None = None, action: str | None = None, *,
           rewrite_pushed: bool = False) -> RebaseResult:
    """Rebase onto ``upstream``, or go on with the rebase in progress (``action``: ``continue``
    or ``abort``), with the KB's merge driver (see the module doc). A branch whose commits to
    rebase are already on its remote branch is refused unless ``rewrite_pushed``."""
    return _rebase(kb, kb.store, upstream, action, rewrite_pushed)


def _rebase(kb: Context, store: GitStore, upstream: str | None, action: str | None,
            rewrite_pushed: bool) -> RebaseResult:
    remote, pushed, branch, onto_commit, ours = kb.shared_remote(), 0, "", "", ""
    bases: list[str] = []  # where this branch as it was (``ours``) and the upstream parted
    both: list[str] | None = None  # the files both sides wrote since they parted, read at the start
    followed: dict[str, dict[str, str]] = {}  # what a pick did to a memory the upstream folded away
    with store.locked():
        if action is None:
            if upstream is None:
                raise UsageError(f"Give the branch to rebase onto ({command(kb.root)} rebase origin/main), "
                                 "or --continue or --abort for the rebase in progress.")
            if in_progress(store):
                typed = command(kb.root)
                raise ConflictError(f"A rebase is already in progress; go on with '{typed} rebase --continue' "
                                    f"or put the branch back with '{typed} rebase --abort'.")
            require_clean(store)
            # By its commit: a name git would read as an option (-x) is refused, not passed on.
            onto_commit = resolve_rev(store, upstream)
            branch = store.branch()
            pushed = _pushed(store, remote, branch, "HEAD", onto_commit)
            ours = store.head() or ""
            bases = merge_bases(store, (ours, onto_commit))
            if pushed and not rewrite_pushed:
                raise ConflictError(_pushed_message(store.root, remote, upstream, branch, pushed))
            if bases:
                require_shown(store, bases[0], onto_commit)
                # What sync refuses before it rebases, this refuses too: an id the upstream renamed and gave again.
                both = written_on_both(store, bases[0], (onto_commit, ours))
                refuse_reuse(store, kb.root, bases[0], (onto_commit, ours), upstream, Retry.rebase(upstream), both)
                refuse_clashes(store, onto_commit, bases[0], upstream,
                               f"rebase {'--rewrite-pushed ' if rewrite_pushed else ''}{words(upstream)}", rebasing=True,
                               default=lambda: Standing(store, kb.shared_remote()).default_tip)
                if crossed := crossings(store, bases[0], (onto_commit, ours)):
                    raise ConflictError(_crossed_message(kb.root, upstream, crossed, {onto_commit: upstream,
                                                                                      ours: "your commits"}))
                if both and (moved_on := given_and_moved_on(store, bases[0], (onto_commit, ours))):
                    raise ConflictError(_moved_on_message(kb.root, upstream, ours, moved_on))
                if back := brought_back(store, bases[0], ours, onto_commit):
                    raise ConflictError(_brought_back_message(kb.root, upstream, back))
            else:  # two KBs begun apart: git replays all of ours, and one auto id on both is a clash
                refuse_clashes(store, onto_commit, "", upstream, f"rebase {words(upstream)}", rebasing=True,
                               default=lambda: Standing(store, kb.shared_remote()).default_tip)
            args = start_args(store, bases, ours, onto_commit)
        elif not in_progress(store):
            raise InvalidInputError(f"No rebase is in progress, so there is nothing to {action}; "
                                    f"start one with '{command(kb.root)} rebase UPSTREAM'.")
        else:
            if action == CONTINUE and (marked := _still_marked(store)):
                raise ConflictError(_marked_message(store.root, marked))
            args = [f"--{action}"]
            if action == CONTINUE:  # pushed commits it rewrites still need the force push
                branch, ours, onto_commit = _rebasing(store)
                pushed = _pushed(store, remote, branch, ours, onto_commit)
                bases = merge_bases(store, (ours, onto_commit))
        onto = _onto_name(store) if action is not None else upstream
        assert onto is not None
        push = push_step(remote, branch, pushed, store.root, in_kb=True)
        # What either side's commits wrote since they parted (this branch as it was, ``ours``).
        stopped = run(store, args, onto, written_on_either(store, (onto_commit, ours), bases) if onto_commit else None,
                      followed=followed)
        if stopped is not None:
            raise ConflictError(conflict_message(store, *stopped, onto, stopped_at=_stop(store), push=push,
                                                 tips=tuple(filter(None, ("HEAD", onto_commit, ours))),
                                                 folded=kept_paths(store, followed))
                                + held_words(store, followed, stopped[0], (onto, "your commits")))
        kb.reread()
        head = store.head()
        assert head is not None
        # Printed alone, it runs from where the user is (a conflict's steps start in the KB's folder).
        alone = push_step(remote, branch, pushed, store.root)
        result = RebaseResult(onto, "aborted" if action == ABORT else "rebased", head, alone)
        result.followed = followed
    if onto_commit:
        parted = bases[0] if bases else ""
        if parted:  # this branch's commits as they were (``ours``) were replayed onto the upstream's
            if both is None:  # a rebase continued: its start read them in another process
                both = written_on_both(store, parted, (onto_commit, ours))
            result.session_projects = session_projects(store, (onto_commit, ours), both)
        # What sync does once the upstream is in (revalidation.py): a conflict resolved by hand must
        # not leave a link to what the other side forgot, or a topic key both sides saved twice.
        # Refused, the branch goes back to where it was before the rebase began: a rebase continued
        # was in progress then, which cannot be made again; its result is named.
        undone = (f"The rebase in progress, which git had finished, is put back with it: the branch is where it was "
                  f"before the rebase began, and the rebased commits are at {head} "
                  f"({git_command(store.root, f'reset --keep {head}')} takes them back).") if action == CONTINUE else ""
        with kb.transaction() as tx:
            checked = finish_or_put_back(kb, store, tx, onto_commit, parted, Moves(
                result.merged, result.unlinked, result.cascaded, result.deduplicated, result.relinked,
                result.relinked_merged), ours, head, undone,
                standing=Standing(store, kb.shared_remote()))
        take_in(kb, store, result, checked, (onto_commit, result.merged), "rebase", head)
    return result


def _crossed_message(root: Path, upstream: str, crossed: list[Crossing], names: dict[str, str]) -> str:
    """Why a rebase is refused on a ``Crossing``: no pick of git's stops on a rename's (and on an
    edit's, only the forget's pick, before the memory given the id is there to keep apart), and the
    merge that does is the way on."""
    said = "; ".join(crossed_words(crossed, names))
    how = ("would replay one onto the other without a stop" if all(c.new for c in crossed) else
           "replays one side's commits onto the other's one by one, which cannot keep the two memories apart")
    return (f"{opening(said)}. A rebase {how}, so nothing was rebased. Run "
            f"'{command(root)} merge {words(upstream)}' instead: {merge_settles(crossed)}.")


def _moved_on_message(root: Path, upstream: str, ours: str, moved_on: dict[str, tuple[str, bool]]) -> str:
    """Why a rebase is refused on ids one side forgot, put back and moved on, which the other
    changed (``renames.given_and_moved_on``: each id's forgetting tip, and whether it was given to
    another memory or the one forgotten brought back). Forgotten by this branch, the replay stops
    on the forget, and again on what was put back once that stop's steps kept the other's memory
    there; by the upstream, sync merges such a branch too. The merge stops once."""
    said = []
    for mine, who, other in ((True, "Your commits", upstream), (False, upstream, "your commits")):
        ids = sorted(i for i, (tip, _given) in moved_on.items() if (tip == ours) == mine)
        if not ids:
            continue
        given, back = ([i for i in ids if moved_on[i][1] == kind] for kind in (True, False))
        told = [*([f"forgot {', '.join(given)}, then gave the id to another memory and moved that on"] if given else []),
                *([f"forgot {', '.join(back)}, brought it back and forgot or renamed it again"] if back else [])]
        again = " and ".join([*([f"the memory given {', '.join(given)}"] if given else []),
                              *([f"{', '.join(back)} brought back"] if back else [])])
        why = (f"a rebase replays your commits one by one, stopping on the forget, and again on {again} once the one "
               f"{other} changed is kept there" if mine else "sync merges such a branch rather than rebasing it")
        said.append(f"{who} {'; '.join(told)}, and {other} changed {', '.join(ids)}: {why}.")
    return (f"{' '.join(said)} Nothing was rebased. Run '{command(root)} merge {words(upstream)}' instead: it stops "
            "once, on the forget against that change, with the steps to keep either.")


def _brought_back_message(root: Path, upstream: str, ids: list[str]) -> str:
    """Why a rebase is refused on memories this branch forgot and brought back, which the upstream
    changed (``renames.brought_back``): the replay stops on the forget, and again on what brought
    it back; a merge joins the change into the memory brought back, as sync does."""
    named = ", ".join(ids)
    return (f"Your commits forgot {named} and brought it back, and {upstream} changed it: a rebase replays those "
            "commits one by one, stopping on the forget against that change and again where the memory came back, "
            f"so nothing was rebased. Run '{command(root)} merge {words(upstream)}' instead (or '{command(root)} "
            "sync', which merges such a branch): it joins the change into the memory brought back.")


def push_step(remote: str, branch: str, pushed: int, root: Path, in_kb: bool = False) -> str:
    """What sends the rebased or merged branch: a force push once pushed commits were rewritten; as
    the user runs it from where they are (``problems.command``), or ``in_kb``, a step after
    ``cd_step(root)``, from the KB's folder ``root`` (``problems.command_in``)."""

    def git(args: str) -> str:
        return f"git {args}" if in_kb else git_command(root, args)

    kb = command_in(root) if in_kb else command(root)
    if pushed:
        return git(f"push --force-with-lease {words(remote, branch)}")
    # A sync would replay rewritten commits onto the pushed ones; a detached HEAD has no sync.
    return f"{kb} sync" if branch else f"{git('switch -c BRANCH')}, then {kb} sync"


# The lines git's merge writes around each side of a conflict, at a line's start: a memory file
# holding one is no YAML a person meant (YAML's own text is indented under its key).
_MARKERS = (b"<<<<<<< ", b">>>>>>> ")


def _marker_lines(text: bytes | None) -> set[bytes]:
    return {line for line in (text or b"").splitlines() if line.startswith(_MARKERS)}


def _still_marked(store: GitStore) -> list[str]:
    """The KB's files staged (``git add``) with a conflict's markers still in them, KB-relative:
    ``--continue`` would commit them as they are. A marker line that HEAD's or the stopped
    commit's own version of the file holds is the file's text (a note on reading conflicts), not
    one the merge wrote."""
    out = store.git("diff", "--cached", "--raw", "-z", "--no-abbrev", "--no-renames", "--diff-filter=AM", "HEAD",
                    "--", store.prefix or ".").stdout.decode("utf-8", "surrogateescape").split("\0")
    staged = {path: meta.split()[3] for meta, path in zip(out[0::2], out[1::2], strict=False) if path}
    objects = store.objects
    texts = objects.read_many("blob", set(staged.values()))
    marked = {path: lines for path, blob in staged.items() if (lines := _marker_lines(texts[blob]))}
    if not marked:
        return []
    commits = store.git("rev-parse", "-q", "--verify", "HEAD^{commit}").stdout.split()
    commits += store.git("rev-parse", "-q", "--verify", "REBASE_HEAD^{commit}", check=False).stdout.split()
    sides = [objects.blobs_at(objects.tree_of(commit.decode()), marked) for commit in commits]
    own = objects.read_many("blob", {blob for side in sides for blob in side.values() if blob is not None})
    return sorted(path[len(store.prefix):] for path, lines in marked.items()
                  if lines - set().union(*(_marker_lines(own.get(side[path] or "")) for side in sides)))


def _marked_message(root: Path, paths: list[str]) -> str:
    """Why ``--continue`` refuses: files staged with a conflict's markers in them (paths from the
    KB's folder ``root``)."""
    names = ", ".join(paths)
    kb = command_in(root)
    steps = [*cd_step(root), f"edit {names} to keep what both sides meant, then git add {words(*paths)}",
             f"{kb} validate", f"{kb} rebase --continue"]
    return (f"{names} still {'holds' if len(paths) == 1 else 'hold'} git's conflict markers (<<<<<<<, =======, "
            f">>>>>>>), so continuing would commit them as they are; {'; '.join(steps)}.")


def _pushed(store: GitStore, remote: str, branch: str, head: str, onto: str) -> int:
    """How many of the commits a rebase of ``branch`` (at ``head``) onto ``onto`` rewrites are
    already on its remote branch, the one ``sync`` pushes to, of the same name; 0 for a detached HEAD."""
    tracking = store.tip(f"refs/remotes/{remote}/{branch}") if branch else ""
    if not tracking:
        return 0
    tip = store.git("merge-base", head, tracking, check=False).stdout.decode().strip()
    return int(store.git("rev-list", "--count", tip, f"^{onto}").stdout.decode().strip() or 0) if tip else 0


def _rebasing(store: GitStore) -> tuple[str, str, str]:
    """(the branch, "" for a detached HEAD; its commit when it began; the commit it goes onto)
    of the rebase in progress, as git keeps them."""
    folder = rebase_folder(store.git_dirs()[0])
    assert folder is not None, "asked only while a rebase is in progress"
    head_name, started, onto = ((folder / name).read_text(encoding="utf-8").strip()
                                for name in ("head-name", "orig-head", "onto"))
    return head_name.removeprefix("refs/heads/") if head_name.startswith("refs/heads/") else "", started, onto


def _pushed_message(root: Path, remote: str, upstream: str, branch: str, count: int) -> str:
    """Why a rebase of pushed commits is refused: the next sync would replay the rewritten commits
    onto the pushed ones, ``upstream``'s among them, each again under another commit."""
    kb, push = command(root), git_command(root, f"push --force-with-lease {words(remote, branch)}")
    ref = words(upstream)
    return (
        f"Branch '{branch}' has {count} commit{'s' if count != 1 else ''} already pushed to {remote}/{branch} that a "
        f"rebase onto {upstream} would rewrite, and its next sync would put the rewritten commits, {upstream}'s "
        f"among them, on top of the pushed ones as copies. Take {upstream} in with '{kb} merge {ref}' "
        f"instead (it keeps what was pushed); to rewrite the branch anyway, run '{kb} rebase --rewrite-pushed "
        f"{ref}' and push it with '{push}' (not {kb} sync)."
    )


def start_args(store: GitStore, bases: list[str], ours: str, onto: str) -> list[str]:
    """The arguments of ``git rebase`` (``run``'s) that replays ``ours`` onto ``onto`` (commits;
    parted at ``bases``), for ``slayer-kb rebase`` and sync's rebase alike: git's rename guess held
    to exact moves where it pairs only forgets and new saves, a fold whose memory kept was
    forgotten since among them (``carry.forgotten_folds``: paired, an edit of the folded memory
    would bring the forgotten one back). Given at the start, git keeps the -X for --continue."""
    forgotten = forgotten_folds(store, bases[0], (onto, ours)) if len(bases) == 1 else set()
    return [*rename_detection(store, bases, (ours, onto), replays=True, not_moves=forgotten), "-q", onto]


def run(store: GitStore, args: list[str], onto: str, written: list[str] | None,
        seen: str = "", followed: dict[str, dict[str, str]] | None = None
        ) -> tuple[list[str], dict[str, set[int]]] | None:
    """``git rebase ARGS`` (``-q UPSTREAM``, ``--continue`` or ``--abort``) with the KB's merge driver, dropping commits that became empty once
    merged; None when it finished, else the unmerged paths and the stages git holds for each
    (``held``), with the rebase stopped on them. ``onto`` names the upstream in conflict markers;
    ``written``: the KB's files either side's commits wrote since they parted
    (``snapshot.written_on_either``), the ones git can hand the driver
    (``mergedriver.require_driver``); ``seen``: the upstream as sync's fetch before found it
    (``first_version``); ``followed``: given each memory a pick edited, forgot or renamed that the
    upstream had folded into another, its change carried there (``carry.follow_folds``; None:
    git decides, as sync's replay, which carries such an edit itself)."""
    options, env, attributes = mergedriver.git_config(store.prefix, (onto, "your commits"))
    # The merge backend whatever rebase.backend says: a pick that meets git's index lock is put
    # back on its to-do list, and '--continue' goes on from it (the apply backend's --continue
    # finds nothing staged, and only --skip, which drops the commit, goes on).
    options += ["-c", "rebase.backend=merge", "-c", "core.editor=true"]
    going_on = (*options, "rebase", "--continue")
    try:
        if args != ["--abort"]:
            mergedriver.require_driver(store, options, written, None if args[-1].startswith("--") else args[-1])
        proc = store.git_writing_index(*options, "rebase", *args, check=False, env=env,
                                       resume=going_on if args != ["--abort"] else ())
        while proc.returncode != 0:
            stopped = unmerged(store)
            carried = bool(stopped) and followed is not None and _follow(store, onto, followed)
            if carried:
                stopped = unmerged(store)
            if stopped and not settle(store, stopped, "REBASE_HEAD", seen):
                return stopped, held_stages(store, "REBASE_HEAD", seen)
            if stopped or carried:
                proc = store.git_writing_index(*going_on, check=False, env=env)
                continue
            if store.git("diff", "--cached", "--quiet", check=False).returncode or not in_progress(store):
                raise StoreError(f"git rebase failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
            # Our commit became empty once merged (the upstream had the same change): drop it.
            proc = store.git_writing_index(*options, "rebase", "--skip", check=False, env=env, resume=going_on)
    finally:
        attributes.unlink(missing_ok=True)
    return None


def _follow(store: GitStore, onto: str, followed: dict[str, dict[str, str]]) -> bool:
    """``carry.follow_folds`` at a pick's stop: git replays an edit of a memory the upstream folded
    away as an edit of a file it deleted, and a step keeping that file would hold the topic key twice."""
    ours, pick = store.git("rev-parse", "HEAD", "REBASE_HEAD").stdout.decode().split()
    parted = store.git("merge-base", ours, pick, check=False).stdout.decode().strip()
    return bool(parted) and follow_folds(store, parted, (ours, pick), (onto, "your commits"), followed)


def in_progress(store: GitStore) -> bool:
    return rebase_folder(store.git_dirs()[0]) is not None




def conflict_message(store: GitStore, paths: list[str], held: dict[str, set[int]], upstream: str,
                     first: tuple[str, ...] = (), stopped_at: str | None = None, push: str | None = None, *,
                     tips: tuple[str, ...], folded: Collection[str] = ()) -> str:
    """What conflicts on ``paths`` (repository-relative; ``held``: their stages, 2 the upstream's
    version, 3 this branch's, a side missing having deleted the file) and the steps to merge them,
    ending with ``push``: after ``first`` (sync's fetch and its rebase's start) when sync put the
    repository back, or from where ``slayer-kb rebase`` stopped (``stopped_at``). ``tips``: the
    commits of both sides (``conflict_steps``)."""
    what, steps = conflict_steps(store, paths, held, upstream, "Your commits", tips=tips, folded=folded)
    kb = command_in(store.root)
    steps = [*cd_step(store.root), *first, *steps, f"{kb} validate",
             f"{kb} rebase --continue (a later commit that stops says so again)", push or f"{kb} sync"]
    where = ("the repository is back as it was" if stopped_at is None else
             f"the rebase stopped at {stopped_at}, and {command(store.root)} rebase --abort would put the branch back "
             "as it was")
    return what + f"; {where}. To merge by hand: " + "; ".join(steps) + "."


def _onto_name(store: GitStore) -> str:
    """The branch the rebase in progress goes onto, by name where one points at it (git keeps
    only the commit)."""
    git_dir = store.git_dirs()[0]
    for folder in ("rebase-merge", "rebase-apply"):
        onto = git_dir / folder / "onto"
        if onto.exists():
            oid = onto.read_text().strip()
            names = store.git("for-each-ref", f"--points-at={oid}", "--format=%(refname:short)",
                              "refs/remotes", "refs/heads").stdout.decode().split()
            names = [name for name in names if not name.endswith("/HEAD")]  # origin/HEAD: say origin/main
            return names[0] if names else oid[:12]
    return "the upstream"


def _stop(store: GitStore) -> str:
    """The commit the rebase stopped at: its subject, and which of how many it is."""
    subject = store.git("log", "-1", "--format=%s", "REBASE_HEAD",
                        check=False).stdout.decode().strip()
    folder = store.git_dirs()[0] / "rebase-merge"
    counts = [(folder / name).read_text().strip() for name in ("msgnum", "end") if (folder / name).exists()]
    return (f"commit {counts[0]} of {counts[1]} " if len(counts) == 2 else "") + f"('{subject}')"


def unmerged(store: GitStore) -> list[str]:
    """The unmerged paths (repository-relative)."""
    out = store.git("diff", "--name-only", "-z", "--diff-filter=U").stdout.decode("utf-8", "surrogateescape")
    return sorted(set(filter(None, out.split("\0"))))


def settle(store: GitStore, paths: list[str], incoming: str, seen: str = "") -> bool:
    """Merge each of ``paths`` that HEAD and ``incoming`` (``REBASE_HEAD``, ``MERGE_HEAD``) added
    as one memory (a pull request merged by squash or rebase, then edited on one side) from the
    version both added, which git's merge base lacks, so it stopped on an add/add; and let go
    each memory one side forgot (deleted) and the other only soft-forgot or stripped of its links
    to memories it forgot, as sync's replay does (nothing to keep); whether every path was
    settled. Edits on both sides stay a conflict, unless the KB's merge driver merges them (a
    topic key). A save whose commit a side rewrote is merged from the version ``seen`` held
    (``first_version``)."""
    stages = unmerged_stages(store)
    forgotten = _both_forgot(store, {p: blobs for p, blobs in stages.items() if p in paths}, incoming)
    if forgotten:
        store.git_writing_index("rm", "-q", "-f", "--", *forgotten, env=LITERAL_PATHS)
    settled = len(forgotten)
    for path, blobs in stages.items():
        base = first_version(store, path, incoming, seen) if path in paths and set(blobs) == {2, 3} else None
        if base is not None:
            (_, ours), (mode, theirs) = blobs[2], blobs[3]  # HEAD's, incoming's
            settled += merge_from(store, path, mode, (base, ours, theirs))
    return settled == len(paths)


def _both_forgot(store: GitStore, stages: dict[str, dict[int, tuple[str, str]]], incoming: str) -> list[str]:
    """The memory files among ``stages`` (their unmerged stages) that one side deleted (a
    ``forget``: git holds the base and one side) while the other only set ``deleted_at``, or only
    stripped its links to memories that other side forgot (HEAD's at stage 2, ``incoming``'s at 3)."""
    deleted = {path: (blobs[1][1], blobs[2 if 2 in blobs else 3][1], "HEAD" if 2 in blobs else incoming)
               for path, blobs in stages.items() if set(blobs) in ({1, 2}, {1, 3}) and path.startswith(store.prefix)
               and id_of_path(path[len(store.prefix):]) is not None}
    texts = {oid: text.decode("utf-8", "replace") for oid, text in store.objects.read_many(
        "blob", {blob for base, kept, _side in deleted.values() for blob in (base, kept)}).items()}

    return [path for path, (base, kept, side) in deleted.items()
            if mergedriver.soft_forgotten(path, texts[base], texts[kept])
            or mergedriver.cascade_stripped(path, texts[base], texts[kept], forgot_at(store, side))]


def merge_from(store: GitStore, path: str, mode: str, blobs: tuple[str, str, str]) -> bool:
    """Put in git's index and the work tree ``mergedriver.merged_blob`` of ``path``'s ``blobs``;
    whether it could."""
    take = mergedriver.merged_blob(store, path, blobs)
    if take is None:
        return False
    store.git_writing_index("update-index", "--cacheinfo", f"{mode},{take},{path}")
    store.git_writing_index("checkout", "--", path, env=LITERAL_PATHS)
    return True


def first_version(store: GitStore, path: str, incoming: str, seen: str = "") -> str | None:
    """The version of ``path`` both HEAD's and ``incoming``'s changes start from, which git's merge
    base (from before either added it) lacks: the one both added alike (``added_alike``), or, of a
    save whose commit one side rewrote (amended, force-pushed), the one ``seen`` held, the upstream
    as this clone last fetched it (``rewritten_alike``); None when they are two files."""
    first = added_alike(store, path, "HEAD", incoming)
    if first is None and seen:
        ours, theirs = store.git("rev-parse", "HEAD", incoming).stdout.decode().split()
        first = rewritten_alike(store, [path], seen, ours, theirs).get(path)
    return first


def held_stages(store: GitStore, incoming: str, seen: str = "") -> dict[str, set[int]]:
    """The stages git holds for each unmerged path: 1 the base, 2 the upstream's version, 3 this
    branch's (in a rebase); a side missing deleted the file (a ``forget``), a side's stage negated
    (-2, -3) only set the memory's ``deleted_at`` (``forget --soft``: the file stays, so git sees an
    edit). A file HEAD and ``incoming`` both added as one memory (``first_version``, given ``seen``)
    and then edited holds 1 too:
    two edits of one memory, where a file with no base is one both sides created."""
    stages = unmerged_stages(store)
    # Only a path with all three stages can hold a soft forget: only their blobs are read.
    edited = {path: blobs for path, blobs in stages.items() if {1, 2, 3} <= set(blobs)}
    texts = {oid: text.decode("utf-8", "replace") for oid, text in store.objects.read_many(
        "blob", {blob for blobs in edited.values() for _mode, blob in blobs.values()}).items()}
    held = {path: set(blobs) for path, blobs in stages.items()}
    for path, blobs in edited.items():
        base = texts[blobs[1][1]]
        held[path] = {1, *(-n if mergedriver.soft_forgotten(path, base, texts[blobs[n][1]]) else n for n in (2, 3))}
    for path, blobs in stages.items():
        if set(blobs) == {2, 3} and first_version(store, path, incoming, seen) is not None:
            held[path] = {1, 2, 3}
    return held


def swap_sides(held: dict[str, set[int]]) -> dict[str, set[int]]:
    """``held`` with stages 2 and 3 swapped (their soft forgets too): a merge holds this branch's
    version at stage 2 and the other side's at 3, the other way round from a rebase's."""
    return {path: {(5 - abs(n)) * (1 if n > 0 else -1) if abs(n) in (2, 3) else n for n in stages}
            for path, stages in held.items()}

