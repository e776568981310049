"""Auto ids a team can share: blocks of ids leased through refs on the remote.

SLayer's contract is an int-shaped, monotonic auto id ("1", "2", ...). A KB with no remote counts
1, 2, 3 as before. A KB whose repository has a remote hands out ids from *blocks* of ``BLOCK``
ids that this clone leased by creating the ref ``refs/slayer-kb/ids/<k>`` on the remote (block
``k`` is the ids ``k*BLOCK+1 .. (k+1)*BLOCK``). git creates a ref atomically or refuses it
(``--force-with-lease=<ref>:`` with nothing expected means "only if it does not exist"), so no two
clones ever hold the same block, and no two agents are ever handed the same id, whatever
branches they work on: nothing is renumbered when their work meets.

Each clone keeps its leases in its git folder (``slayer-kb-ids.json`` beside ``config``, shared by
its worktrees, under a lock of its own), so every branch of one clone draws from the same blocks.
The file names the git folder it belongs to (its device and inode, which a move keeps and a copy
never has): a copy of the clone (``cp -r``) finds another folder's file and leases afresh, since
the original goes on drawing from those blocks.

A number given for a new memory (``save --id 5000``) in a block no clone leased claims the block:
the ref ``refs/slayer-kb/claims/<k>``, in a namespace of its own. No lease takes a claimed block,
and the ids in claimed blocks say nothing about where the next lease goes (it goes above the
leases and above every other auto id the branch has held, never into the offline range), so one
large number moves no clone's auto ids, and an id handed out before leases, forgotten since, is
never handed out again. The claim's commit names the number it was made for, which another
clone online is then refused (``may_give``). Nor does a lease take a block the branch holds an
id of, or one this clone's lease state records (``leasepick.busy``): a remote that lost its
refs (moved by its branches alone) no longer says the block is another clone's, which may still
be drawing on it.

Ids stay small and readable (a team of eight writes 27, 28, 101, 102, 201 ...) and increase
within a clone. A lease costs one ``git ls-remote`` and one ``git push`` per ``BLOCK`` saves;
``sync`` leases the next block ahead of need, so most saves never touch the network.

Offline (the remote cannot be reached), a save still gets an id: from a block chosen at random
among ``OFFLINE_BLOCKS`` blocks far above the leased ones (ten-digit ids, 1,000,000,001 to
9,000,000,000), recorded as unregistered; the next ``sync`` creates its ref on the remote. Two
offline clones pick the same block with odds of 1 in ``OFFLINE_BLOCKS``; should it happen,
``sync`` renumbers as it does for ids allocated before leases existed, and says so.

A remote that answers but refuses the refs (a read-only clone, a hook, a protected namespace)
cannot lease either: this clone draws offline blocks as above, without asking the remote again
on each save, and every ``sync`` asks it again (to register them, and to lease). Counting 1, 2, 3
as a KB without a remote does would hand out the ids of other clones' leased blocks. The save or
sync that falls back says so once, with the reason (``note``). The pushes skip the clone's own
pre-push hook (claims.py): they are slayer-kb's bookkeeping, not a person's work.

``git config slayer-kb.ids sequential`` turns leases off (every clone counts on its own, and
``sync`` renumbers collisions); ``slayer-kb.remote`` names the remote to lease from (default:
the current branch's remote, else ``origin``).
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import os
import random
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import StoreError
from ..core.fileio import write_whole
from ..core.problems import command
from ..core.text import MAX_SHOWN
from . import claims
from .identity import Sources, sources
from .leaseheld import BLOCK, OFFLINE_FIRST, Leases, block_named, block_of, first_of, history_of
from .repo import GitStore

NAMESPACE = "refs/slayer-kb/ids/"
CLAIMS = "refs/slayer-kb/claims/"
# Offline blocks: k in [OFFLINE_FIRST, OFFLINE_FIRST + OFFLINE_BLOCKS), ids 1,000,000,001 and up.
OFFLINE_BLOCKS = 80_000_000
# ``sync`` leases another block when fewer ids than this are left in hand.
SPARE = BLOCK // 2
# A lease that races another clone for the same block tries the next free one this many times.
ATTEMPTS = 12
# Where sync's fetch copies the remote's block refs: refs/slayer-kb/seen-ids/<remote>/<k>, and
# its claims: refs/slayer-kb/seen-claims/<remote>/<k>.
SEEN = "refs/slayer-kb/seen-ids/"
SEEN_CLAIMS = "refs/slayer-kb/seen-claims/"
STATE_FILE = "slayer-kb-ids.json"
LOCK_FILE = "slayer-kb-ids.lock"


@dataclass(frozen=True)
class Remote:
    name: str
    url: str


@dataclass(frozen=True)
class RemoteBlocks:
    """The blocks on the remote: leased (with the commit each ref points at) and claimed for
    numbers given with ``--id`` (which hand out no auto ids, and no lease takes)."""

    leased: dict[int, str]
    claimed: set[int]
    claims: dict[int, str] = field(default_factory=dict)  # each claimed block's ref's commit


def _span(block: int) -> str:
    return f"{first_of(block)}-{first_of(block) + BLOCK - 1}"


class IdLeases:
    """The leases of the repository of ``store`` (see the module doc)."""

    def __init__(self, store: GitStore) -> None:
        self.store = store
        self._config_seen: Sources | None = None
        self._config: dict[str, str] = {}
        self._fallback: str | None = None  # why ids were drawn offline, until ``note`` tells it
        self._said = ""  # what git said of the last refused push of our refs
        self.claim_said = ""  # the claim that refused the last number given (``may_give``)

    # -- settings ------------------------------------------------------------------------------

    @property
    def common_dir(self) -> Path:
        """The git folder the clone's worktrees share (where leases are kept)."""
        return self.store.git_dirs()[1]

    def settings(self) -> dict[str, str]:
        """The config keys leases and ``sync`` depend on (the remotes' urls, each branch's
        upstream), read again only when what git reads them from changed (``identity.sources``:
        the environment and every config file, the user's and the system's too); the store takes
        who commits from the same read."""
        seen = sources(*self.store.git_dirs())
        if seen != self._config_seen:
            found = self.store.identity.with_config(r"slayer-kb\.(ids|remote)|remote\..*\.url|branch\..*\.(remote|merge)",
                                                    seen)
            config: dict[str, str] = {}
            for item in found.decode("utf-8", "surrogateescape").split("\0"):
                key, _, value = item.partition("\n")
                if key:
                    config[key.lower() if key.count(".") < 2 else key] = value
            self._config, self._config_seen = config, seen
        return self._config

    def remote(self) -> Remote | None:
        """The remote ids are leased from, or None when this KB counts on its own."""
        config = self.settings()
        if config.get("slayer-kb.ids", "").strip().lower() == "sequential":
            return None
        if not any(key.startswith("remote.") for key in config):
            return None
        name = self._remote_name(config)
        url = config.get(f"remote.{name}.url")
        return Remote(name, url) if url else None

    def remote_name(self) -> str:
        """The remote this clone shares with (``sync``'s too): ``slayer-kb.remote``, else the
        current branch's remote, else ``origin``."""
        return self._remote_name(self.settings())

    def _remote_name(self, config: dict[str, str]) -> str:
        name = config.get("slayer-kb.remote", "").strip()
        if not name:
            branch = self._branch()
            name = config.get(f"branch.{branch}.remote", "") if branch else ""
            if not name or name == ".":
                name = "origin"
        return name

    def _branch(self) -> str | None:
        try:
            head = (self.store.git_dirs()[0] / "HEAD").read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return head[len("ref: refs/heads/"):] if head.startswith("ref: refs/heads/") else None

    def note(self) -> str | None:
        """Why the last lease fell back to an offline block (unreachable, refused and what the
        remote said, beaten to every block), once: for the save or sync to tell."""
        told, self._fallback = self._fallback, None
        return told

    # -- taking ids ----------------------------------------------------------------------------

    def take(self, count: int, floor: int, taken: Callable[[int], bool]) -> list[str] | None:
        """``count`` fresh ids from this clone's blocks, leasing blocks above ``floor`` (the highest
        auto id the branch has seen) as needed; ids for which ``taken`` is true (a file already
        has the name) are skipped. None when this KB does not lease ids (no remote, or
        ``slayer-kb.ids sequential``): the caller counts as without a remote."""
        remote = self.remote()
        if remote is None:
            return None
        with self._locked():
            held = self._load(remote)
            ids: list[int] = []
            while len(ids) < count:
                n = self._next_in_hand(held)
                if n is None:
                    self._lease(remote, held, floor, blocks=-(-(count - len(ids)) // BLOCK))
                    continue
                if not taken(n):
                    ids.append(n)
            self._save(held)
        return [str(i) for i in ids]

    def unleased(self, count: int, floor: int, taken: Callable[[int], bool]) -> list[str]:
        """For a clone that counts on its own: ``count`` ids above ``floor`` and in no block
        leased or claimed on the shared remote (one ``ls-remote``), as a lease would skip them:
        another clone hands those out. Unreachable, simply the next ones ``taken`` leaves."""
        remotes = any(key.startswith("remote.") for key in self.settings())  # none: no ls-remote to fail
        there = self._remote_blocks(Remote(self.remote_name(), "")) if remotes else None
        blocked = set() if there is None else set(there.leased) | there.claimed
        free = (n for n in itertools.count(floor + 1) if block_of(n) not in blocked and not taken(n))
        return [str(n) for n in itertools.islice(free, count)]

    def may_give(self, memory_id: int) -> bool | None:
        """Whether a new memory may be given the number ``memory_id`` (``save --id 102``): False
        only when another clone leased its block, and would hand the number out for another
        memory, or when another clone's claim of its block was made for this very number (the claim's
        commit says so, ``claim_said`` then names it: that clone gave it already). True for a block
        this clone ever leased (in hand, used up, or offline); for a block
        claimed for another given number (a claim hands out no auto ids); for a block no clone leased
        or claimed, which is then claimed (its ref created under ``CLAIMS``), so that none leases
        it later; and when the remote cannot be reached (a sync renumbers a collision, and says
        so). One ``ls-remote`` unless this clone leased the block. A block this clone only claimed
        (``Leases.claims``) is asked of the remote all the same: a claim, unlike a lease, does not
        keep another clone from leasing the block (a lease made at the same instant, or after the
        claim was deleted there), and that clone hands the number out. None when this KB does not
        lease ids."""
        self.claim_said = ""
        remote = self.remote()
        if remote is None:
            return None
        block = block_of(memory_id)
        with self._locked():
            held = self._load(remote)
            if block in {k for k, _n in held.blocks} | set(held.unregistered) | {int(k) for k in held.holders}:
                return True
            there = self._remote_blocks(remote)
            if there is None:
                return True
            if block in there.leased:
                return False
            if block in there.claimed:
                # Another clone's claim made for this very number: it gave the number already.
                return held.claims.get(str(block)) == there.claims[block] or not self._claimed_for(
                    remote, block, there.claims[block], memory_id)
            # Created, or not: another clone claimed it first (the number is anyone's to give) or
            # the remote refuses our refs (as when it cannot be reached, a sync renumbers).
            created, _status = self._push(remote, CLAIMS, [block], f"claim ids {_span(block)} for memory {memory_id}")
            if created:
                held.claims.update(created)
                self._save(held)
        return True

    def _claimed_for(self, remote: Remote, block: int, commit: str, memory_id: int) -> bool:
        """Whether the claim of ``block`` (its ref at ``commit``) was made for ``memory_id``; its
        message kept for ``claimed_by``."""
        said = claims.holder_message(self.store, remote.name, f"{CLAIMS}{block}", commit) or ""
        if not said.partition("\n")[0].endswith(f" for memory {memory_id}"):
            return False
        # "claim ids 101-200 for memory 150 (from HOST for KB)", as the holder commit says it
        subject, _, who = said.strip().removeprefix("slayer-kb: ").partition("\n\n")
        said = f"{subject} ({who[:1].lower()}{who[1:].rstrip('.')})" if who else subject
        said = " ".join(said.split())  # one line: an error's lines are the command's, not the remote's
        # Shown in an error: a message of megabytes (anyone can push one) is cut, as values are.
        self.claim_said = said if len(said) <= 3 * MAX_SHOWN else f"{said[:3 * MAX_SHOWN]}... ({len(said)} characters)"
        return True

    def watch(self, remote_name: str) -> tuple[tuple[str, str], tuple[str, str]] | None:
        """For ``sync``'s fetch from ``remote_name``, when ids are leased from it: (the refspecs
        that copy the remote's block refs and its claims, the prefixes of the copies), so that
        ``keep`` checks this clone's blocks and claims at no cost of its own. None when ids are
        not leased from it."""
        remote = self.remote()
        if remote is None or remote.name != remote_name:
            return None
        return ((f"+{NAMESPACE}*:{SEEN}{remote_name}/*", f"+{CLAIMS}*:{SEEN_CLAIMS}{remote_name}/*"),
                (f"{SEEN}{remote_name}/", f"{SEEN_CLAIMS}{remote_name}/"))

    def keep(self, seen: Mapping[int, str], claimed: Mapping[int, str]) -> list[str]:
        """For ``sync``, right after its fetch (before a renumbering draws ids): check this clone's
        blocks against ``seen``, the remote's block refs as the fetch copied them (block ->
        commit), and its claims against ``claimed``, the remote's claims (``_keep``). The spans of
        the blocks given up ("1-100"). Never raises for a remote that cannot be reached."""
        remote = self.remote()
        if remote is None:
            return []
        with self._locked():
            held = self._load(remote)
            before = copy.deepcopy(held)
            given_up = self._keep(remote, held, seen, claimed)
            if held != before:  # a sync that finds every block as the clone left it writes nothing
                self._save(held)
        return [_span(k) for k in given_up]

    def top_up(self, floor: int) -> None:
        """For ``sync``: register offline blocks on the remote, and lease the next block when fewer
        than ``SPARE`` ids are left, so the saves that follow need no network. Never raises for a
        remote that cannot be reached: the ids in hand still serve."""
        remote = self.remote()
        if remote is None:
            return
        with self._locked():
            held = self._load(remote)
            held.refused = False  # try again: the remote may take our refs now
            if held.unregistered:
                created, status = self._create(remote, held, held.unregistered)
                held.refused = status == "refused"  # then no lease either: kept for the next sync
                if status != "answered":
                    # "answered" is created, or taken by a clone that chose it too: no id is leased
                    # in its place, so no fallback to warn of.
                    self._fell_back(remote, status)
                else:
                    # A refused offline block (another clone chose it too): its ids stay with the
                    # memories that have them, and sync renumbers any that collide; no new ids from it.
                    held.blocks = [b for b in held.blocks if b[0] not in held.unregistered or b[0] in created]
                    held.unregistered = []
            if held.left() < SPARE:
                with contextlib.suppress(StoreError):
                    self._lease(remote, held, floor, blocks=1, offline_ok=False)
            self._save(held)

    def _keep(self, remote: Remote, held: Leases, seen: Mapping[int, str], claimed: Mapping[int, str]) -> list[int]:
        """Every block this clone leased must stay leased on the remote, its ref at the commit
        this clone pushed there, or another clone may lease it and hand out its ids. A ref that
        is gone (deleted on the remote, the remote restored from its branches) is made again,
        only if it still does not exist; a block whose ref another clone made since, or that
        points at anything else, is given up (no id is drawn from it again: a number given with
        --id in it is asked of the remote). So is every claim this clone made (not in
        ``claimed``): made again, or, claimed or leased by another clone since, no longer
        this clone's to keep. One push, only when ``seen`` or ``claimed`` differs. The blocks
        given up."""
        for k in [k for k in held.claims if int(k) in seen or int(k) in claimed]:
            if claimed.get(int(k)) != held.claims[k]:
                del held.claims[k]  # another clone's claim or lease holds the block now
        # An offline block another clone registered first (it drew the same one): no id is drawn
        # from it again, the sync's own renumbering of the ids both handed out included.
        other = {k for k in held.unregistered if k in seen and seen[k] != held.holders.get(str(k))}
        held.blocks = [b for b in held.blocks if b[0] not in other]
        held.unregistered = [k for k in held.unregistered if k not in other]
        lost = {f"{NAMESPACE}{k}": commit for k, commit in held.holders.items() if seen.get(int(k)) != commit}
        lost |= {f"{CLAIMS}{k}": commit for k, commit in held.claims.items() if int(k) not in claimed}
        if not lost:
            return []
        gone = self._absent(set(lost.values()))
        if gone:
            # A holder commit this clone no longer has (pruned once unreachable, the remote's ref
            # gone) would fail the whole push ("bad object"): those refs are made at a new one.
            spans = ", ".join(_span(int(ref.rsplit("/", 1)[1])) for ref, c in lost.items() if c in gone)
            fresh = self._holder(f"hold ids {spans} again")
            lost = {ref: fresh if c in gone else c for ref, c in lost.items()}
        outcome = claims.claim_each(self.store, remote.name, {ref: (c, "") for ref, c in lost.items()}) or claims.Outcome()
        given_up = []
        for ref, commit in lost.items():
            said, k = outcome.get(ref), ref.rsplit("/", 1)[1]
            mine = held.holders if ref.startswith(NAMESPACE) else held.claims
            if said == claims.CREATED:
                mine[k] = commit
            elif said == claims.TAKEN:
                del mine[k]
                if ref.startswith(NAMESPACE):
                    held.blocks = [b for b in held.blocks if str(b[0]) != k]
                    given_up.append(int(k))
        return sorted(given_up)

    def _absent(self, commits: set[str]) -> set[str]:
        """Which of ``commits`` this clone's object store lacks (one ``git cat-file``)."""
        out = self.store.git("cat-file", "--batch-check", input="".join(f"{c}\n" for c in commits).encode(),
                             check=False).stdout.decode("utf-8", "replace")
        return {line.split()[0] for line in out.splitlines() if line.endswith(" missing")}

    def _next_in_hand(self, held: Leases) -> int | None:
        """The next id of the first block with ids left (used up blocks are dropped; an offline
        one stays in ``unregistered``: its ids are in memories, so the remote must learn it is
        taken)."""
        while held.blocks:
            k, n = held.blocks[0]
            if n < first_of(k) + BLOCK:
                held.blocks[0][1] = n + 1
                return n
            held.blocks.pop(0)
        return None

    def _lease(self, remote: Remote, held: Leases, floor: int, blocks: int, offline_ok: bool = True) -> None:
        """Create ``blocks`` new block refs on the remote, where ``leasepick.choose`` puts them:
        above every block leased there (not claimed: claimed blocks are skipped), above this
        clone's and above ``floor`` (ids allocated before leases; those in claimed blocks and
        offline ones aside), never in the offline range nor in a block the branch holds an id of;
        this clone's blocks the remote lost made again first (``_keep``). Offline, blocks chosen at
        random (see the module doc), as when the remote refuses our refs (asked again only by
        ``top_up``)."""
        from . import leasepick  # on use: with the memories' listing, only a new lease reads it

        status = ""  # refused at an earlier save: said then
        for attempt in range(0 if held.refused else ATTEMPTS):
            if attempt:  # beaten to it: clones that raced spread out before they try again
                time.sleep(random.uniform(0, min(1.0, 0.05 * 2 ** attempt)))  # noqa: S311
            there = self._remote_blocks(remote)
            if there is None:
                status = "unreachable"
                break
            self._keep(remote, held, there.leased, there.claims)  # this clone's blocks the remote lost
            chosen, floor = leasepick.choose(self.store, held, floor, there.leased, there.claimed, blocks)
            created, status = self._create(remote, held, chosen)
            if status == "refused":
                held.refused = True
                break
            if status == "unreachable":
                break
            held.blocks += [[k, max(first_of(k), floor + 1)] for k in created]
            held.highest = max([held.highest, *created])
            blocks -= len(created)
            if blocks <= 0:
                return
        # Not reached, refused, or beaten to every block tried: ids from an offline block serve
        # meanwhile; they can never be in a block another clone leased.
        self._fell_back(remote, status)
        if not offline_ok:
            raise StoreError(f"The remote {remote.name} cannot be reached to lease ids, or refuses {NAMESPACE}*.")
        for _ in range(blocks):
            k = OFFLINE_FIRST + secrets.randbelow(OFFLINE_BLOCKS)
            held.blocks.append([k, first_of(k)])
            held.unregistered.append(k)

    def _fell_back(self, remote: Remote, status: str) -> None:
        why = {"unreachable": f"the remote {remote.name} cannot be reached",
               "refused": f"the remote {remote.name} refused {NAMESPACE}* ({self._said or 'it gave no reason'})",
               "answered": f"other clones leased every block tried on the remote {remote.name} first"}.get(status)
        if why is not None:
            self._fallback = (f"no block of ids could be leased: {why}. Saves take ten-digit ids from an offline "
                              "block meanwhile, and a sync registers it"
                              + (": let slayer-kb's refs through the remote's hook or rule (or ask whoever runs "
                                 f"it), then run {command(self.store.root)} sync" if status == "refused" else "")
                              + " (docs/teams.md, \"Ids that never change under an agent\").")

    def _remote_blocks(self, remote: Remote) -> RemoteBlocks | None:
        """The blocks leased and claimed on the remote (one ``ls-remote``), or None when it cannot
        be reached."""
        proc = claims.network(self.store, "ls-remote", "--refs", remote.name, f"{NAMESPACE}*", f"{CLAIMS}*")
        if proc is None or proc.returncode != 0:
            return None
        there = RemoteBlocks({}, set())
        for line in proc.stdout.decode("utf-8", "replace").splitlines():
            commit, _, name = line.partition("\t")
            space, _, tail = name.rpartition("/")
            if (block := block_named(tail)) is None:
                continue
            if space + "/" == NAMESPACE:
                there.leased[block] = commit
            elif space + "/" == CLAIMS:
                there.claimed.add(block)
                there.claims[block] = commit
        return there

    def _moved(self, remote: Remote, held: Leases) -> bool:
        """Whether ``remote``, whose url is not the one ``held`` was leased from, is that remote
        moved (``git remote set-url`` to where the repository now is): it holds every block this
        clone leased, each ref at the commit this clone pushed; or, moved by its branches alone (a
        ``git push --all``, a forge's import, a bundle: the block refs left behind), a branch tip
        there is a commit this clone has. Then the refs it lacks are made again (``_keep``), and a
        block another clone leased there since is given up. Another repository (or one that cannot
        be reached, so cannot tell) is not, and its blocks are leased afresh."""
        leased = [str(k) for k, _n in held.blocks if k not in held.unregistered]
        if not leased or any(k not in held.holders for k in leased):
            return False
        there = self._remote_blocks(remote)
        if there is None:
            return False
        if all(there.leased.get(int(k)) == held.holders[k] for k in leased):
            return True
        heads = claims.network(self.store, "ls-remote", "--heads", remote.name)
        tips = {line.split()[0] for line in heads.stdout.decode("utf-8", "replace").splitlines()} if heads else set()
        if heads is None or heads.returncode != 0 or not tips - self._absent(tips):
            return False
        self._keep(remote, held, there.leased, there.claims)
        return True

    def _create(self, remote: Remote, held: Leases, blocks: list[int]) -> tuple[list[int], str]:
        """Create the refs of ``blocks`` on the remote, each only if it does not exist: the blocks
        created (their refs' commit recorded in ``held``), and "answered" (created, or beaten to it
        by another clone), "refused" (the remote answered no: a hook, a protected namespace, no
        right to push) or "unreachable"."""
        # A block this clone registered before (an offline block, on a remote it was set to
        # before another url) goes at the commit it pushed then: back on that remote, the ref
        # there is at it, which says the block is this clone's, not another's.
        known = {str(k): held.holders[str(k)] for k in blocks if str(k) in held.holders}
        gone = self._absent(set(known.values())) if known else set()
        created, status = self._push(remote, NAMESPACE, blocks, f"lease ids {', '.join(map(_span, blocks))}",
                                     {k: c for k, c in known.items() if c not in gone})
        held.holders.update(created)
        return [int(k) for k in created], status

    def _push(self, remote: Remote, namespace: str, blocks: list[int], what: str,
              known: Mapping[str, str] | None = None) -> tuple[dict[str, str], str]:
        """Create the refs ``namespace<k>`` of ``blocks`` on the remote, each only if it does not
        exist (or is at the commit ``known`` gives it), at that commit or else at one that says
        ``what`` and who: the blocks created (as str) with their commits, and the status
        ``_create`` returns."""
        known = known or {}
        commit = self._holder(what) if any(str(k) not in known for k in blocks) else ""
        wanted = {f"{namespace}{k}": (known.get(str(k), commit), "") for k in blocks}
        outcome = claims.claim_each(self.store, remote.name, wanted)
        if outcome is None:
            return {}, "unreachable"
        self._said = outcome.said
        created = {ref[len(namespace):]: wanted[ref][0] for ref, said in outcome.items() if said == claims.CREATED}
        # Every ref refused: the caller has just read the remote's refs, so the remote answered no.
        return created, "refused" if set(outcome.values()) == {claims.REFUSED} else "answered"

    def _holder(self, what: str) -> str:
        """A holder commit that says ``what`` and who, for ``git log refs/slayer-kb/ids/K`` (or
        ``claims/K``): who leased or claimed the block."""
        # socket is imported here, where a block is taken, not by every command that opens a KB.
        import socket

        return claims.holder_commit(
            self.store, f"slayer-kb: {what}\n\nFrom {socket.gethostname()} for {self.store.top.name}.\n")

    # -- the state file ------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        import filelock  # imported on first use, as in GitStore.locked

        lock = filelock.FileLock(str(self.common_dir / LOCK_FILE), timeout=120)
        try:
            with lock:
                yield
        except filelock.Timeout:
            raise StoreError(
                f"Another slayer-kb process has held {self.common_dir / LOCK_FILE} for 120 s; wait and retry."
            ) from None

    def _home(self) -> list[int]:
        """This git folder's (device, inode): a copy of the folder (``cp -r`` of a clone) has
        others, a move on one file system keeps them."""
        st = os.stat(self.common_dir)
        return [st.st_dev, st.st_ino]

    def _load(self, remote: Remote) -> Leases:
        home = self._home()
        try:
            data = json.loads((self.common_dir / STATE_FILE).read_text(encoding="utf-8"))
            held = Leases([int(n) for n in data.get("home", home)], str(data["remote"]),
                          [[int(k), int(n)] for k, n in data["blocks"]], [int(k) for k in data["unregistered"]],
                          int(data["highest"]), bool(data["refused"]),
                          {str(k): str(c) for k, c in data.get("holders", {}).items()}, history_of(data.get("history")),
                          {str(k): str(c) for k, c in data.get("claims", {}).items()})
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return Leases(home, remote.url)
        if held.home != home:
            # A copy of another clone's git folder: its blocks are the original's, which goes on
            # drawing from them. The copy leases its own; it registers the original's offline
            # blocks too (their memories are in both), drawing no ids from them.
            return Leases(home, remote.url, unregistered=held.unregistered)
        if held.remote_url == remote.url:
            return held
        if self._moved(remote, held):
            held.remote_url = remote.url
            return held
        # Blocks leased on another remote mean nothing on this one. Offline blocks keep their ids
        # (used-up ones too) and are registered on this one, those the last remote registered
        # too (at the commit pushed there: ``_create``): drawn from until used up, as before, so
        # that ids go on increasing (a lease there would go below the ten-digit ids handed out).
        offline = [b for b in held.blocks if b[0] >= OFFLINE_FIRST]
        kept = sorted({*held.unregistered, *(k for k, _n in offline)})
        return Leases(home, remote.url, offline, kept,
                      holders={str(k): held.holders[str(k)] for k in kept if str(k) in held.holders})

    def _save(self, held: Leases) -> None:
        path = self.common_dir / STATE_FILE
        try:
            write_whole(path, json.dumps(held.to_json()))
        except OSError as exc:
            raise StoreError(f"Cannot write {path}: {exc.strerror}; is the repository writable?") from None
