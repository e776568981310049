"""Refs a clone claims on a remote: "this clone holds it", said by creating a ref there.

Id leases (leases.py) and a sync's turn (ops/turn.py) push a small commit that says who holds a
block of ids or the turn to a ref under ``refs/slayer-kb/``, only if the remote's ref is what this
clone expects: absent (``--force-with-lease=<ref>:``, git's atomic "create only if it does not
exist"), or the holder a takeover replaces. git refuses the push of a ref another clone created
or moved first, so no two clones ever hold the same one. Every git run here that talks to a
remote is bounded in time (``network`` for the claims, ``talk`` for a sync's fetch and push).
A claim's push skips the clone's own pre-push hook (``claim_each``); a branch push that hook
refused is told from the remote's refusals (``pre_push_hook``).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping

from ..core import problems
from ..core.errors import StoreError
from .bounded import sync_timeout
from .repo import GitStore

CREATED, TAKEN, REFUSED = "created", "taken", "refused"
# How a push says another clone holds the ref: known to the client ("stale info"), or found by
# the remote while it updated the ref ("failed to update ref": "reference already exists").
_TAKEN = ("stale info", "already exists", "fetch first", "failed to update ref", "failed to lock", "cannot lock")
NETWORK_SECONDS = 30.0
_WHO = "slayer-kb <slayer-kb@localhost>"


def holder_commit(store: GitStore, message: str) -> str:
    """An empty commit by slayer-kb whose message says who holds a ref (``git log REF``)."""
    objects = store.objects
    stamp = int(time.time())
    body = (f"tree {objects.write('tree', b'')}\nauthor {_WHO} {stamp} +0000\ncommitter {_WHO} {stamp} +0000\n\n"
            f"{message}")
    return objects.write("commit", body.encode())


def claim(store: GitStore, remote: str, commit: str, expected: Mapping[str, str]) -> dict[str, str] | None:
    """Point each ref of ``expected`` at ``commit`` on ``remote`` in one push, each only if the
    remote's ref is the object ``expected`` maps it to ("": only if it does not exist). Each
    ref's outcome: CREATED; TAKEN, another clone holds it (created or moved it first); or
    REFUSED, the remote answered no (a hook, a protected namespace, no right to push) or the
    push never got to the ref. None when the remote cannot be reached."""
    return claim_each(store, remote, {ref: (commit, old) for ref, old in expected.items()})


class Outcome(dict[str, str]):
    """Each ref's outcome (CREATED, TAKEN or REFUSED), and what git and the remote said of the
    push, for a refusal to name its reason (git's generic "failed to push some refs" left out)."""

    said: str = ""


def claim_each(store: GitStore, remote: str, wanted: Mapping[str, tuple[str, str]]) -> Outcome | None:
    """``claim`` with a commit of its own for each ref: ``wanted`` maps a ref to (the commit to
    point it at, the object expected there). A ref already at its commit is CREATED: this clone
    holds it."""
    # --no-verify: a pre-push hook guards what a person pushes (branches: their tests, their
    # secrets); these refs hold an empty commit of slayer-kb's own bookkeeping, and a hook that
    # lets only refs/heads/* through would otherwise turn every lease away. The remote's hooks
    # still decide (REFUSED).
    proc = network(store, "push", "--porcelain", "--no-verify",
                   *[f"--force-with-lease={ref}:{old}" for ref, (_, old) in wanted.items()],
                   remote, *[f"{commit}:{ref}" for ref, (commit, _) in wanted.items()])
    if proc is None:
        return None
    outcome = Outcome(dict.fromkeys(wanted, REFUSED))
    outcome.said = "; ".join(line.removeprefix("remote:").strip() for line in proc.stderr.decode("utf-8", "replace").splitlines()
                            if line.strip() and not line.startswith("error: failed to push some refs")).strip()
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        flag, _, rest = line.partition("\t")
        target, _, summary = rest.partition("\t")
        ref = target.partition(":")[2]
        if ref not in outcome:
            continue
        if flag in ("*", " ", "+", "="):
            outcome[ref] = CREATED
        elif any(word in summary for word in _TAKEN):
            outcome[ref] = TAKEN
    return outcome


def network(store: GitStore, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    """``git ARGS`` that talks to the remote, through the store's ``git`` (a write's niceness
    included): never waiting on a password prompt or reading stdin (empty input), at most
    ``NETWORK_SECONDS``, or ``sync_timeout()`` where the user set that lower (how long they let git
    talk to the remote); None when it timed out."""
    try:
        return store.git(*args, env={"GIT_TERMINAL_PROMPT": "0"}, input=b"", check=False,
                         timeout=min(NETWORK_SECONDS, sync_timeout()))
    except subprocess.TimeoutExpired:
        return None


def holder_message(store: GitStore, remote: str, ref: str, commit: str) -> str | None:
    """The message of the holder ``commit`` the remote's ``ref`` points at (who took it, and for
    what: ``slayer-kb: claim ids 101-200 for memory 150``), fetched (one bounded ``git fetch`` of
    that ref, no local ref written) when this clone lacks it; None when it cannot be had."""
    def read() -> str | None:
        proc = store.git("log", "-1", "--format=%B", commit, "--", check=False)
        return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else None

    if (said := read()) is not None:
        return said
    fetched = network(store, "fetch", "-q", "--no-tags", "--no-write-fetch-head", remote, ref)
    return read() if fetched is not None and fetched.returncode == 0 else None


def remote_url(store: GitStore, remote: str, push: bool = False) -> str:
    """``remote``'s url (with ``push``, the one a push goes to: its ``pushurl`` when set), for an
    error that names it ("" when it has none)."""
    proc = store.git("remote", "get-url", *(["--push"] if push else []), remote, check=False)
    return proc.stdout.decode("utf-8", "replace").strip()


def talk(store: GitStore, remote: str, command: str, *args: str,
         config: tuple[str, ...] = ()) -> subprocess.CompletedProcess[bytes]:
    """``git -c CONFIG... COMMAND ARGS`` (a command that talks to ``remote``), stopped past
    ``sync_timeout()`` seconds: a remote that stops answering, or a pre-push hook that waits, must
    not hold the KB's lock for ever. The sync puts the clone back as it was when this raises."""
    settings = [part for setting in config for part in ("-c", setting)]
    try:
        return store.git(*settings, command, *args, check=False, timeout=sync_timeout())
    except subprocess.TimeoutExpired:
        url = remote_url(store, remote, push=command == "push")
        hook = " or this repository's pre-push hook is waiting for something" if command == "push" else ""
        raise StoreError(
            f"The sync's git {command} ({remote}: {url}) did not finish within {sync_timeout()} s and was stopped: "
            f"the remote stopped answering{hook}. This clone is as it was before the sync: its saves stay here and "
            f"the next sync sends what the remote lacks. Check the remote ({problems.git_command(store.root, f'ls-remote {problems.words(remote)}')}), "
            f"then run {problems.command(store.root)} sync again; SLAYER_KB_SYNC_TIMEOUT sets how many seconds a sync's fetch or "
            f"push may take, and, below {NETWORK_SECONDS:.0f}, the small requests to the remote (a lease's ls-remote or "
            "push of its id block, a sync's turn)."
        ) from None


def pre_push_hook(store: GitStore, proc: subprocess.CompletedProcess[bytes], args: list[str]) -> str | None:
    """This clone's pre-push hook, when it is what failed ``git push ARGS``: git stopped before any
    ref's outcome (the porcelain's ``To URL`` and its lines), exiting 1 (128 for a remote it could
    not reach), the hook can run, and the same push run dry without it (``--no-verify``) goes
    through: nothing else in the way."""
    if proc.returncode != 1 or any(line.startswith(b"To ") for line in proc.stdout.splitlines()):
        return None
    path = store.git("rev-parse", "--path-format=absolute", "--git-path", "hooks/pre-push",
                     check=False).stdout.decode("utf-8", "surrogateescape").strip()
    if not (path and os.path.isfile(path) and os.access(path, os.X_OK)):
        return None
    dry = network(store, "push", "--dry-run", "--no-verify", *args)
    return path if dry is not None and dry.returncode == 0 else None
