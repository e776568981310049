"""Whether search by meaning, and the sentence encoder, are turned off for the command a thread
runs (``SLAYER_KB_NO_MEANING``, ``SLAYER_KB_NO_ENCODER``). A process's own environment says so,
asked at each use (a warm server runs each command in its client's environment). But the server
swaps a command in its turn's environment into ``os.environ``, and a read beside it runs on
another thread meanwhile, with the server's settings: so each of the server's threads that runs
a command, or makes vectors, is given the settings it goes by (``given``), and only a thread given
none reads the process's environment (docs/server.md, "Streams, folder, environment")."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping

MEANING = "SLAYER_KB_NO_MEANING"
ENCODER = "SLAYER_KB_NO_ENCODER"
NAMES = (MEANING, ENCODER)

_given = threading.local()


def taken(env: Mapping[str, str]) -> dict[str, bool]:
    """The settings of ``env`` as they are read: set (not empty) or not."""
    return {name: bool(env.get(name)) for name in NAMES}


def meaning_off() -> bool:
    return _setting(MEANING)


def encoder_off() -> bool:
    return _setting(MEANING) or _setting(ENCODER)


def _setting(name: str) -> bool:
    given: dict[str, bool] | None = getattr(_given, "settings", None)
    return given[name] if given is not None else bool(os.environ.get(name))


@contextlib.contextmanager
def given(env: Mapping[str, str]) -> Iterator[None]:
    """This thread goes by ``env``'s settings for the block, whatever ``os.environ`` says."""
    before = getattr(_given, "settings", None)
    _given.settings = taken(env)
    try:
        yield
    finally:
        _given.settings = before
