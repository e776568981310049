"""What a relayed command waits for in the warm server (server.py), and what its client hears
meanwhile: the server's turn, which one command, sync or sentence pass holds at a time, with the
KB's view (store/view.py); and the heartbeat that tells a waiting client the server is alive
(relay.py gives a server silent for ``SILENT_SECONDS`` up)."""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any

from . import relay

if TYPE_CHECKING:
    from ..store.view import View


class Turn:
    """The server's turn lock: one command, sync or sentence pass at a time, and with it the
    KB's view (store/view.py), which reads beside a write take between the write's steps."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.view: View | None = None  # set once the KB is open (Server.ready)
        self._holds: list[View | None] = []

    def acquire(self, timeout: float = -1, view: bool = True) -> bool:
        """The turn, and with it the view unless ``view`` is False (a write handed to the
        write process takes the view only for what it changes in memory)."""
        if not self._lock.acquire(timeout=timeout):
            return False
        held = self.view if view else None
        if held is not None:
            held.acquire()
        self._holds.append(held)
        return True

    def release(self) -> None:
        held = self._holds.pop()
        if held is not None:
            held.release()
        self._lock.release()

    def __enter__(self) -> Turn:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Heartbeat:
    """Sends a beat to the client every HEARTBEAT seconds, until ``finish``."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._done.wait(relay.HEARTBEAT):
            self.send(relay.BEAT)

    def send(self, data: bytes) -> None:
        with self._lock, contextlib.suppress(OSError):
            if not self._done.is_set():
                self._conn.sendall(data)

    def finish(self, data: bytes) -> None:
        with self._lock:
            if self._done.is_set():
                return
            self._done.set()
            if data:
                self._conn.sendall(data)
