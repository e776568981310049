"""``slayer-kb watch``: keep the index current while files change.

Design (see DESIGN.md, "Pitfalls"):

- The watchdog thread only *records* that something relevant happened; every piece of index work
  runs on the calling thread, or on the server's thread for a command another process handed
  over (server.py, relay.py), one at a time under one lock, so Whoosh and the KB are never used
  by two threads at once.
- Events are never interpreted one by one. A burst (an editor's temp-file-and-rename save, a
  ``git checkout`` of thousands of files) is debounced into one pass. When the burst named only
  memory files, that pass re-reads just those (``KnowledgeBase.refresh``), comparing their bytes
  with the manifest; a catalog file, a whole folder or a very large burst makes it a full
  ``KnowledgeBase.ensure_fresh()``. Either way a delete just drops the memory from the index, and
  an event for a file whose content did not change writes nothing.
- The watcher itself never writes memory files and never cascades; it takes the KB lock only
  for the length of one incremental sync. (Relayed commands write as they would in their own
  process, under the KB lock.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from watchdog.observers import Observer

from ..core.errors import StoreError
from ..core.locate import MEMORIES_DIR, id_of_path
from ..core.results import SyncReport
from ..search.index import RACY_SECONDS
from ..search.monitor import EVENT_TYPES, EventHandler

if TYPE_CHECKING:
    from ..kb import KnowledgeBase

# A steady stream of events (a long checkout) must not postpone the sync forever.
MAX_DELAY = 0.5
# inotify drops events when its queue overflows and watchdog does not tell us; a cheap lock-free
# freshness check this often when idle catches whatever was lost.
RESCAN_SECONDS = 10.0
# After a failed sync (lock held for a minute by a big commit, a file system error) try again.
RETRY_SECONDS = 2.0
class _Pending:
    """What the watchdog thread hands to the sync loop: when the current burst began, when its
    last relevant event arrived, and which memory files it touched (None: something else changed,
    a catalog file or a whole folder, so only a full check will do). Guarded by a lock."""

    # Past this many files a full check (one scan) is cheaper than stat-ing each by name.
    MAX_NAMED = 2000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.wake = threading.Event()
        self.first: float | None = None
        self.last: float | None = None
        self.ids: set[str] | None = set()

    def note(self, paths: list[str], is_directory: bool) -> None:
        now = time.monotonic()
        with self._lock:
            if self.first is None:
                self.first = now
            self.last = now
            for path in paths:
                memory_id = id_of_path(path)
                if is_directory or memory_id is None or self.ids is None or len(self.ids) >= self.MAX_NAMED:
                    self.ids = None
                else:
                    self.ids.add(memory_id)
        self.wake.set()

    def due(self, debounce: float) -> float | None:
        """Monotonic time at which the pending burst should be synced; None if nothing pending."""
        with self._lock:
            if self.first is None or self.last is None:
                return None
            return min(self.last + debounce, self.first + max(MAX_DELAY, debounce))

    def take(self) -> set[str] | None:
        """The memory ids of the burst (None: check everything), and start a new burst."""
        with self._lock:
            ids, self.ids = self.ids, set()
            self.first = self.last = None
            return ids


class _Watches:
    """What the watcher watches: the KB's root (its own entries), ``memories/``,
    ``datasources/`` and ``models/`` with its datasource folders, and nothing else. A recursive
    watch of the root would also watch ``.git/`` (every object folder git makes, with watchdog
    warnings about each one in the server's log) and ``.slayer-kb/``, whose events are all
    ignored anyway. ``refresh`` watches a folder that was made anew (a checkout that removed
    and brought back ``memories/``): a watch follows the folder it was added for, and dies with
    it even when the new folder has the old inode number."""

    def __init__(self, observer: Any, handler: EventHandler, root: Path) -> None:
        self._observer = observer
        self._handler = handler
        # folder -> (recursive, its (device, inode) when watched, the watch)
        self._folders: dict[Path, tuple[bool, tuple[int, int] | None, Any]] = {
            root: (False, None, None), root / MEMORIES_DIR: (False, None, None),
            root / "datasources": (False, None, None), root / "models": (True, None, None),
        }

    def refresh(self) -> None:
        for folder, (recursive, seen, watch) in list(self._folders.items()):
            try:
                st = os.stat(folder)
                now = (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None
            except OSError:
                now = None
            if now == seen and (now is None or self._alive(watch)):
                continue
            if watch is not None:
                with contextlib.suppress(KeyError, OSError):
                    self._observer.unschedule(watch)
                watch = None
            if now is not None:
                with contextlib.suppress(OSError):
                    watch = self._observer.schedule(self._handler, str(folder), recursive=recursive,
                                                    event_filter=EVENT_TYPES)
            self._folders[folder] = (recursive, now, watch)

    def _alive(self, watch: Any) -> bool:
        """Whether ``watch`` still reports: its emitter stops when its folder is deleted, and a
        folder made anew may get the old inode number back, so the inode alone cannot tell."""
        return watch is not None and any(
            emitter.watch == watch and emitter.should_keep_running() for emitter in self._observer.emitters
        )


class Hosted(Protocol):
    """What the watcher asks of the server it hosts (server.py's ``Server``, which imports
    this module)."""

    @property
    def busy(self) -> AbstractContextManager[Any]: ...  # the server's turn: commands, syncs
    warm: threading.Event

    replaced: bool  # it stopped because the KB's folder is not the one it opened, and said so

    def ready(self, kb: KnowledgeBase) -> None: ...

    def close(self) -> None: ...


class _Moved(Exception):
    """The folder at the KB's path is not the one this process opened (``KnowledgeBase.moved``)."""


def moved_away(root: str | os.PathLike[str]) -> str:
    """What a watch or server says as it exits because its KB's folder was deleted, moved or
    replaced: a supervisor starts it again on the KB there now."""
    return f"the KB at {root} is not the folder this server opened (deleted, moved or replaced): exiting"


def run_watcher(
    kb: KnowledgeBase,
    *,
    debounce: float = 0.2,
    on_sync: Callable[[SyncReport], None] | None = None,
    stop: threading.Event | None = None,
    out: TextIO | None = None,
    server: Hosted | None = None,
) -> bool:
    """Watch ``kb``'s folder and keep its index current until Ctrl-C, SIGTERM or ``stop``, or
    until the folder at its path is not the one opened (then True, said in ``out``).

    ``on_sync`` is called (on this thread) after every sync that changed the index. ``server``
    (server.py) runs the commands that ``slayer-kb`` processes relay to it, on ``kb`` kept
    warm, never at the same time as a sync; it is closed when the watcher stops.
    """
    stop = stop if stop is not None else threading.Event()
    log = out if out is not None else sys.stderr
    pending = _Pending()
    observer = Observer()
    watches = _Watches(observer, EventHandler(str(kb.root), pending.note), kb.root)
    watches.refresh()
    reporter = _Reporter(log)
    busy: AbstractContextManager[Any] = server.busy if server is not None else threading.Lock()
    moved = False
    with _stop_on_signals(stop):
        try:
            observer.start()
        except OSError as exc:
            if server is not None:
                server.close()
            kb.close()
            raise StoreError(
                f"Cannot watch {kb.root}: {exc.strerror or exc}. On Linux, too many watched "
                "folders means raising fs.inotify.max_user_watches (sysctl)."
            ) from None
        if server is not None:
            # Kept warm: its inotify monitor tells each command whether anything changed, so a
            # read skips the per-file check while nothing did.
            server.ready(kb)
        try:
            _say(log, f"Watching {kb.root} (Ctrl-C to stop)")
            _loop(kb, pending, stop, debounce, on_sync, reporter, busy, watches.refresh,
                  warm=server.warm if server is not None else None)
        except KeyboardInterrupt:
            # a second Ctrl-C while a sync or the lock wait was running: stop now, still cleanly
            pass
        except _Moved:
            moved = True
            if server is None or not server.replaced:  # else its own check said so first
                _say(log, moved_away(kb.root))
        finally:
            if server is not None:
                server.close()
            observer.stop()
            observer.join(timeout=5.0)
            kb.close()
    _say(log, "Stopped watching.")
    return moved


def _loop(
    kb: KnowledgeBase,
    pending: _Pending,
    stop: threading.Event,
    debounce: float,
    on_sync: Callable[[SyncReport], None] | None,
    reporter: _Reporter,
    busy: AbstractContextManager[Any],
    rewatch: Callable[[], None],
    warm: threading.Event | None = None,
) -> None:
    """Sync on events and every RESCAN_SECONDS. A server's loop (``warm``) then loads what the
    first command would read, once the first sync is done, and sets ``warm``. Before each full
    check, ``rewatch`` watches the folders made anew (the check then sees what they hold)."""
    # The initial sync runs after the observer started, so nothing changed meanwhile is missed.
    next_check: float | None = time.monotonic()
    last_sync = 0.0
    settle_rounds = 0
    settling = False
    # Until the first full check succeeded, a burst of named files is no reason to skip one.
    initialised = False
    while not stop.is_set():
        now = time.monotonic()
        due = pending.due(debounce)
        if due is not None and due <= now:
            named = pending.take()
            settle_rounds = 0
            settling = False
            if named is not None and initialised:
                # Only memory files changed, and we know which: re-read just those, no scan.
                ok, racy = _sync(kb, on_sync, reporter, busy, named=named, unless_indexed=True)
                last_sync = time.monotonic()
                if not ok:
                    next_check = last_sync + RETRY_SECONDS
                elif racy:
                    settle_rounds, settling = 1, True
                    next_check = last_sync + RACY_SECONDS + 0.1
                continue
            next_check = now
        elif next_check is None and now - last_sync >= RESCAN_SECONDS:
            settling = False
            next_check = now
        if next_check is not None and next_check <= now:
            # A settling pass only re-reads the young files (by name, no scan), quietly.
            named = set(kb.young_files()) if settling and initialised else None
            if named is None:
                rewatch()
            ok, racy = _sync(kb, on_sync, reporter, busy, quiet=settling, named=named)
            if ok and warm is not None and not warm.is_set():
                try:
                    with busy:
                        kb.warm_up()
                except Exception as exc:  # noqa: BLE001 - only a head start: commands load what they need
                    reporter.say(f"Could not warm up ({exc}); the first commands load what they need.")
                warm.set()
            initialised = initialised or ok
            last_sync = time.monotonic()
            next_check = None
            settling = False
            if not ok:
                next_check = last_sync + RETRY_SECONDS
            elif racy and settle_rounds < 3:
                # Files changed within the timestamp granularity stay marked for a re-read; once
                # they are old enough, one more sync settles them so later commands skip the lock.
                settle_rounds += 1
                settling = True
                next_check = last_sync + RACY_SECONDS + 0.1
            continue
        if due is None:
            # Idle: sleep until an event arrives, in short slices so ``stop`` is honoured soon.
            if pending.wake.wait(timeout=0.1):
                pending.wake.clear()
        else:
            stop.wait(timeout=min(due - now, 0.05))


def _sync(
    kb: KnowledgeBase,
    on_sync: Callable[[SyncReport], None] | None,
    reporter: _Reporter,
    busy: AbstractContextManager[Any],
    quiet: bool = False,
    named: set[str] | None = None,
    unless_indexed: bool = False,
) -> tuple[bool, bool]:
    """One freshness pass (of the ``named`` memories only, when given). Returns (succeeded,
    files still awaiting a racy re-read). ``unless_indexed``: no pass when the named files are
    as this process's last update of them read them (``as_indexed``), as for the events of a
    server's own commit, which indexes its files before its turn ends. The events come before
    that update, so the files are looked at again once the turn is taken; the turn is not taken
    at all when they are as indexed already. Young files still get their settling re-read."""
    if unless_indexed and named is not None and kb.as_indexed(named):
        return True, bool(kb.young_files())
    try:
        with busy:
            if unless_indexed and named is not None and kb.as_indexed(named):
                report = None
            elif kb.moved():
                # Not the folder opened: the folder there now, perhaps still being copied into
                # place, is not this process's to index. A server's check says so and stops it;
                # a watch no server is hosted in stops here (``run_watcher``).
                raise _Moved
            elif named is None:
                # A full check looks at the files even if the monitor of relayed searches saw no
                # event: a network file system reports none for changes made on another machine.
                report = kb.ensure_fresh(trust_monitor=False, reading=False)
            else:
                report = kb.refresh(sorted(named))
            if report is not None:
                reporter.report(report, kb, summary=not quiet)
                changed = report.updated or report.removed or report.catalog_changed or report.rebuilt
                if on_sync is not None and changed:
                    on_sync(report)
        reporter.ok()
        return True, bool(kb.young_files())
    except (KeyboardInterrupt, _Moved):
        raise
    except Exception as exc:  # noqa: BLE001 - the watcher must outlive any one failed sync
        reporter.error(exc)
        return False, False


class _Reporter:
    """Prints a line per sync that changed something; each broken file and error only once."""

    def __init__(self, log: TextIO) -> None:
        self._log = log
        self._problems: set[str] = set()
        self._error: str | None = None

    def report(self, report: SyncReport, kb: KnowledgeBase, summary: bool = True) -> None:
        parts = []
        if report.rebuilt:
            parts.append("index rebuilt")
        if report.updated:
            parts.append(f"indexed {report.updated}")
        if report.removed:
            parts.append(f"removed {report.removed}")
        if report.catalog_changed:
            parts.append("catalog reindexed")
        if parts and summary:
            _say(self._log, ", ".join(parts))
        current = {str(p) for p in report.problems}
        if report.catalog_changed or report.rebuilt:
            current |= {str(p) for p in kb.catalog.problems}
        else:
            # catalog problems are only re-read when the catalog changes: keep the known ones
            current |= {p for p in self._problems if not p.startswith(f"{MEMORIES_DIR}/")}
        for problem in sorted(current - self._problems):
            _say(self._log, f"{problem} (skipped)")
        # a fixed file leaves the set, so breaking it again is reported again
        self._problems = current

    def ok(self) -> None:
        self._error = None

    def say(self, line: str) -> None:
        _say(self._log, line)

    def error(self, exc: Exception) -> None:
        message = f"Error: {exc}"
        if message != self._error:
            _say(self._log, f"{message} (retrying)")
        self._error = message


def _say(log: TextIO, line: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(line, file=log, flush=True)


@contextlib.contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM ask the loop to stop after the current sync; a second one interrupts."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
