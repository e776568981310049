"""The lower CPU priority of a write's work that no read waits for (docs/server.md, "Reads beside
writes"): reads never wait for writes, so on a machine whose cores are all busy a write's spare
work yields to them. Three parts of a relayed write run ``niceness()`` steps lower than the
process that starts them:

- the relayed client of a write (entry.py): it only waits for the result and prints it, so it
  relays from a thread of its own at the lower priority, from before it imports the relay
  (``beneath``), and its main thread, which runs the command itself when no server does and
  then starts one, keeps the caller's priority; where a thread's priority cannot be set (not
  Linux), the client lowers itself once the server has begun its command (relay.py);
- the git processes a write runs in the warm server while reads go on beside it (the commit's
  ``commit-tree``, ``update-ref`` with its hooks, ``update-index``: ``GitStore.git``), started
  through ``nice`` so that git's own children inherit it;
- the sentence model's runs of the server's filler (search/background.py), on a thread of their
  own.

Never the server's threads that run a command or hold the KB's state in memory (the view): they
hold Python's GIL and the view, which the searches need, and a thread that waits for the CPU
while holding them would make every search wait with it.

Linux schedules each session's processes as one group (autogroup) and shares the cores between
the groups first: a niceness counts only against the threads of its own group. So the write
process (daemon/writer.py) and every job detached in a session of its own (the repository's
upkeep, index compaction, the detached sentence filler) lower their whole session as well
(``lower_session``), by ``niceness()`` steps; not 19, as a group 19 steps
lower gets a twentieth of a group at 0, and on a busy machine next to nothing.

Never a write other clones wait for (``daemon/commands.py`` ``SHARED``): a sync holds the
remote's turn (ops/turn.py) from its fetch to its push, and every clone that syncs meanwhile
queues behind it, so lowered it would hand the CPU the searches of one machine take to the
whole team's syncs as waiting (a priority inversion: 8 agents on one remote, sync p95 from
about 2.5 s to 7-11 s, docs/teams.md). It runs at the caller's priority throughout: its client,
its git, and the write process's group, raised back for it (``session_at``).

``SLAYER_KB_WRITE_NICENESS`` (0-19, default 10) says how many steps; 0 turns it off. Standard
library only, imported on use: the relayed client imports this.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported: the client of a write imports this first

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import TypeVar

    T = TypeVar("T")

VARIABLE = "SLAYER_KB_WRITE_NICENESS"
DEFAULT = 10
MAX = 19
# Linux gives each thread a priority of its own (setpriority on a thread's id).
PER_THREAD = sys.platform.startswith("linux")


def niceness(strict: bool = False, env: Mapping[str, str] | None = None) -> int:
    """How many steps lower a write's spare work runs (``SLAYER_KB_WRITE_NICENESS``; 0: as
    the rest): a whole number, below 0 taken as 0 and above ``MAX`` as ``MAX``, as nice(1) takes
    it. Anything else is ``DEFAULT``, where nothing could say so (the server, a detached job), or
    with ``strict`` (the check as a command begins, daemon/settings.py) an error naming the fix.
    ``env``: the environment to read, else this process's."""
    value = (os.environ if env is None else env).get(VARIABLE, "").strip()
    try:
        steps = int(value) if value else DEFAULT
    except ValueError:
        if strict:
            from .errors import InvalidInputError  # only here: a write's client imports this first

            raise InvalidInputError(f"{VARIABLE} is {value!r}, not a number of steps; set it to a whole number "
                                    f"from 0 to {MAX} (the default is {DEFAULT}) or unset it.") from None
        steps = DEFAULT
    return max(0, min(MAX, steps))


def lower_process(steps: int) -> None:
    """This process (its calling thread, on Linux) ``steps`` lower."""
    if steps > 0 and hasattr(os, "nice"):
        try:
            os.nice(steps)
        except OSError:
            pass


def lower_session(steps: int) -> None:
    """The whole session of this process ``steps`` lower against the others (its autogroup's
    niceness), when this process leads a session of its own, as a detached job does; never a
    session it only belongs to (an agent's terminal). Linux only; elsewhere, or with autogroup
    off, nothing changes."""
    if steps > 0:
        session_at(steps)


def session_at(steps: int) -> None:
    """This process's session ``steps`` (0 to 19) below the others, as ``lower_session`` says;
    0 raises a lowered session back, which needs no privilege (a group's niceness may go back
    up to 0, unlike a process's)."""
    if not sys.platform.startswith("linux") or os.getsid(0) != os.getpid():
        return
    import time

    for _attempt in range(5):
        try:
            with open("/proc/self/autogroup", "w", encoding="ascii") as autogroup:
                autogroup.write(str(max(0, min(MAX, steps))))
            return
        except BlockingIOError:  # the kernel takes one such change a tenth of a second, machine-wide
            time.sleep(0.11)
        except OSError:  # no autogroup here
            return


def lower_thread(steps: int) -> None:
    """The calling thread ``steps`` lower than it runs now. On Linux only, where a priority
    belongs to a thread; elsewhere nothing changes."""
    if steps <= 0 or not PER_THREAD:
        return
    import _thread  # built in and loaded at start, unlike threading

    tid = _thread.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(MAX, os.getpriority(os.PRIO_PROCESS, tid) + steps))
    except OSError:
        pass


def beneath(call: Callable[..., T], *args: object, interrupted: Callable[[int], bool] | None = None) -> T:
    """``call(*args)`` on a thread of its own ``niceness()`` steps lower, its result or its
    exception, while the calling thread waits at its own priority: what it does afterwards, and
    the processes it starts, are not lowered (a process cannot raise its priority again). Run
    here, unlowered, where a thread's priority cannot be set or the setting is 0. Signals go to
    the waiting thread (Ctrl-C interrupts the wait, not the call): the call's thread blocks them.
    On the n-th Ctrl-C, ``interrupted(n)`` says whether to wait on; else it is raised."""
    steps = niceness()
    if steps <= 0 or not PER_THREAD:
        return call(*args)
    import _signal  # type: ignore[import-not-found]  # built in, loaded at start, unlike signal
    import _thread

    done = _thread.allocate_lock()
    done.acquire()
    outcome: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            # A signal the kernel gave this thread would wait for the other to run its handler,
            # and that thread waits for this one.
            _signal.pthread_sigmask(_signal.SIG_BLOCK, _signal.valid_signals())
            lower_thread(steps)
            outcome.append((True, call(*args)))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            outcome.append((False, exc))
        finally:
            done.release()

    if "threading" in sys.modules:
        # A process forked from a thread threading did not start fails Python's shutdown (exit
        # code 1): the write process's bulk index writes fork Whoosh's workers from this one.
        # The relaying client has not imported threading yet, and need not.
        import threading

        threading.Thread(target=run, name="slayer-kb beneath", daemon=True).start()
    else:
        _thread.start_new_thread(run, ())
    interrupts = 0
    while True:
        try:
            done.acquire()
            break
        except KeyboardInterrupt:
            interrupts += 1
            if interrupted is None or not interrupted(interrupts):
                raise
    ok, value = outcome[0]
    if not ok:
        raise value  # type: ignore[misc]
    return value  # type: ignore[return-value]


def command(argv: list[str], steps: int) -> list[str]:
    """``argv`` run ``steps`` lower (through ``nice``, which its children inherit), or as it is
    when ``steps`` is 0 or there is no ``nice``."""
    if steps <= 0:
        return argv
    program, target = _which("nice"), _which(argv[0])
    # A missing program is run as it is, so that its caller's own "not installed" error holds
    # (``nice`` would report it in words of its own).
    return argv if program is None or target is None else [program, "-n", str(steps), target, *argv[1:]]


_FOUND: dict[str, str | None] = {}


def _which(name: str) -> str | None:
    """A program's path, looked up once per process (no functools: the client of a write
    imports this module before anything else)."""
    if name not in _FOUND:
        import shutil

        from .children import program_path

        _FOUND[name] = shutil.which(name, path=program_path(os.environ.get("PATH", os.defpath)))
    return _FOUND[name]
