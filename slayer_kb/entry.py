"""The ``slayer-kb`` program: a search goes to a running ``slayer-kb watch`` if one serves the
KB (relay.py), before anything heavy is imported; everything else runs the CLI here."""

from __future__ import annotations

import sys


def main() -> None:
    from .relay import forward

    code = forward(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from .cli import main as run_cli

    run_cli()
