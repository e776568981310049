"""git commands that may not run for ever: stopped past a bound with the hooks they started; and
what a git failure's message means for the user (``checked``, ``explain``).

The git commands of a commit that run the repository's hooks (``update-ref`` runs
``reference-transaction``, ``update-index`` ``post-index-change``) are bounded, so a hook that
hangs cannot hold the KB's lock for ever; the error names the hook.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path

from ..core.errors import StoreError
from ..core.inputs import whole_number
from .gitenv import git_env

GIT_TIMEOUT = 60  # seconds (SLAYER_KB_GIT_TIMEOUT)
# A sync's fetch and push carry the team's new history, so they get longer; still bounded, since
# a remote that stops answering (or a pre-push hook that waits) would hold the KB's lock for ever.
SYNC_TIMEOUT = 300  # seconds (SLAYER_KB_SYNC_TIMEOUT)
_STOP_SECONDS = 5.0  # how long a stopped git has to exit on SIGTERM before SIGKILL


def git_timeout(env: Mapping[str, str] | None = None) -> int:
    """How many seconds a git command that runs the repository's hooks may take (``GIT_TIMEOUT``)."""
    return whole_number("SLAYER_KB_GIT_TIMEOUT", GIT_TIMEOUT, "seconds", env=env)


def sync_timeout(env: Mapping[str, str] | None = None) -> int:
    """How many seconds a sync's ``git fetch`` or ``git push`` may take (``SYNC_TIMEOUT``); set
    lower than ``claims.NETWORK_SECONDS``, the small requests to the remote too (``claims.network``)."""
    return whole_number("SLAYER_KB_SYNC_TIMEOUT", SYNC_TIMEOUT, "seconds", env=env)


def run_bounded(command: list[str], cwd: Path, input: bytes | None, env: Mapping[str, str] | None,
                timeout: float | None, keep: tuple[int, ...] = ()) -> subprocess.CompletedProcess[bytes]:
    """``command``, stopped past ``timeout`` seconds (if any) with SIGTERM (git removes its ``.lock`` files
    on it, where SIGKILL would leave them to block every later git), then SIGKILL. It stays in
    the caller's process group, where the warm server looks for a dead write process's git.
    ``keep``: descriptors the command inherits (a lock it holds while it runs)."""
    with subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE if input is not None else None,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=keep) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            started = _descendants(proc.pid)
            for stop in (proc.terminate, proc.kill):
                stop()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=_STOP_SECONDS)
                    break
            # What git started (the ssh of a fetch, the remote's side of a local one, a hook) is
            # not stopped with it, and runs on (for ever, when it hangs) in the caller's group.
            for pid in started:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            raise
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def _descendants(pid: int) -> list[int]:
    """The processes ``pid`` started, and theirs, as ``ps`` lists them ([] when it cannot). ``ps`` is
    looked up as git is (``git_env``: PATH's absolute folders only)."""
    try:
        listed = subprocess.run(["ps", "-A", "-o", "pid=", "-o", "ppid="], env=git_env(), capture_output=True,
                                text=True, check=False, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    children: dict[int, list[int]] = {}
    for line in listed.splitlines():
        ids = line.split()
        if len(ids) == 2 and ids[0].isdigit() and ids[1].isdigit():
            children.setdefault(int(ids[1]), []).append(int(ids[0]))
    found, todo = [], [pid]
    while todo:
        found += (new := children.get(todo.pop(), []))
        todo += new
    return found


def hung(top: Path, command: str, hook: str, outcome: str) -> str:
    """Why ``git COMMAND`` (run in ``top``) was stopped past the bound: the repository's ``hook`` it runs."""
    where = subprocess.run(["git", "rev-parse", "--git-path", f"hooks/{hook}"], cwd=top, env=git_env(), capture_output=True,
                           text=True, check=False, timeout=10).stdout.strip()
    return (
        f"git {command} did not finish within {git_timeout()} s and was stopped: it runs this repository's "
        f"{hook} hook ({top / where}), which must be waiting for something. {outcome} Make the hook finish (or "
        "remove it), then retry; SLAYER_KB_GIT_TIMEOUT sets how many seconds git may take."
    )


def checked(args: list[str], proc: subprocess.CompletedProcess[bytes]) -> subprocess.CompletedProcess[bytes]:
    """``proc``, or a StoreError that says why ``git ARGS`` failed."""
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip()
        raise StoreError(f"git {args[0]} failed: {explain(message)}")
    return proc


def explain(message: str) -> str:
    """git's failure ``message``, with what to do when the cause is a common one."""
    lowered = message.lower()
    if "no space left" in lowered or "out of diskspace" in lowered:  # the latter: git's pack writer
        return f"{message} (the disk is full: free some space and retry)"
    if "unable to write new index file" in lowered:  # git names neither the file nor the cause
        return (f"{message} (git could not replace its index file, .git/index: make .git/ and .git/index writable "
                "by this user (chmod, chown; chattr -i if immutable) and free disk space, then retry)")
    if "permission denied" in lowered or "read-only" in lowered or "operation not permitted" in lowered:
        return (f"{message} (the knowledge base is not writable by this user: make it writable (chmod, chown; "
                "chattr -i if immutable, or mount it read-write), or use a copy somewhere writable, then retry)")
    if "untracked working tree file" in lowered:
        return (f"{message} (a file git does not track is where the command must write one: move it aside, or "
                "commit it with git add and git commit, then run the command again)")
    return message
