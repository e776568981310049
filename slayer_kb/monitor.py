"""Which file events can change a KB's index, and an in-process monitor built on them.

The watcher (``watch.py``) and long-running processes (the MCP server) share these: the monitor
lets a warm ``KnowledgeBase`` skip the per-file freshness scan while nothing relevant happened.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import PurePosixPath

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from .index import MEMORIES_DIR

# Opened/closed-without-write events are left out on purpose: the sync itself reads every changed
# file, and reacting to those reads would make the watcher wake itself up forever.
EVENT_TYPES: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]
CATALOG_DIRS = ("datasources", "models")
_TEMP_SUFFIXES = (".swp", ".swx", ".swo", "~", ".tmp", ".bak", ".orig")


def is_relevant(rel: str, is_directory: bool) -> bool:
    """Can a change at ``rel`` (a POSIX path relative to the KB root) change the index?"""
    parts = PurePosixPath(rel).parts
    if not parts or any(p.startswith(".") for p in parts):
        # .git/, .slayer-kb/ (our own index writes), vim's .x.yaml.swp, editors' hidden temps
        return False
    name = parts[-1]
    if name.endswith(_TEMP_SUFFIXES) or name == "4913" or (name[:1] == "#" and name[-1:] == "#"):
        return False
    if is_directory:
        # A whole folder appearing or vanishing (checkout of a branch without it, rm -r) changes
        # every file below it, and inotify may report only the folder.
        if len(parts) == 1:
            return name in (MEMORIES_DIR, *CATALOG_DIRS)
        return len(parts) == 2 and parts[0] == "models"
    if not name.endswith(".yaml"):
        return False
    if len(parts) == 1:
        return name == "priority.yaml"
    if len(parts) == 2:
        return parts[0] in (MEMORIES_DIR, "datasources")
    return len(parts) == 3 and parts[0] == "models"



class EventHandler(FileSystemEventHandler):
    """Calls ``note(paths, is_directory)`` (on the watchdog thread) with the KB-relative paths of
    every event that can change the index."""

    def __init__(self, root: str, note: Callable[[list[str], bool], None]) -> None:
        super().__init__()
        self._prefix = root.rstrip("/") + "/"
        self._note = note

    def _relative(self, path: bytes | str) -> str | None:
        text = path.decode("utf-8", "surrogateescape") if isinstance(path, bytes) else path
        if not text.startswith(self._prefix):
            return None
        return text[len(self._prefix):]

    def on_any_event(self, event: FileSystemEvent) -> None:
        paths = [event.src_path]
        if event.dest_path:
            # a rename counts if either side is a memory: vim renames x.yaml away to x.yaml~,
            # a temp-file save renames x.yaml.tmp onto x.yaml
            paths.append(event.dest_path)
        relevant = [
            rel for rel in (self._relative(path) for path in paths)
            if rel is not None and is_relevant(rel, event.is_directory)
        ]
        if relevant:
            self._note(relevant, event.is_directory)




class ChangeMonitor:
    """Tells a warm process whether anything relevant may have changed since it last looked.

    It errs towards "changed": at start, after any relevant event, every ``RESCAN_SECONDS``
    (inotify drops events silently when its queue overflows), and when the observer died.
    """

    RESCAN_SECONDS = 10.0

    def __init__(self, root: str) -> None:
        self._changed = threading.Event()
        self._changed.set()
        self._checked_at = 0.0
        self._observer = Observer()
        self._observer.schedule(
            EventHandler(root, lambda _paths, _is_dir: self._changed.set()), root, recursive=True,
            event_filter=EVENT_TYPES,
        )
        self._observer.daemon = True
        self._observer.start()

    def changed(self) -> bool:
        """True if a full freshness check is needed; the caller then does one right away."""
        now = time.monotonic()
        stale = now - self._checked_at > self.RESCAN_SECONDS
        if self._changed.is_set() or stale or not self._observer.is_alive():
            # Cleared before the caller looks, so an event during its check is not lost.
            self._changed.clear()
            self._checked_at = now
            return True
        return False

    def stop(self) -> None:
        self._observer.stop()
        self._observer.join(timeout=5)
