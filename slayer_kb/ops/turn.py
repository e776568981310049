"""A sync's turn at the remote: a clone whose push was refused asks the others to hold back.

Pushing optimistically, a clone that was refused races again with every clone that arrives
meanwhile, and under contention each lost race is another fetch, replay and push, on a machine
whose CPU the others need too. After its first refused push a sync takes the turn: it creates
the ref ``refs/slayer-kb/turn/<branch>`` on the remote, only if it does not exist (``git push
--force-with-lease=<ref>:``, atomic as for id leases), and the push that moves the branch deletes
it in the same atomic push (``git push --atomic``). Every sync fetches the remote's turns with
the branch, in the same fetch; one that finds another clone's turn waits instead of pushing,
fetching again until the turn is gone. A turn that stood unchanged for ``TURN_SECONDS`` (its
holder died or hangs) is taken over, compare-and-swap; a sync that fails gives its turn back.
"""

from __future__ import annotations

import os
import secrets
import socket
import time

from ..store import claims
from ..store.repo import GitStore

NAMESPACE = "refs/slayer-kb/turn/"
# Where a clone keeps the remote's turns it fetched: refs/slayer-kb/seen-turn/<remote>/<branch>.
SEEN = "refs/slayer-kb/seen-turn/"
# A turn no push released for this long is taken over: far above what one attempt takes under
# load (seconds), so a live holder never loses it.
TURN_SECONDS = 20.0
# How often a sync waiting for another clone's turn looks again (each look is one fetch), and
# how long it waits in all before it races as without turns (a bound on a run of others' turns).
POLL_SECONDS = 0.25
QUEUE_SECONDS = 120.0


class Turn:
    """This sync's view of the remote's turn on one branch."""

    def __init__(self, store: GitStore, remote: str, branch: str) -> None:
        self.store = store
        self.remote = remote
        self.ref = NAMESPACE + branch
        self.seen = f"{SEEN}{remote}/{branch}"
        self.mine: str | None = None  # the object of the turn this sync holds
        self.refused = False  # the remote refuses turns: none is asked for again
        self._other: tuple[str, float] | None = None  # another's turn, and when first seen

    def refspec(self) -> str:
        """For the sync's fetch: the remote's turns (a pattern, so that none is no error)."""
        return f"+{NAMESPACE}*:{SEEN}{self.remote}/*"

    def free(self, holder: str) -> bool:
        """Whether this sync may push, the remote's turn being ``holder`` ("" for none): no turn,
        its own, or another's it has just taken over because it stood too long."""
        if self.mine is not None and holder != self.mine:
            self.mine = None  # taken over (this sync stood too long): it is another's now
        if not holder or holder == self.mine:
            self._other = None
            return True
        if self._other is None or self._other[0] != holder:
            self._other = (holder, time.monotonic())
            return False
        if time.monotonic() - self._other[1] < TURN_SECONDS:
            return False
        return self._claim(holder)

    def take(self) -> None:
        """Ask for the turn after a refused push (another clone may have taken it first: the
        next fetch tells)."""
        if self.mine is None and not self.refused:
            self._claim("")

    def handed_back(self) -> tuple[list[str], list[str]]:
        """(options, refspecs) the push that moves the branch adds to give the turn back in the
        same atomic push: both or neither."""
        if self.mine is None:
            return [], []
        return ["--atomic", f"--force-with-lease={self.ref}:{self.mine}"], [f":{self.ref}"]

    def pushed(self) -> None:
        self.mine = None

    def give_back(self) -> None:
        """A sync that stops without pushing gives its turn back (never fails)."""
        if self.mine is not None:
            # --no-verify: the turn is slayer-kb's bookkeeping, as leases are (claims.claim_each).
            claims.network(self.store, "push", "-q", "--no-verify", self.remote,
                           f"--force-with-lease={self.ref}:{self.mine}", f":{self.ref}")
            self.mine = None

    def _claim(self, expected: str) -> bool:
        """Create the turn (``expected`` "") or take over ``expected``'s; whether it is ours."""
        turn = claims.holder_commit(
            self.store, f"sync turn of {socket.gethostname()} pid {os.getpid()} {secrets.token_hex(4)}\n")
        # Unreachable now, just after a fetch: as a refusal, the sync races as without turns.
        outcome = (claims.claim(self.store, self.remote, turn, {self.ref: expected}) or {}).get(self.ref, claims.REFUSED)
        if outcome == claims.CREATED:
            self.mine = turn
            self._other = None
        elif outcome == claims.REFUSED:
            self.refused = True
        return outcome == claims.CREATED
