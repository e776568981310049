"""The ``slayer-kb`` program: a command goes to the KB's warm server (relay.py, server.py) before
anything heavy is imported; when there is none, it runs here, and then (SLAYER_KB_SERVER=on, the
default) a server is started in the background for the commands that follow."""

from __future__ import annotations

import sys


def main() -> None:
    from .daemon.relay import forward

    outcome = forward(sys.argv[1:])
    if outcome.settle is not None:
        from .daemon.settle import settle

        outcome.code = settle(outcome.settle, sys.argv[1:], outcome.stopped)
    try:
        if outcome.code is not None:
            sys.exit(outcome.code)
        from .cli import main as run_cli

        run_cli()
    finally:
        if outcome.start is not None:
            from .daemon.relay import spawn

            spawn(outcome.start)
