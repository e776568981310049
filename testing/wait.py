"""Waiting in tests: poll a condition with a generous bound, never sleep a fixed time (on a loaded
machine any fixed time is too short, and on an idle one it is wasted)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# Long enough for a loaded 2-core machine; a condition that holds returns at once.
WAIT_SECONDS = 60.0


def eventually(check: Callable[[], T], what: str = "the condition", bound: float = WAIT_SECONDS) -> T:
    """``check()``'s first true value, polled every 20 ms; an AssertionError naming ``what``
    after ``bound`` seconds."""
    deadline = time.monotonic() + bound
    while not (found := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {bound:g} s")
        time.sleep(0.02)
    return found


def next_second() -> None:
    """Return once the clock is in a later second than at the call: a memory's and a commit's
    times are to the second, so a save made after this is dated later than one made before."""
    now = int(time.time())
    eventually(lambda: int(time.time()) > now, "the next second")
