"""The settings of search by meaning and of its vectors that the command a thread runs goes by:
whether search by meaning and the sentence encoder are turned off (``SLAYER_KB_NO_MEANING``,
``SLAYER_KB_NO_ENCODER``), whether a detached filler may start (``SLAYER_KB_NO_FILLER``), the
vector cache's folder and bound (``SLAYER_KB_CACHE``, ``XDG_CACHE_HOME``, ``HOME``,
``SLAYER_KB_CACHE_MAX_MB``: cachedir.py), and the model's runs at once and threads a run
(``SLAYER_KB_BUILD_WORKERS``, ``SLAYER_KB_ENCODER_THREADS``: encoder.py). A process's own environment says so, asked at each use
(a warm server runs each command in its client's environment). But the server swaps a command in
its turn's environment into ``os.environ``, and a read beside it, or its sentence filler, runs
on another thread meanwhile, with the server's settings: so a read beside a command and the
filler are given the settings they go by (``given``), and only a thread given none (the command
in its turn) reads the process's environment (docs/server.md, "Streams, folder, environment")."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping

MEANING = "SLAYER_KB_NO_MEANING"
ENCODER = "SLAYER_KB_NO_ENCODER"
# The settings that change what a read prints (``taken``: a read whose client sets them otherwise
# than the server waits for its turn).
NAMES = (MEANING, ENCODER)
# Every setting a thread is given: those, and the ones of the filler and the vector cache.
GIVEN = (*NAMES, "SLAYER_KB_NO_FILLER", "SLAYER_KB_CACHE", "SLAYER_KB_CACHE_MAX_MB", "XDG_CACHE_HOME", "HOME",
         "SLAYER_KB_BUILD_WORKERS", "SLAYER_KB_ENCODER_THREADS")

_given = threading.local()


def taken(env: Mapping[str, str]) -> dict[str, bool]:
    """The settings of ``env`` that change what a read prints, as they are read: set (not empty)
    or not."""
    return {name: bool(env.get(name)) for name in NAMES}


def environ() -> Mapping[str, str]:
    """Where this thread reads the settings of ``GIVEN`` (no other): those ``given`` it, else the
    process's environment."""
    given: Mapping[str, str] | None = getattr(_given, "env", None)
    return os.environ if given is None else given


def meaning_off() -> bool:
    return bool(environ().get(MEANING))


def encoder_off() -> bool:
    return meaning_off() or bool(environ().get(ENCODER))


def filler_off() -> bool:
    """``SLAYER_KB_NO_FILLER``: no detached filler is started (the benchmark's timed steps)."""
    return bool(environ().get("SLAYER_KB_NO_FILLER"))


@contextlib.contextmanager
def given(env: Mapping[str, str]) -> Iterator[None]:
    """This thread goes by ``env``'s settings for the block, whatever ``os.environ`` says."""
    before = getattr(_given, "env", None)
    _given.env = {name: env[name] for name in GIVEN if name in env}
    try:
        yield
    finally:
        _given.env = before
