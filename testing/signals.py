"""The signal state a test process hands its children, kept the same from test to test.

A child inherits its parent thread's signal mask and every ignored signal, across exec (and
Python keeps SIGINT ignored when it starts ignored): a test that left either changed in a
worker would change every later test's processes, whichever test it was. Handlers are
reset to the default in a child, but a handler left behind would still answer for the next
test's Ctrl-C in this process. SIGALRM is pytest-timeout's."""

from __future__ import annotations

import signal
from typing import Any

WATCHED = tuple(s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGHUP, signal.SIGPIPE,
                            signal.SIGCHLD, signal.SIGUSR1, signal.SIGUSR2))


def state() -> tuple[frozenset[int], dict[int, Any]]:
    """(this thread's blocked signals, the handler of each watched signal)."""
    blocked = frozenset(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, []))
    return blocked, {int(s): signal.getsignal(s) for s in WATCHED}


def restore(to: tuple[frozenset[int], dict[int, Any]]) -> None:
    blocked, handlers = to
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    for number, handler in handlers.items():
        if handler is not None:  # None: set outside Python, which cannot put it back
            signal.signal(number, handler)


def changes(before: tuple[frozenset[int], dict[int, Any]], after: tuple[frozenset[int], dict[int, Any]]) -> list[str]:
    """What differs between two ``state()``s, in words; [] when nothing does."""
    out = []
    if before[0] != after[0]:
        out.append(f"blocked {sorted(before[0])} -> {sorted(after[0])}")
    for number, handler in before[1].items():
        if after[1][number] != handler:
            out.append(f"{signal.Signals(number).name} {handler!r} -> {after[1][number]!r}")
    return out


def as_a_shell_starts_it() -> None:
    """A child's ``preexec_fn``: Ctrl-C unblocked and at its default, whatever the test worker's
    (a run started in the background has SIGINT ignored, which a child would inherit)."""
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    signal.signal(signal.SIGINT, signal.SIG_DFL)
