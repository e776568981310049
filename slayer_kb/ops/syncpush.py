"""``sync``'s push: HEAD onto the fetched upstream, the turn given back in the same push, and
what a push that failed for another reason than a lost race says (a remote hook's refusal, this
clone's own pre-push hook, a remote that cannot be reached)."""

from __future__ import annotations

from ..core.errors import StoreError
from ..core.outcomes import SyncResult
from ..core.problems import command, git_command
from ..store.claims import network, pre_push_hook, remote_url, talk
from ..store.repo import GitStore
from .turn import Turn


def pushed_counts(store: GitStore, tip: str, exclude: str) -> tuple[int, int]:
    """The commits a push of ``tip`` sends (those ``exclude`` has not: a commit, or ``--remotes=NAME``), and how
    many of them a merge took in from another branch (``main``'s, after ``slayer-kb merge
    origin/main``): all but the branch's own line of first parents."""
    out = store.git("rev-list", "--parents", tip, "--not", exclude).stdout.decode()
    parents = {ids[0]: ids[1] if len(ids) > 1 else "" for ids in map(str.split, out.splitlines())}
    own, commit = 0, tip
    while commit in parents:
        own, commit = own + 1, parents[commit]
    return len(parents), len(parents) - own


def push(store: GitStore, remote: str, upstream_branch: str, tracking: str, upstream: str,
          result: SyncResult, turn: Turn) -> bool:
    """Push HEAD onto ``upstream`` (the fetched tip, "" for none), giving back the turn this sync
    holds in the same push; False when the remote refused it because others pushed first. The
    bookkeeping waits until the push is done."""
    head = store.head()
    assert head is not None
    if upstream == head:
        return True
    options, refspecs = turn.handed_back()
    # A branch's first push counts what no branch of the remote has, not its whole history
    # (counted before the push, which makes the branch's tracking ref; rare, so not in the race).
    first = None if upstream else pushed_counts(store, head, f"--remotes={remote}")
    try:
        pushed = ["-q", "--porcelain", *options, remote, f"{head}:refs/heads/{upstream_branch}", *refspecs]
        proc = talk(store, remote, "push", *pushed)
    except StoreError:  # stopped past the bound: a slow post-receive hook may have kept it after the push
        if not _landed(store, remote, upstream_branch, head):
            raise
        proc = None
    if proc is not None and proc.returncode != 0:
        text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
        declined = _declined_by_hook(proc.stdout.decode("utf-8", "replace"))
        if declined is None and ("rejected" in text or "non-fast-forward" in text or "fetch first" in text):
            return False  # a race lost to other clones: retried, no url to name
        if declined is not None:
            url = remote_url(store, remote, push=True)
            # A hook's verdict, not a race: the next attempt would be refused alike.
            said = _remote_lines(proc.stderr.decode("utf-8", "replace")) or ["(it gave no message)"]
            raise StoreError(
                f"The remote {remote} ({url}) refused the push: {declined}, saying:\n"
                + "".join(f"  {line}\n" for line in said)
                + "This is the remote's rule, not a race with other clones, so sync stopped without retrying. "
                "Nothing was sent and this clone is as it was: its saves stay here. Do what the hook's message "
                f"asks (or ask whoever runs {url}), then run {command(store.root)} sync again."
            )
        hook = pre_push_hook(store, proc, pushed)
        if hook is not None:
            # git passes on the hook's stdout and stderr as its own.
            said = [line for line in (proc.stdout + proc.stderr).decode("utf-8", "replace").splitlines()
                    if line.strip() and not line.startswith("error: failed to push some refs")] or ["(it gave no message)"]
            raise StoreError(
                f"This clone's pre-push hook {hook} refused the push of {upstream_branch} to {remote}, saying:\n"
                + "".join(f"  {line}\n" for line in said)
                + "It is a hook of this clone (core.hooksPath, else .git/hooks), not the remote or the network: nothing "
                "was sent and this clone is as it was, its saves stay here. Do what the hook asks, or let it pass "
                f"this push (it reads 'local_ref local_sha remote_ref remote_sha' lines on stdin; sync pushes "
                f"refs/heads/{upstream_branch}, and deletes refs/slayer-kb/turn/{upstream_branch} in the same push when "
                f"other clones wait their turn), then run {command(store.root)} sync again."
            )
        if not _landed(store, remote, upstream_branch, head):
            raise unreachable(store, remote, "push to", proc.stdout + proc.stderr, "Nothing was sent")
    turn.pushed()
    result.pushed, result.pushed_by_merge = pushed_counts(store, head, upstream) if first is None else first
    # The copy of what the remote now holds, for the next sync's fetch to start from; that fetch
    # makes it if this cannot (a lock, a hook refusing it), so it fails nothing.
    store.git("update-ref", tracking, head, check=False)
    if not upstream:
        store.git("branch", "-q", f"--set-upstream-to={remote}/{upstream_branch}", check=False)
    if result.action == "up to date":
        result.action = "pushed"
    return True


def unreachable(store: GitStore, remote: str, what: str, said: bytes, nothing: str) -> StoreError:
    """A fetch or push that failed for another reason than a race or a hook (a wrong url, no
    network): git's words, and that an offline clone's saves are safe (offline ids) with how to
    go on. ``what`` is "fetch from" or "push to" (which names the url a push goes to: a remote's
    ``pushurl`` may differ); ``nothing`` says what was not done."""
    push = "--push " if what == "push to" else ""
    return StoreError(
        f"git {what} {remote} ({remote_url(store, remote, push=bool(push))}) failed: "
        f"{said.decode('utf-8', 'replace').strip()} {nothing} and this clone is as it was: its saves stay here and "
        f"the next sync sends them. Check the remote's url ({git_command(store.root, f'remote get-url {push}{remote}')}) "
        f"and the network, then run {command(store.root)} sync again."
    )


def _landed(store: GitStore, remote: str, branch: str, head: str) -> bool:
    """Whether the remote's ``branch`` is at ``head``, after a push that failed or was stopped: the
    remote took it (a failure after it, here or in a slow hook of the remote's), so the sync is done
    and nothing is to be undone (undone, the next sync would send the memories again, renumbered)."""
    proc = network(store, "ls-remote", remote, f"refs/heads/{branch}")
    return proc is not None and proc.returncode == 0 and proc.stdout.decode().split("\t")[0] == head


def _declined_by_hook(porcelain: str) -> str | None:
    """The reason a remote's hook gave for refusing a ref of the push (``pre-receive hook
    declined``), from ``git push --porcelain``'s lines (``!<TAB>from:to<TAB>[remote rejected]
    (reason)``); None when no hook refused one (a ref others moved first, a lock lost to them)."""
    for line in porcelain.splitlines():
        status, _, rest = line.partition("\t")
        reason = rest.rpartition("\t")[2]
        if status == "!" and reason.startswith("[remote rejected] (") and reason.endswith("hook declined)"):
            return reason.removeprefix("[remote rejected] (").removesuffix(")")
    return None


def _remote_lines(stderr: str) -> list[str]:
    """What the remote printed while it refused (git's ``remote:`` lines, padding trimmed)."""
    return [line[len("remote:"):].strip() for line in stderr.splitlines() if line.startswith("remote:")
            and line[len("remote:"):].strip()]


