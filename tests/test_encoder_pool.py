"""``placement.runs_on``: the model runs a thread asks for are made on the pool it names for a
block (the warm server's filler, on a thread of lower priority), with no thread of the priority
of the thread that loaded the model, and a block inside another gives the outer pool back when it
ends."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from slayer_kb.core import priority
from slayer_kb.search import encoder, placement


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
        with placement.runs_on(outer):
            with placement.runs_on(inner):
                model.encode(["made on the inner pool"])
            model.encode(["made on the outer pool again"])
            with placement.runs_on(None):  # here, on the calling thread
                model.encode(["made here"])
            model.encode(["and on the outer pool once more"])
        model.encode(["made here after the block"])
        assert (outer.calls, inner.calls) == (2, 1)


def _cpu_by_thread() -> dict[str, tuple[int, int]]:
    """Each thread of this process: (its niceness, its CPU ticks so far), from /proc."""
    found = {}
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            found[task.name] = (int(fields[16]), int(fields[11]) + int(fields[12]))
    return found


@pytest.mark.skipif(not priority.PER_THREAD, reason="a thread's own priority: Linux's /proc")
@pytest.mark.skipif(os.nice(0) + 10 > priority.MAX, reason="this process runs at the lowest priority already")
def test_runs_on_a_lowered_pool_use_no_thread_of_the_loaders_priority(encoder_on: None,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # With runs of two threads, onnxruntime makes its second thread with the session, at the
    # priority of the thread that loads it: the warm server's. The filler's runs on its lowered
    # thread made most of their work there.
    monkeypatch.setenv("SLAYER_KB_ENCODER_THREADS", "2")
    encoder.load.cache_clear()
    try:
        model = encoder.load()
        if not isinstance(model, encoder.Encoder):
            pytest.skip(f"the sentence encoder is not installed: {model}")
        model.encode(["a search's question, at the server's priority"])
        text = " ".join(f"Refunds of order {n} are netted against the amount at month end." for n in range(12))
        with ThreadPoolExecutor(1, initializer=priority.lower_thread, initargs=(10,)) as lowered:
            with placement.runs_on(lowered):
                model.encode([f"{n}: {text}" for n in range(2)])  # the one-thread session made
                before = _cpu_by_thread()
                model.encode([f"{n}: {text}" for n in range(2, 10)])
            after = _cpu_by_thread()  # before the pool's thread ends
    finally:
        encoder.load.cache_clear()
    base = os.nice(0)
    gained = {nice: 0 for nice in (base, base + 10)}
    for tid, (nice, ticks) in after.items():
        gained[nice] = gained.get(nice, 0) + ticks - before.get(tid, (nice, 0))[1]
    assert gained[base + 10] > 0 and gained[base] * 4 <= gained[base + 10], gained
