"""What every test runs with (conftest's autouse fixture), and a KB that a module's tests share
because they only read it."""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import pwd
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .repos import GIT_ENV, git

if TYPE_CHECKING:  # the package is imported once the bytecode plugin has compiled it
    from slayer_kb import KnowledgeBase


def isolate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What every test runs with; also for a module-scoped fixture, set up before the tests' own."""
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    # Tests never read the developer's own git configuration or SLAYER_KB.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("SLAYER_KB", raising=False)
    # The state folders' key (store/state.py) is never the developer's, under their home.
    monkeypatch.setenv("XDG_STATE_HOME", str(state_home()))
    monkeypatch.delenv("SLAYER_KB_AUTHOR", raising=False)
    # No test starts a warm server by accident (docs/server.md): commands relay to a server a
    # test started itself (``slayer-kb watch``), and the server tests turn ``on`` explicitly.
    monkeypatch.setenv("SLAYER_KB_SERVER", "manual")
    monkeypatch.delenv("SLAYER_KB_SERVER_IDLE", raising=False)
    monkeypatch.delenv("SLAYER_KB_SERVER_SOCKET", raising=False)
    # Each test has its own sentence-vector cache: vectors one test made never serve another.
    monkeypatch.setenv("SLAYER_KB_CACHE", str(tmp_path / "sentence-cache"))
    monkeypatch.delenv("SLAYER_KB_CACHE_MAX_MB", raising=False)  # its bound the default, as a test expects
    # Nor does a one-shot search start a filler only to mark that cache's texts used
    # (``Index.want_marks``): a process a KB a day, about 0.4 s of CPU, which a test may outlive.
    monkeypatch.setenv("SLAYER_KB_NO_MARKS", "1")
    # Nor do the units a search read from another test's cache, which the process remembers
    # (none before the search package is imported: importing it here would cost every worker).
    if (meaning := sys.modules.get("slayer_kb.search.meaning")) is not None:
        meaning.forget_units()
    # The sentence encoder (a second to load, tens of ms a memory) runs only in the tests that
    # are about it (test_search_sentences.py turns it back on): elsewhere a warm server making
    # vectors in the background would change rankings while a test compares two answers.
    monkeypatch.setenv("SLAYER_KB_NO_ENCODER", "1")
    # A write process and the upkeep jobs run at the tests' own priority (test_priority.py sets
    # its steps): lowered 10 steps as a session, they got a tenth of a core beside the run's
    # workers and its test waited (test_beside.py with test_exactly_once.py: 20 s, 45-55 s lowered).
    monkeypatch.setenv("SLAYER_KB_WRITE_NICENESS", "0")


@functools.cache
def state_home() -> Path:
    """This process's ``XDG_STATE_HOME``: one for all its tests, so the KB a module's tests
    share (``read_only``) stays stamped under the key its tests check it with."""
    where = Path(tempfile.mkdtemp(prefix="slayer-kb-state-"))
    atexit.register(shutil.rmtree, where, ignore_errors=True)
    return where


def account_home_at(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Make ``folder`` (made here) the home this user's password entry names, for the tests of
    the state folders' key without ``XDG_STATE_HOME`` (core/home.py): never the real one."""
    entry = pwd.getpwuid(os.geteuid())
    folder.mkdir()
    moved = pwd.struct_passwd((*entry[:5], str(folder), *entry[6:]))
    real = pwd.getpwuid
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: moved if uid == entry.pw_uid else real(uid))


@contextlib.contextmanager
def read_only(folder: Path, make: Callable[[Path], KnowledgeBase]) -> Iterator[KnowledgeBase]:
    """The KB ``make`` makes at ``folder``/kb (isolated as a test is), indexed, for a module's
    tests that only read it: made once, not for each test. Fails the module if a test committed
    or changed a file: the next test would read what it left."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate(monkeypatch, folder)
        kb = make(folder / "kb")
        kb.ensure_fresh()
        head = git(kb.root, "rev-parse", "HEAD")
        yield kb
        kb.close()
        assert (git(kb.root, "rev-parse", "HEAD"), git(kb.root, "status", "--porcelain")) == (head, "")
