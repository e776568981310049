"""A client whose server died while it ran a write for it: did the command's commit land?

The server notes each commit a relayed write makes, under the request's id, before it publishes
it (store/requests.py). Here the client waits for the KB lock (taking it finishes a published
commit the server left half-applied), reads that record, and asks git whether each commit it
names is in HEAD's history. Then:

- nothing landed: the command runs in this process, as if the server had never had it; so does a
  sync that moved the branch to take in the upstream and did not finish (its commits landed or not): run
  again, it makes what the one stopped left and says what that one did, and the client says how far
  it got: the branch moved, its push not begun, landed (its copy of the upstream moved), or begun
  (landed or not: only the remote knows). A sync that left no record of a pull had not moved the
  branch, or had pushed and was done (which of the two cannot be told: no message claims either);
- its one commit landed: what the command prints is printed (the output the server recorded when
  the command had returned, else the result read back from the commit, ``cli/landed.py``), and
  the exit code is the command's; it is not run again;
- a command that makes several commits and landed only some: they are named, exit 1.
"""

from __future__ import annotations

import sys

from ..core.errors import KBError
from ..kb import KnowledgeBase
from ..store import requests
from ..store.pulls import Pull, moved_by
from ..store.repo import GitStore
from . import relay


def settle(where: tuple[str, str], argv: list[str], stopped: str = relay.SERVER) -> int | None:
    """The exit code of the command ``argv`` whose server (or the server's write process:
    ``stopped`` says which, as the messages name it) died after it began it for this client
    (``where``: the KB's root and the request's id), having printed its output; None when it
    made no commit, to run it here."""
    root, request = where
    try:
        kb = KnowledgeBase(root)
    except KBError:
        return None  # the command, run here, says what is wrong
    try:
        try:
            record, landed = _landed(kb.store, request)
        except KBError as exc:
            print(f"slayer-kb: {stopped} stopped while running this command, and whether it committed "
                  f"cannot be told: {exc} Check 'git log' before running it again.", file=sys.stderr)
            return 1
        pull = moved_by(kb.store, request)
        if pull is not None:
            # A sync that moved the branch to take in the upstream (its commits landed or not) and did not
            # finish: run again, it makes what this one left (store/pulls.py).
            requests.drop(kb.state, request)
            print(f"slayer-kb: {stopped} stopped while running this command, {_how_far(kb.store, pull)}.",
                  file=sys.stderr, flush=True)
            return None
        if not landed:
            requests.drop(kb.state, request)
            found = relay.parse(argv)
            # A sync's rebase and push are no commit of the record's: done, it left no pull record either.
            how_far = ("before it moved the branch or once it had pushed (which of the two cannot be told here); "
                       "running it in this process, which makes nothing twice" if found and found[1] == "sync"
                       # git's merge commits on its own, unrecorded: run again, the merge makes what it lacks.
                       else "before it finished (git's merge may be committed, without its folds); running it in "
                       "this process, which makes them, or names what git left" if found and found[1] == "merge"
                       else "before it committed anything; running it in this process")
            print(f"slayer-kb: {stopped} stopped while running this command, {how_far}.", file=sys.stderr,
                  flush=True)
            return None
        assert record is not None
        code = _printed(kb, record, landed, argv, stopped)
        requests.drop(kb.state, request)
        return code
    finally:
        kb.close()


def _how_far(store: GitStore, pull: Pull) -> str:
    """How far the sync that recorded ``pull`` got, from its record (``pushing``: its push was
    about to begin) and this clone's copy of the upstream (holding ``pushing`` once the push
    landed: git push, or the sync after it, moves it); and what running it again here does."""
    moved = f"after it had moved the branch to take in {pull.name}"
    if not pull.pushing:
        return f"{moved}, before it pushed; running it in this process, which finishes it"
    if store.is_ancestor(pull.pushing, f"refs/remotes/{pull.name}"):  # moved only once the push landed
        return (f"after it had taken in {pull.name} and pushed, before it said what it did; running it in this "
                "process, which says it")
    return (f"{moved} and begun its push, which may have landed (only the remote can tell); running it in this "
            "process, which finishes it and says what it did")


def _landed(store: GitStore, request: str) -> tuple[requests.Record | None, list[requests.Landing]]:
    """The request's record, and those of the commits it names that are in HEAD's history."""
    with store.locked():
        record = requests.read(store.state, request)
        head = store.head()
        return record, [c for c in record.commits if head and store.is_ancestor(c.commit, head)] if record else []


def _printed(kb: KnowledgeBase, record: requests.Record, landed: list[requests.Landing], argv: list[str],
             stopped: str) -> int:
    if len(landed) == len(record.commits) and record.code is not None and record.chunks is not None:
        for fd, data in record.chunks:
            relay.write(sys.stdout if fd == 1 else sys.stderr, data)
        return record.code
    if len(record.commits) == 1:
        found = relay.parse(argv)
        if found is not None:
            from ..cli.landed import print_landed

            _kb, command, rest = found
            if print_landed(kb, argv, command, rest, landed[0]):
                return 0
        commit = landed[0]
        print(f"slayer-kb: {stopped} stopped after committing this command as {commit.commit[:12]} "
              f"({_subject(commit)}); it is not run again: 'git show {commit.commit[:12]}' shows what it did.",
              file=sys.stderr)
        return 0
    done = "; ".join(f"{c.commit[:12]} ({_subject(c)})" for c in landed)
    print(f"slayer-kb: {stopped} stopped while running this command, after it had made {len(landed)} "
          f"commits: {done}. It is not run again, since that part is done: check 'git log' and finish "
          "the rest by hand.", file=sys.stderr)
    return 1


def _subject(landing: requests.Landing) -> str:
    return landing.message.split("\n", 1)[0]
