"""The ``slayer-kb`` program: a command goes to the KB's warm server (relay.py, server.py) before
anything heavy is imported; when there is none, it runs here, and then (SLAYER_KB_SERVER=on, the
default) a server is started in the background for the commands that follow.

The client of a write relays from a thread at the lower priority of a write's spare work
(core/priority.py), lowered before it imports the relay: it only waits for the server, and
searches beside it go first (not a sync's, which other clones wait for). This thread keeps its priority, for the command run here and the
server started afterwards."""

from __future__ import annotations

import sys

from .daemon.commands import yields

TYPE_CHECKING = False  # typing is not imported: the client needs none of it

if TYPE_CHECKING:
    from .daemon.relay import Marks, Outcome


def main() -> None:
    _open_standard_streams()
    argv = sys.argv[1:]
    held: list[Marks] = []  # the command's relay.Marks, once its relaying thread imported the relay
    if yields(argv):
        from .core.priority import beneath

        try:
            outcome = beneath(_forward, argv, held, interrupted=lambda times: bool(held) and held[0].interrupted(times))
        except KeyboardInterrupt:
            if not held or not held[0].abandoned():  # as click says it; else said
                print("\nAborted!", file=sys.stderr, flush=True)
            # At once: an exit would wait for the relaying thread (the one that imported
            # threading, for subprocess, counts as the main thread to Python's shutdown).
            import os

            os._exit(1)
    else:
        outcome = _forward(argv, held)
    if outcome.settle is not None:
        from .daemon.settle import settle

        outcome.code = settle(outcome.settle, sys.argv[1:], outcome.stopped)
    try:
        if outcome.code is not None:
            sys.exit(outcome.code)
        from .cli import main as run_cli

        run_cli()
    finally:
        # A command refused for a bad setting starts no server: that would run with the default
        # in its place, and serve the commands that follow once the setting is fixed.
        if outcome.start is not None:
            from .cli.common import settings_taken

            if settings_taken():
                from .daemon.relay import spawn

                spawn(outcome.start)


def _open_standard_streams() -> None:
    """``/dev/null`` on a standard stream the program was started without (``2>&-``, ``>&-``):
    Python leaves ``sys.stderr`` None, and a warning printed to it went to stdout, into the one
    document of ``--json``; and the next file opened (the KB's lock) took the closed number, which
    a git or a library writing its messages would have written into."""
    import os

    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)  # the lowest number free: this one
            stream = open(fd, "r" if fd == 0 else "w", encoding="utf-8", closefd=False)
            if fd == 0:  # '-' read nothing from it, told as an empty learning: cli/common.py says why
                from .daemon.relay import STDIN_CLOSED

                setattr(stream, STDIN_CLOSED, True)
            setattr(sys, name, stream)


def _forward(argv: list[str], held: list[Marks]) -> Outcome:
    from .daemon.relay import Marks, forward

    held.append(Marks())  # before the relay: a Ctrl-C reads what it marks (Marks.interrupted)
    return forward(argv, held[0])
