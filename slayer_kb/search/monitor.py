"""Which file events can change a KB's index, and an in-process monitor built on them.

The watcher (``watch.py``) uses the event filter; long-running processes (the MCP server) use the
monitor, which lets a warm ``KnowledgeBase`` skip the per-file freshness scan while nothing
changed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import stat
import struct
import sys
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

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

from ..core.locate import MEMORIES_DIR, is_leftover

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
# The entries of the KB's root that the index reads (sessions/, a README: not).
_ROOT_NAMES = frozenset({MEMORIES_DIR, *CATALOG_DIRS, "priority.yaml"})


def is_relevant(rel: str, is_directory: bool) -> bool:
    """Can a change at ``rel`` (a POSIX path relative to the KB root) change the index?"""
    parts = PurePosixPath(rel).parts
    if not parts or any(p.startswith(".") for p in parts):
        # .git/, .slayer-kb/ (our own index writes), vim's .x.yaml.swp, editors' hidden temps
        return False
    name = parts[-1]
    if is_leftover(name):
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
    """Tells a warm process, without a race, whether anything may have changed since it last
    looked: an inotify instance of its own watches the KB's folders (not recursively), and the
    kernel queues an event before the write that caused it returns, so a write that finished
    before a check is always seen by it. Linux only; elsewhere :meth:`create` returns None and
    every read scans.
    """

    # Every kind of change to a folder's entries, to the folders themselves, and queue overflow.
    _MASK = 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800
    _NONBLOCK_CLOEXEC = 0o4000 | 0o2000000

    def __init__(self, root: Path, libc: Any, fd: int) -> None:
        self._root = root
        self._libc = libc
        self._fd = fd
        self._watched: dict[Path, tuple[int, int]] = {}  # folder -> the (device, inode) watched
        self._wds: dict[int, Path] = {}  # watch descriptor -> its folder
        # Watches the kernel dropped (IN_IGNORED: the folder was deleted). A folder made anew may
        # get the old inode number back, so only this tells its watch is dead.
        self._dead: set[int] = set()
        self._pending = False
        self._peeked: set[str] = set()  # a write's own files whose events a read took (peek)
        self._generation = 0  # counts the reads that found a relevant event, and new watches
        self._root_wd = -1  # the root's watch: of its entries, only _ROOT_NAMES count
        self._watch_folders()

    @classmethod
    def create(cls, root: Path) -> ChangeMonitor | None:
        if not sys.platform.startswith("linux"):
            return None
        try:
            # The running program's own symbols hold libc's: find_library would start ldconfig.
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(cls._NONBLOCK_CLOEXEC)
        except (OSError, AttributeError):
            return None
        return cls(root, libc, fd) if fd >= 0 else None

    def _folders(self) -> list[Path]:
        models = self._root / "models"
        folders = [self._root, self._root / MEMORIES_DIR, self._root / "datasources", models]
        if models.is_dir():
            folders.extend(p for p in models.iterdir() if p.is_dir() and not p.name.startswith("."))
        return folders

    def _watch_folders(self) -> None:
        """Watch each folder not watched yet, or made anew since (a watch follows the inode it was
        added for): a folder that came or went since the last look is a change in itself."""
        for folder in self._folders():
            try:
                st = os.stat(folder)
            except OSError:
                st = None
            now = (st.st_dev, st.st_ino) if st is not None and stat.S_ISDIR(st.st_mode) else None
            if now == self._watched.get(folder):
                continue
            self._watched.pop(folder, None)
            # An old watch's IN_IGNORED, read later, must not mark the new one dead.
            self._wds = {wd: watched for wd, watched in self._wds.items() if watched != folder}
            self._generation += 1
            if now is None:
                continue
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(folder), self._MASK)
            if wd >= 0:
                self._watched[folder] = now
                self._wds[wd] = folder
                if folder == self._root:
                    self._root_wd = wd

    def changed(self) -> bool:
        """True if a full freshness check is needed (the caller does one right away)."""
        relevant = self._read(frozenset()) or self._pending
        self._pending = False
        if relevant:
            self._rewatch()
        return relevant

    def generation(self) -> int | None:
        """A number that changes whenever an event that could change the index arrives (this
        process's absorbed writes aside) or a folder is watched anew. Unlike ``changed`` it leaves
        the event for the next freshness check: what was derived from the memory files at one
        generation holds while it lasts. None while the memories folder has no watch (it is
        missing, or the system's limit on watches was reached): nothing can be trusted then."""
        if self._read(frozenset()):
            self._pending = True
            self._rewatch()
        return self._generation if self._root / MEMORIES_DIR in self._watched else None

    def _rewatch(self) -> None:
        # A folder that appeared (a new datasource's models, memories/ made anew) needs a watch;
        # so does one whose watch the kernel dropped, even if its inode number came back.
        dead = {self._wds.pop(wd) for wd in self._dead if wd in self._wds}
        self._dead.clear()
        self._watched = {
            folder: sig for folder, sig in self._watched.items() if folder not in dead and folder.is_dir()
        }
        self._watch_folders()

    def absorb(self, own: set[str]) -> None:
        """Drop the events of this process's own writes: the files named ``own`` (file names, no
        folders: a folder coming or going always counts), which it has just written and indexed
        under the KB lock. Any other event stays, for the next ``changed``: a writer's next
        look-up needs no full check after its own commit, and still sees an edit made beside it."""
        self._peeked -= own
        if self._read(frozenset(own)):
            self._pending = True
            self._rewatch()

    def note_change(self) -> None:
        """Count a change this process learned of otherwise, for the next ``changed``: a file
        a write process indexed, edited since by hand (its event went with the write's own)."""
        self._pending = True
        self._generation += 1

    def peek(self, own: frozenset[str]) -> bool:
        """For a read beside a write that commits the files named ``own``: True when nothing but
        those changed since the last look (the index the write has not updated yet still
        describes every other file). Any other event stays for the next ``changed``; the
        write's own are kept until it absorbs them (``settle``)."""
        seen = self._names()
        foreign = {name for name in seen if not name or name not in own}
        self._peeked |= seen - foreign
        if foreign:
            self._pending = True
            self._generation += 1
            self._rewatch()
        return not self._pending

    def settle(self) -> None:
        """A write is over: own events a read took (``peek``) that it did not absorb (it failed
        before indexing) count as changes, for the next ``changed``."""
        if self._peeked:
            self._peeked.clear()
            self._pending = True
            self._generation += 1

    def _read(self, own: frozenset[str]) -> bool:
        """Read the queued events: whether one could change the index and is not in ``own``."""
        relevant = any(not name or name not in own for name in self._names())
        if relevant:
            self._generation += 1
        return relevant

    def _names(self) -> set[str]:
        """The names of the queued events that could change the index ("": a folder's own
        event or a queue overflow, which always count)."""
        readable, _, _ = select.select([self._fd], [], [], 0)
        names: set[str] = set()
        if not readable:
            return names
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while data := os.read(self._fd, 65536):
                for wd, mask, name in _events(data):
                    if mask & _IN_IGNORED:
                        self._dead.add(wd)
                    if not name.startswith(".") and (wd != self._root_wd or not name or name in _ROOT_NAMES):
                        names.add(name)
        return names

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


_IN_IGNORED = 0x8000  # the kernel dropped the watch (its folder was deleted); always sent


def _events(data: bytes) -> list[tuple[int, int, str]]:
    """The watch, mask and name of each record in a buffer of ``struct inotify_event`` ("" for an
    event on the folder itself or a queue overflow, which always count). Hidden names
    (.slayer-kb, .git, an editor's .x.swp) are left for the caller to ignore: slayer-kb's own
    index writes must not count."""
    events = []
    offset = 0
    while offset + 16 <= len(data):
        wd, mask, _cookie, length = struct.unpack_from("iIII", data, offset)
        raw = data[offset + 16:offset + 16 + length].split(b"\0", 1)[0]
        events.append((wd, mask, os.fsdecode(raw)))
        offset += 16 + length
    return events
