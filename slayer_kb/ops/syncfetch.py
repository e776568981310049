"""``sync``'s fetch: the upstream branch, the remote's turns and its block refs in one ``git
fetch``, waiting while another clone has the turn; and the refusal to make a renamed default
branch again beside the new one."""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable

from ..core.errors import InvalidInputError, KBError, StoreError
from ..core.problems import cd_step, command, command_in, git_command, shell_word, words
from ..core.text import MAX_SHOWN, shown_value
from ..store.bounded import explain
from ..store.claims import talk
from ..store.leaseheld import block_named
from ..store.leases import IdLeases
from ..store.repo import GitStore
from .syncpush import unreachable
from .turn import POLL_SECONDS, QUEUE_SECONDS, Turn

_JITTER = random.Random()  # noqa: S311 (spreads the looks of waiting clones; nothing secret)


def no_remote(store: GitStore, remote: str) -> InvalidInputError:
    """The refusal of a sync with ``remote``, which the repository has no remote named: the
    remotes it has to sync with instead, and how to add this one (``git remote add``)."""
    name = shell_word(remote) if len(remote) <= MAX_SHOWN else "NAME"  # the fix is not to carry it whole either
    add = git_command(store.root, f"remote add {name} URL")
    names = store.git("remote").stdout.decode().split()
    if not names:
        return InvalidInputError(f"No git remote named {shown_value(remote)}, and this repository has no remote: add "
                                 f"one ({add}), then sync.")
    known = ", ".join(map(shown_value, names[:10])) + (", ..." if len(names) > 10 else "")
    return InvalidInputError(f"No git remote named {shown_value(remote)}; the remotes here: {known}. Sync with one "
                             f"of them ({command(store.root)} sync --remote {words(names[0])}), or add "
                             f"{shown_value(remote) if name != 'NAME' else 'it'} ({add}).")


class Fetch:
    """A sync's fetch: the upstream branch, the remote's turns (``turn.py``) and, when ids are
    leased from this remote, its block refs (``IdLeases.watch``), in one ``git fetch``."""

    def __init__(self, store: GitStore, leases: IdLeases, remote: str, upstream_branch: str, tracking: str,
                 turn: Turn) -> None:
        self.store, self.remote, self.branch, self.tracking, self.turn = store, remote, upstream_branch, tracking, turn
        self.leases, self.watch = leases, leases.watch(remote)
        # The remote's block refs (block -> commit) as the fetch that got them saw them: the first
        # that succeeded; the fetches that follow (a wait for the turn, a push refused) leave them.
        self.blocks: dict[int, str] | None = None
        self.given_up: list[str] = []  # the spans of the blocks given up (``IdLeases.keep``)

    def __call__(self) -> tuple[str, str]:
        """Fetch: (the upstream's tip, "" when the remote has no such branch; the turn's holder,
        "" for none)."""
        store, remote, turn = self.store, self.remote, self.turn
        # Only what the pull needs, in the race with other clones: no FETCH_HEAD file, no check for
        # forced updates, no automatic gc (the KB's own upkeep packs the repository). --prune drops
        # the copy of a turn given back, or of a block ref deleted (only refs the refspecs name).
        watch = self.watch if self.blocks is None else None
        proc = talk(store, remote, "fetch", "-q", "--prune", "--no-auto-gc", remote,
                    f"+refs/heads/{self.branch}:{self.tracking}", turn.refspec(), *(watch[0] if watch else ()),
                    config=("fetch.writeFetchHEAD=false", "fetch.showForcedUpdates=false"))
        # A remote without the branch yet (the first push) fails the fetch too: only a remote that
        # cannot be read stops the sync, which must never say "up to date" from a stale tracking ref.
        if proc.returncode != 0:
            said = talk(store, remote, "ls-remote", "-q", "--symref", remote, "HEAD", f"refs/heads/{self.branch}")
            if said.returncode != 0:
                raise unreachable(store, remote, "fetch from", proc.stderr, "Nothing was pulled or sent")
            heads = said.stdout.decode("utf-8", "surrogateescape")
            # The remote has the branch: the fetch failed for a reason of its own (a lock a killed git
            # left here), not for a branch renamed or not pushed yet.
            if any(line.endswith(f"\trefs/heads/{self.branch}") for line in heads.splitlines()):
                raise self._failed_here(proc.stderr)
            self._refuse_renamed(heads)
        copies = watch[1] if watch and proc.returncode == 0 else ()
        out = store.git("for-each-ref", "--format=%(objectname) %(refname)", self.tracking, turn.seen,
                        *copies).stdout.decode()
        tips = {ref: oid for oid, _, ref in (line.partition(" ") for line in out.splitlines())}
        if copies:
            self.blocks, claimed = ({block: oid for ref, oid in tips.items() if ref.startswith(prefix)
                                     and (block := block_named(ref[len(prefix):])) is not None} for prefix in copies)
            # Before any renumbering draws ids: a block another clone took supplies none.
            with contextlib.suppress(KBError):
                self.given_up += self.leases.keep(self.blocks, claimed)
        return tips.get(self.tracking, ""), tips.get(turn.seen, "")

    def _failed_here(self, said: bytes) -> StoreError:
        """A fetch that failed though the remote answers and has the branch: git's words (``said``)."""
        return StoreError(
            f"git fetch from {self.remote} failed, though {self.remote} answers and has '{self.branch}': "
            f"{explain(said.decode('utf-8', 'replace').strip())} Nothing was pulled or sent and this clone is as it "
            f"was: its saves stay here and the next sync sends them. Fix what git names, then run "
            f"{command(self.store.root)} sync again."
        )

    def _refuse_renamed(self, said: str) -> None:
        """The remote has no branch of this name. When it was the remote's default as this clone
        knows it (``refs/remotes/REMOTE/HEAD``, which ``git clone`` sets) and the remote's HEAD
        (``said``: ``ls-remote --symref REMOTE HEAD``) now names another branch, the branch was
        renamed (or the default changed): a push would make it again beside the new one, and the
        team's memories would part silently. Any other branch (an agent's, deleted once merged)
        is made again, as a first push makes it."""
        default = default_branch(said)
        if len(said.splitlines()) < 2 or not default or default == self.branch:
            return  # no default, or one that does not exist (a bare repository's HEAD to a deleted branch)
        knew = self.store.git("symbolic-ref", "-q", f"refs/remotes/{self.remote}/HEAD", check=False).stdout.decode()
        if knew.strip() != self.tracking:
            return
        remote, branch, root = self.remote, self.branch, self.store.root
        # A --single-branch clone fetches the old branch alone, which now fails the fetch (and git
        # branch -u takes no ref outside what it fetches): it is to fetch the new one instead.
        fetched = self.store.git("config", "--get-all", f"remote.{remote}.fetch", check=False).stdout.decode()
        single = [] if "refs/heads/*:" in fetched else [f"git remote set-branches {remote} {words(default)}"]
        # Joined with &&, so that a step that fails stops the rest.
        steps = [*cd_step(root), *single, f"git fetch {remote}", f"git branch -m {words(branch)} {words(default)}",
                 f"git branch -u {words(f'{remote}/{default}')}", f"git remote set-head {remote} -a", f"{command_in(root)} sync"]
        raise InvalidInputError(
            f"{remote} has no branch '{branch}' any more, and its default branch is now '{default}' (renamed, or the "
            f"default changed): a sync would make '{branch}' again beside it, and the team's memories would part "
            f"between the two. Nothing was pulled or sent. To go on with {default}: {' && '.join(steps)}. To make "
            f"'{branch}' again on {remote} instead: {git_command(root, f'push -u {remote} {words(branch)}')}."
        )

    def in_turn(self, lap: Callable[[str], None]) -> str:
        """Fetch; while another clone has the turn, wait and fetch again, for at most
        ``QUEUE_SECONDS`` (then race as without turns); ``lap`` times each fetch and wait. The
        upstream's tip."""
        deadline = time.monotonic() + QUEUE_SECONDS
        while True:
            upstream, holder = self()
            lap("fetch")
            if self.turn.free(holder) or time.monotonic() > deadline:
                return upstream
            time.sleep(_JITTER.uniform(0.5, 1.5) * POLL_SECONDS)
            lap("queue")


def default_branch(said: str) -> str:
    """The branch a remote's HEAD names in ``said``, the output of ``git ls-remote --symref REMOTE
    HEAD`` ('' when it names none)."""
    return next((line.removeprefix("ref: refs/heads/").partition("\t")[0] for line in said.splitlines()
                 if line.startswith("ref: refs/heads/") and line.endswith("\tHEAD")), "")
