"""``encoder.runs_on``: the model runs a thread asks for are made on the pool it names for a
block (the warm server's filler, on a thread of lower priority), and a block inside another gives
the outer pool back when it ends."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from slayer_kb.search import encoder


class Counting(ThreadPoolExecutor):
    """A pool of one thread that counts the calls submitted to it."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.calls = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.calls += 1
        return super().submit(fn, *args, **kwargs)


def test_a_nested_block_gives_the_outer_pool_back(encoder_on: None) -> None:
    model = encoder.load()
    if not isinstance(model, encoder.Encoder):
        pytest.skip(f"the sentence encoder is not installed: {model}")
    with Counting() as outer, Counting() as inner:
        with encoder.runs_on(outer):
            with encoder.runs_on(inner):
                model.encode(["made on the inner pool"])
            model.encode(["made on the outer pool again"])
            with encoder.runs_on(None):  # here, on the calling thread
                model.encode(["made here"])
            model.encode(["and on the outer pool once more"])
        model.encode(["made here after the block"])
        assert (outer.calls, inner.calls) == (2, 1)
