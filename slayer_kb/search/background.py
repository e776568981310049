"""The warm server's sentence vectors, made off the save path: a thread that wakes after each
command run in its turn (and once at start; a read beside a write indexes nothing) and makes the
vectors the memories lack (``Index.fill_sentences``), holding the server's command lock only
while it reads or writes the index. Its progress is what ``slayer-kb server status`` shows under
``sentence_vectors``. The model's runs are made on a thread of lower priority (core/priority.py).
It holds ``filler.LOCK`` once it has it, so no command starts a detached filler beside it; while
one started before the server still runs, the thread leaves the work to it and looks again at
its next wake."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any

from ..core import priority
from . import encoder, filler, placement, switches
from .index import Index

# How often an idle server checks for memories without a sentence vector (a cheap count).
RECHECK_SECONDS = 30.0


def made_here() -> bool:
    """Whether the warm server makes the sentence vectors itself (this thread): when its own
    settings let it load the encoder. Else (``SLAYER_KB_NO_MEANING`` or ``SLAYER_KB_NO_ENCODER``
    at its start, or no encoder) the commands it runs for clients that have search by meaning
    leave them to the detached filler, as their own processes would, and its write process too."""
    return encoder.installed()


class SentenceFiller:
    def __init__(
        self, index: Index, guard: Callable[[], AbstractContextManager[Any]], after: threading.Event | None = None,
        own: Mapping[str, str] | None = None,
    ) -> None:
        self._index = index
        self._here = made_here()
        # The server's own settings (``own``: as its runner read them; else this process's now),
        # which this thread goes by while a command in its turn has its client's in os.environ
        # (switches.py).
        self._own = dict(os.environ) if own is None else own
        index.background_vectors = not self._here  # this thread makes them, if it runs
        self._claim: int | None = None  # filler.LOCK, held from the first pass on
        self._after = after  # the server's first sync and warm-up: the first pass waits for them
        self._guard = guard
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._progress: tuple[int, int] = (0, 0)
        self._coverage: tuple[int, int] | None = None  # (final, memories): ``sentence_coverage``
        self._standing = 0  # memories whose sentence vector is a stand-in (filling.py)
        self._running = False
        self._passes = 0  # passes a command woke (not the periodic look), for ``status``
        self._filled = 0  # memories the passes gave a sentence vector, for ``status``
        self._warmed = False
        self._thread = threading.Thread(target=self._loop, name="slayer-kb sentences", daemon=True)
        # The model's runs, on a thread of lower priority (core/priority.py): this one holds the
        # server's turn and view while it reads and writes the index, which a thread that waits
        # for the CPU must not, as searches wait for them.
        steps = priority.niceness()
        self._encoding = ThreadPoolExecutor(1, "slayer-kb encoder", priority.lower_thread, (steps,)) if steps else None

    def start(self) -> None:
        if self._here:
            self._thread.start()
            self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    def after_command(self, coverage: tuple[int, int] | None = None) -> None:
        """A command that may have indexed memories is over: a pass, unless ``coverage`` (the
        held table's, as a write's take-in left it) says every memory has its vectors (a save
        whose text's vector the cache held). Then it is what ``status`` shows, with no pass:
        every vector final, so none is a stand-in (the count of the last measure is stale)."""
        if coverage is not None and coverage[0] >= coverage[1]:
            with self._lock:
                self._coverage, self._standing = coverage, 0
            return
        self.wake()

    def stop(self) -> None:
        """Ends the pass between two batches. Not waited for: a batch being made is lost (its
        writes are one transaction each), and the next server makes it again."""
        self._stop.set()
        self._wake.set()

    def status(self) -> dict[str, Any]:
        """Whether a pass is running, its progress, and how many live memories have a vector."""
        with switches.given(self._own):  # asked on a connection's thread, beside any command
            if not encoder.installed():
                return {"model": None, "reason": str(encoder.model_file())}
        # Never waits for the command lock: status answers while a command runs.
        with self._lock:
            done, todo = self._progress
            final, total = self._coverage or (None, None)
            covered = None if final is None else final + self._standing
            return {"model": encoder.MODEL_KEY, "covered": covered, "final": final, "stand_ins": self._standing,
                    "memories": total, "building": self._running,
                    "pass_done": done, "pass_total": todo, "passes": self._passes, "filled": self._filled}

    def _loop(self) -> None:
        with switches.given(self._own):
            self._passes_until_stopped()

    def _passes_until_stopped(self) -> None:
        while self._after is not None and not self._after.wait(0.2):
            if self._stop.is_set():
                return
        while not self._stop.is_set():
            # Also now and then: an edit made beside the server (the watcher indexed it).
            woken = self._wake.wait(RECHECK_SECONDS)
            self._wake.clear()
            if self._stop.is_set():
                break
            with self._lock:
                self._passes += woken
            if self._claim is None:
                self._claim = filler.hold(self._index.root)
                if self._claim is None:
                    # A detached filler started before this server is at work: take its vectors.
                    self._absorb()
                    continue
                self._absorb()  # it may have finished since
            with self._lock:
                self._running, self._progress = True, (0, 0)
            try:
                if self._coverage is None:  # else the last pass's end measured it
                    self._measure()
                if not self._warmed:
                    # A first run here, at the server's priority: the model and its tokenizer
                    # make their own threads on first use, with their maker's priority, and a
                    # search's question runs on them too.
                    model = encoder.load()
                    if isinstance(model, encoder.Encoder):
                        model.encode(["warm"])
                    self._warmed = True
                with placement.runs_on(self._encoding):
                    filled = self._index.fill_sentences(self._report, self._guard, self._stop.is_set, background=True)
                with self._lock:
                    self._filled += filled
            except Exception:  # noqa: BLE001, S110 - a failed pass leaves the static vectors; the next command retries
                pass
            finally:
                self._measure()
                with self._lock:
                    self._running = False
        if self._claim is not None:
            os.close(self._claim)
        if self._encoding is not None:
            self._encoding.shutdown(wait=False)

    def _absorb(self) -> None:
        with self._guard():
            self._index.absorb_sentences()
        self._measure()

    def _measure(self) -> None:
        with self._guard():
            covered, total, _pending, standing = self._index.coverage()
        with self._lock:
            self._coverage, self._standing = (covered - standing, total), standing

    def _report(self, done: int, total: int) -> None:
        # Each measure takes the server's turn from reads and saves: the pass's end is measured
        # once, after it, and a pass of one batch (a save's new memory) measures nothing more.
        if done < total:
            self._measure()
        with self._lock:
            self._progress = (done, total)
