"""The check of the server's settings as a command begins (``cli.common.checked_settings``): the
relaying client, the server and its background work read them where nothing could say so (a bad
niceness or idle time taken as the default, a build pass failed in the server's log). Each is
read here by its reader's own parse, strictly, so that the check refuses what the reader would not
take and nothing the reader takes."""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..core import priority
from .relay import idle_seconds

_ENCODER_SETTINGS = ("SLAYER_KB_BUILD_WORKERS", "SLAYER_KB_ENCODER_THREADS")


def check(env: Mapping[str, str] | None = None) -> None:
    """Refuse a bad ``SLAYER_KB_WRITE_NICENESS``, ``SLAYER_KB_SERVER_IDLE``,
    ``SLAYER_KB_BUILD_WORKERS`` or ``SLAYER_KB_ENCODER_THREADS`` (of ``env``, else this
    process's), naming the variable and the fix."""
    env = os.environ if env is None else env
    priority.niceness(strict=True, env=env)
    idle_seconds(strict=True, env=env)
    if any(env.get(variable, "").strip() for variable in _ENCODER_SETTINGS):
        # Only then: the encoder's module imports the search stack, which a read of files never needs.
        from ..search import encoder

        encoder.wanted_workers(env)
        encoder.threads(env)
