"""What the warm server does for a bench phase's saves (readers.py): the sentence vectors its
filler made (``server status``'s ``sentence_vectors``: ``filled``, ``covered``, ``passes``), how
long after a save's reply its vector was searchable, and the server's CPU by thread niceness,
read from /proc (Linux; "unattributed": threads that came and went between two polls).

A save's vector is searchable by meaning once the server's filler made it (issue 29: at most 1 s
after the reply). Status counts the covered memories, not which: the k-th save replied in a phase
counts as searchable once ``covered`` rose by k since the phase began (no memory is forgotten
meanwhile; the filler takes every memory lacking a vector at once, so a later save is not covered
before an earlier one but by the same pass).
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from pathlib import Path
from typing import Any

# Status polls a second: fine enough against the 1 s target, few enough not to load the server.
POLL_SECONDS = 0.1
TICK_MS = 1000 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 10.0


def _ticks(stat: Path) -> tuple[int, int] | None:
    """The niceness and CPU ticks (user + system) in a /proc .../stat file, None once gone."""
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(fields[16]), int(fields[11]) + int(fields[12])


class VectorWatch:
    """Polls the server of ``root`` from ``start`` until ``finish``; ``saved`` after each save's reply."""

    def __init__(self, root: Path) -> None:
        from slayer_kb.daemon import relay

        self._status = lambda: relay.control(root, "status") or {}
        self._lock = threading.Lock()
        self._replies: list[float] = []  # each save's reply, in order
        self._searchable: list[float] = []  # seconds from the k-th reply to its vector counted
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        first = self._status()
        vectors = first.get("sentence_vectors") or {}
        self._pid = first.get("pid")
        self._covered0 = vectors.get("covered") or 0
        self._memories0 = vectors.get("memories") or 0
        self._passes0 = vectors.get("passes") or 0
        self._filled0 = vectors.get("filled") or 0
        self._last = vectors
        self._threads: dict[str, tuple[int, int]] = {}  # tid: (niceness, ticks since start)
        self._at_start = self._thread_ticks()
        self._process0 = self._process_ticks()

    def start(self) -> None:
        self._thread.start()

    def saved(self) -> None:
        with self._lock:
            self._replies.append(time.monotonic())

    def finish(self, settle: float = 30.0) -> dict[str, Any]:
        """Once the saves stopped: waits (at most ``settle`` s) for every saved memory's vector."""
        deadline = time.monotonic() + settle
        while time.monotonic() < deadline and not self._caught_up():
            time.sleep(POLL_SECONDS)
        self._stop.set()
        self._thread.join()
        by_nice: dict[str, float] = {}
        for nice, ticks in self._threads.values():
            by_nice[f"nice_{nice}"] = by_nice.get(f"nice_{nice}", 0) + ticks * TICK_MS
        process = self._process_ticks() - self._process0
        seen = sum(ticks for _nice, ticks in self._threads.values())
        # Threads that came and went between two polls (a read's, an encoding helper's).
        by_nice["unattributed"] = max(0, process - seen) * TICK_MS
        vectors = self._last
        waits = sorted(self._searchable)
        return {
            # Made by the server's filler; the rest of ``covered``'s rise came from the cache.
            "vectors_filled": (vectors.get("filled") or 0) - self._filled0,
            "covered_added": (vectors.get("covered") or 0) - self._covered0,
            "memories_added": (vectors.get("memories") or 0) - self._memories0,
            "filler_passes": (vectors.get("passes") or 0) - self._passes0,
            "searchable_after_ms": {
                "p50": round(statistics.median(waits) * 1000) if waits else None,
                "max": round(waits[-1] * 1000) if waits else None,
                "over_1s": sum(w > 1.0 for w in waits), "never": len(self._replies) - len(waits),
            },
            "server_cpu_ms": {name: round(ms) for name, ms in sorted(by_nice.items())},
        }

    def _caught_up(self) -> bool:
        with self._lock:
            return len(self._searchable) == len(self._replies) and self._last.get("covered") == self._last.get("memories")

    def _poll(self) -> None:
        while not self._stop.is_set():
            vectors = self._status().get("sentence_vectors") or {}
            now = time.monotonic()
            with self._lock:
                if vectors.get("covered") is not None:
                    self._last = vectors
                    made = vectors["covered"] - self._covered0
                    while len(self._searchable) < min(made, len(self._replies)):
                        self._searchable.append(now - self._replies[len(self._searchable)])
            for tid, (nice, ticks) in self._thread_ticks().items():
                self._threads[tid] = (nice, ticks - self._at_start.get(tid, (0, 0))[1])
            self._stop.wait(POLL_SECONDS)

    def _thread_ticks(self) -> dict[str, tuple[int, int]]:
        if self._pid is None:
            return {}
        try:
            tasks = list(Path(f"/proc/{self._pid}/task").iterdir())
        except FileNotFoundError:
            return {}
        return {task.name: found for task in tasks if (found := _ticks(task / "stat")) is not None}

    def _process_ticks(self) -> int:
        found = _ticks(Path(f"/proc/{self._pid}/stat")) if self._pid is not None else None
        return found[1] if found else 0
