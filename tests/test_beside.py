"""Reads answered beside a running write (docs/server.md, "Reads beside writes"): a relayed
``search``, ``get`` or ``list`` is answered while a write is held inside the server, from the
state before that write, never half of it; an edit by hand made meanwhile is not missed.

A ``post-index-change`` hook holds the write at the latest moment git gives one: its commit is
published and its files are in the work tree (git's index is being staged), while the search
index does not have it yet. The reads run under a PYTHONPATH that blocks Whoosh, so only the
server can have answered them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.daemon import relay
from slayer_kb.daemon.running import Runner
from slayer_kb.search.monitor import ChangeMonitor
from slayer_kb.store.view import View
from testing import Watcher, blocker, in_process_runner

pytestmark = pytest.mark.skipif(not relay.SUPPORTED, reason="commands are relayed on POSIX systems only")

# Holds (once) the first index write after the work tree's memories/ holds the text in .git/hold,
# until .git/release exists (at most 120 s, so a failed test never wedges its server).
HOOK = """#!/bin/sh
dir="$(git rev-parse --git-dir)"
[ -f "$dir/hold" ] || exit 0
grep -qr -- "$(cat "$dir/hold")" "$(git rev-parse --show-toplevel)/memories" || exit 0
rm -f "$dir/hold"
touch "$dir/held"
n=0
while [ ! -f "$dir/release" ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n+1)); done
exit 0
"""


def _until(check: Callable[[], object], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.05)


def _env(blocked: Path | None = None) -> dict[str, str]:
    env = dict(os.environ, COLUMNS="80")
    if blocked is not None:
        env["PYTHONPATH"] = str(blocked)
    return env


def relayed(root: Path, blocked: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A command that only the server can answer (``testing.blocker``); ``env``: its client's
    environment, if not this process's."""
    return subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), *args], capture_output=True,
                          text=True, env=env or _env(blocked), timeout=120)


def start(root: Path, *args: str, blocked: Path | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "slayer_kb", "--kb", str(root), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(blocked))


@pytest.fixture
def blocked_here(tmp_path: Path) -> Path:
    """A PYTHONPATH under which a process that runs a command itself fails (``testing.blocker``)."""
    return blocker(tmp_path / "blocker")


@pytest.fixture
def held(watcher: Watcher) -> Iterator[Callable[[str, list[str]], subprocess.Popen[str]]]:
    """``hold(text, argv)``: runs the relayed write ``argv`` and returns once the server holds
    it, its commit published and its files (holding ``text``) written; released at the end."""
    git_dir = watcher.root / ".git"
    hook = git_dir / "hooks" / "post-index-change"
    hook.write_text(HOOK)
    hook.chmod(0o755)
    _until(lambda: (relay.control(watcher.root, "status") or {}).get("warm"), "the server warming up")
    procs: list[subprocess.Popen[str]] = []

    def hold(text: str, argv: list[str]) -> subprocess.Popen[str]:
        (git_dir / "hold").write_text(text)
        proc = start(watcher.root, *argv)
        procs.append(proc)
        _until(lambda: (git_dir / "held").exists(), "the write held by the hook")
        return proc

    try:
        yield hold
    finally:
        (git_dir / "release").touch()
        for proc in procs:
            proc.wait(timeout=120)


@pytest.fixture
def idle_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server (the ``watcher`` after this fixture) started with a setting of its own, as
    ``server start``'s help suggests: reads went beside only with the server's exact settings."""
    monkeypatch.setenv("SLAYER_KB_SERVER_IDLE", "3600")


def ids(listed: subprocess.CompletedProcess[str]) -> list[str]:
    assert listed.returncode == 0, listed.stderr
    return [hit["id"] for hit in json.loads(listed.stdout)["memories"]]


def test_reads_are_answered_while_a_save_is_held_and_never_see_half_of_it(
    idle_server: None, watcher: Watcher, blocked_here: Path, held: Callable[[str, list[str]], subprocess.Popen[str]]
) -> None:
    root = watcher.root
    assert b"SLAYER_KB_SERVER_IDLE=3600\0" in Path(f"/proc/{watcher.proc.pid}/environ").read_bytes()
    # Clients with settings that change no read's output, unlike the server's: they go beside too.
    plain = {name: value for name, value in _env(blocked_here).items() if name != "SLAYER_KB_SERVER_IDLE"}
    plain.update(SLAYER_KB_GIT_TIMEOUT="120", SLAYER_KB_NO_FILLER="1")
    before = ids(relayed(root, blocked_here, "--json", "list", "--limit", "100"))
    assert "27" not in before
    save = held("axolotl beside a read", ["save", "axolotl beside a read", "-e", "shop.orders.amount"])
    # Half done: the commit is in git and its file in the work tree; the index lags.
    assert "axolotl beside a read" in (root / "memories" / "27.yaml").read_text()
    status = relay.control(root, "status")
    assert status is not None and status["current"] == f"--kb {root} save axolotl beside a read -e shop.orders.amount"

    found = relayed(root, blocked_here, "--json", "search", "axolotl", "--all", env=plain)
    assert (found.returncode, json.loads(found.stdout)["memories"]) == (0, []), found.stderr
    got = relayed(root, blocked_here, "get", "27", env=plain)
    assert (got.returncode, got.stdout, got.stderr) == (1, "", "Error: No memory with id '27'.\n")
    assert ids(relayed(root, blocked_here, "--json", "list", "--limit", "100", env=plain)) == before
    assert save.poll() is None  # the reads were answered while the write is still held

    (root / ".git" / "release").touch()
    out, err = save.communicate(timeout=120)
    assert (save.returncode, out) == (0, "Saved memory 27 (created)\n  entities: shop.orders.amount\n"), err
    found = relayed(root, blocked_here, "--json", "search", "axolotl", "--all")
    assert [hit["id"] for hit in json.loads(found.stdout)["memories"]] == ["27"]
    assert ids(relayed(root, blocked_here, "--json", "list", "--limit", "100")) == ["27", *before]


def test_an_update_held_is_read_as_before_and_a_hand_edit_meanwhile_is_not_missed(
    watcher: Watcher, blocked_here: Path, held: Callable[[str, list[str]], subprocess.Popen[str]]
) -> None:
    root = watcher.root
    old = json.loads(relayed(root, blocked_here, "--json", "get", "2").stdout)
    update = held("zebrafish", ["update", "2", "--learning", "zebrafish replace the old text"])
    assert "zebrafish" in (root / "memories" / "2.yaml").read_text()

    got = relayed(root, blocked_here, "--json", "get", "2")
    assert (got.returncode, json.loads(got.stdout)) == (0, old), got.stderr
    found = relayed(root, blocked_here, "--json", "search", "zebrafish", "--all")
    assert (found.returncode, json.loads(found.stdout)["memories"]) == (0, []), found.stderr

    # An edit by hand beside the write: a read that comes after it must see it, so it waits for
    # its turn (after the write) and brings the index up to date first.
    hand = root / "memories" / "5.yaml"
    hand.write_text(hand.read_text().replace("learning: |\n", "learning: |\n  quokka by hand.\n", 1))
    search = start(root, "--json", "search", "quokka", "--all", blocked=blocked_here)
    assert update.poll() is None

    (root / ".git" / "release").touch()
    out, err = update.communicate(timeout=120)
    assert update.returncode == 0 and out.startswith("Updated memory 2"), err
    out, err = search.communicate(timeout=120)
    assert search.returncode == 0, err
    assert [hit["id"] for hit in json.loads(out)["example_queries"]] == ["5"]  # 5 holds a query
    got = relayed(root, blocked_here, "--json", "get", "2")
    assert json.loads(got.stdout)["learning"] == "zebrafish replace the old text"



def test_a_read_that_turns_search_by_meaning_on_or_off_unlike_the_server_waits_its_turn(
        example_kb_read_only: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read beside a write runs in the server's environment, so one whose client sets search by
    meaning or the sentence encoder otherwise than the server would print what the server's
    settings give: it runs in its turn, in its client's. Any other setting a command takes goes
    beside (test_reads_are_answered_while_a_save_is_held_and_never_see_half_of_it)."""
    for name in ("stdin", "stdout", "stderr"):  # the runner's per-thread streams go with the test
        monkeypatch.setattr(sys, name, getattr(sys, name))
    runner = Runner(example_kb_read_only)
    assert os.environ.get("SLAYER_KB_NO_ENCODER") and not os.environ.get("SLAYER_KB_NO_MEANING")  # as the tests run
    own = dict(os.environ)
    no_encoder = {name: value for name, value in own.items() if name != "SLAYER_KB_NO_ENCODER"}
    beside = {"same": own, "another setting": {**own, "SLAYER_KB_GIT_TIMEOUT": "120"},
              "meaning off": {**own, "SLAYER_KB_NO_MEANING": "1"}, "encoder on": no_encoder}
    said = {what: runner.goes_beside({"argv": ["--json", "search", "fiscal year"], "env": env})
            for what, env in beside.items()}
    assert said == {"same": True, "another setting": True, "meaning off": False, "encoder on": False}

def test_a_read_that_turns_search_by_meaning_off_in_its_turn_answers_without_it(
        indexed_example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search whose client sets SLAYER_KB_NO_MEANING, the server not, runs in its turn in the
    client's environment, but answered by meaning all the same: the word model, loaded once per
    process, was kept whatever the environment said after. It answers as a process does, with
    the warning that search by meaning is off."""
    from slayer_kb.search import embedding

    for name in ("stdin", "stdout", "stderr"):  # the runner's per-thread streams go with the test
        monkeypatch.setattr(sys, name, getattr(sys, name))
    assert isinstance(embedding.load(), embedding.Embedder)  # loaded, as in a warm server
    argv = ["--json", "search", "money back to customers", "--limit", "2"]
    off = {"SLAYER_KB_NO_MEANING": "1"}
    code, chunks = Runner(indexed_example_kb, lower_git=False)({"argv": argv, "cwd": os.getcwd(),
                                                                 "env": {**os.environ, **off}})
    assert json.loads(dict(chunks)[1])["warnings"] == [
        "Search by meaning is off (SLAYER_KB_NO_MEANING is set); words and entities still work."]
    alone = in_process_runner()("--kb", indexed_example_kb.root, *argv, env=off)
    assert (code, chunks) == (alone.returncode, [(1, alone.stdout.encode())])


def test_a_read_beside_a_write_in_its_turn_keeps_the_servers_search_by_meaning(
        indexed_example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write the server runs in its turn itself (its write process could not start) runs with
    its client's environment in ``os.environ``; a search beside it, whose settings are the
    server's, answered as that client's settings say: one that set SLAYER_KB_NO_MEANING turned
    search by meaning off for the reads beside its write. Each command's thread has the settings
    of its own request (search/switches.py)."""
    for name in ("stdin", "stdout", "stderr"):  # the runner's per-thread streams go with the test
        monkeypatch.setattr(sys, name, getattr(sys, name))
    root = indexed_example_kb.root
    hook = root / ".git" / "hooks" / "post-index-change"
    hook.write_text(HOOK)
    hook.chmod(0o755)
    runner = Runner(indexed_example_kb, lower_git=False)
    search = {"argv": ["--json", "search", "money back to customers", "--limit", "3"], "cwd": os.getcwd(),
              "env": dict(os.environ)}
    with runner.view.hold():
        alone = runner.beside(search)
    (root / ".git" / "hold").write_text("a write in its turn")
    save = {"argv": ["save", "a write in its turn", "-e", "shop.orders.amount"], "cwd": os.getcwd(),
            "env": {**os.environ, "SLAYER_KB_NO_MEANING": "1"}}
    saved: list[tuple[int, list[tuple[int, bytes]]]] = []

    def write() -> None:
        with runner.view.hold():  # as the server's turn holds it; the write lets go while git works
            saved.append(runner(save))

    writer = threading.Thread(target=write)
    writer.start()
    try:
        _until(lambda: (root / ".git" / "held").exists(), "the write held by the hook")
        assert os.environ.get("SLAYER_KB_NO_MEANING") == "1"  # the client's, swapped in
        with runner.view.hold():
            beside = runner.beside(search)
    finally:
        (root / ".git" / "release").touch()
        writer.join(120)
    assert beside == alone
    assert saved[0][0] == 0 and not os.environ.get("SLAYER_KB_NO_MEANING")


def test_the_view_goes_to_a_waiting_write_before_a_read_and_is_given_away_while_released() -> None:
    view = View()
    order: list[str] = []

    def take(name: str, write: bool) -> None:
        assert view.acquire(write=write, timeout=60)
        order.append(name)
        view.release()

    assert view.acquire() and view.acquire()  # reentrant
    reader = threading.Thread(target=take, args=("read", False))
    reader.start()
    with view.released():  # a write letting go while git works: the read goes
        reader.join(60)
    assert order == ["read"]
    writer = threading.Thread(target=take, args=("write", True))
    writer.start()
    _until(lambda: view._waiting_writes == 1, "the write waiting")
    second = threading.Thread(target=take, args=("second read", False))
    second.start()  # a read waits while a write waits, so the write goes first
    view.release()
    view.release()
    writer.join(60)
    second.join(60)
    assert order == ["read", "write", "second read"]
    with pytest.raises(RuntimeError, match="does not hold it"):
        view.release()


def test_a_peek_keeps_other_events_and_settles_the_writes_own(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    (root / "memories").mkdir(parents=True)
    monitor = ChangeMonitor.create(root)
    if monitor is None:
        pytest.skip("no inotify here")
    try:
        monitor.changed()
        assert monitor.changed() is False
        (root / "memories" / "2.yaml").write_text("learning: own\n")
        assert monitor.peek(frozenset({"2.yaml"})) is True  # only the write's own file
        monitor.absorb({"2.yaml"})
        monitor.settle()
        assert monitor.changed() is False  # absorbed: nothing left to check
        (root / "memories" / "2.yaml").write_text("learning: own again\n")
        assert monitor.peek(frozenset({"2.yaml"})) is True
        monitor.settle()  # the write ended without absorbing it (it failed): a change
        assert monitor.changed() is True
        (root / "memories" / "3.yaml").write_text("learning: by hand\n")
        assert monitor.peek(frozenset({"2.yaml"})) is False  # a hand edit beside the write
        assert monitor.changed() is True and monitor.changed() is False
    finally:
        monitor.stop()


# Stands in for git-upload-pack: holds a fetch until .git/release exists (at most 120 s).
UPLOAD_PACK = """#!/bin/sh
touch "{git_dir}/held"
n=0
while [ ! -f "{git_dir}/release" ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n+1)); done
exec git-upload-pack "$@"
"""


def test_a_read_waits_for_a_sync_in_the_write_process(watcher: Watcher, blocked_here: Path, tmp_path: Path) -> None:
    """A sync changes files by git's own merges, beyond the commits it names to the server: a
    read waits for all of it (running.WHOLE), where it goes beside a save."""
    root, git_dir = watcher.root, watcher.root / ".git"
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    branch = subprocess.run(["git", "-C", str(root), "branch", "--show-current"], capture_output=True, text=True,
                            check=True).stdout.strip()
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", str(bare)], check=True)
    subprocess.run(["git", "-C", str(root), "push", "-q", "-u", "origin", branch], check=True)
    script = tmp_path / "upload-pack"
    script.write_text(UPLOAD_PACK.format(git_dir=git_dir))
    script.chmod(0o755)
    subprocess.run(["git", "-C", str(root), "config", "remote.origin.uploadpack", str(script)], check=True)
    _until(lambda: (relay.control(root, "status") or {}).get("warm"), "the server warming up")
    sync = start(root, "sync")
    try:
        _until(lambda: (git_dir / "held").exists(), "the sync's fetch held")
        status = relay.control(root, "status")
        assert status is not None and status["current"] == f"--kb {root} sync"
        search = start(root, "--json", "search", "orders", blocked=blocked_here)
        time.sleep(2)  # not a synchronisation: a read going beside the sync would be answered by now
        assert search.poll() is None and relay.control(root, "status")["reading"] == []  # type: ignore[index]
    finally:
        (git_dir / "release").touch()
    out, err = sync.communicate(timeout=120)
    assert sync.returncode == 0, err
    found, err = search.communicate(timeout=120)
    assert search.returncode == 0 and json.loads(found)["memories"], err


def test_a_read_beside_a_write_checks_its_settings_once(example_kb_read_only: KnowledgeBase,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The server goes by the client's settings to let a read go beside a write
    (``Runner.goes_beside``: a bad one is refused in its turn, in the client's environment), and
    the read checked them again as it opened the KB: whether it then went beside, or, the state
    in memory not ready, waited for its turn. Once either way, and the read answers."""
    from slayer_kb.cli import common
    from slayer_kb.daemon.running import Runner

    checked: list[object] = []
    check = common.checked_settings

    def counted(env: object = None) -> None:
        checked.append(env)
        check(env)  # type: ignore[arg-type]

    monkeypatch.setattr(common, "checked_settings", counted)
    for name in ("stdin", "stdout", "stderr"):  # the Runner gives each thread streams of its own
        monkeypatch.setattr(sys, name, getattr(sys, name))
    runner = Runner(example_kb_read_only, lower_git=False)
    request = {"argv": ["get", "1", "--json"], "cwd": os.getcwd(), "env": dict(os.environ)}
    for run in (lambda: runner.beside(request), lambda: runner(request, checked=True)):
        checked.clear()
        assert runner.goes_beside(request)
        with runner.view.hold():
            code, chunks = run()
        assert (code, [fd for fd, _ in chunks]) == (0, [1]), chunks
        assert json.loads(chunks[0][1])["id"] == "1"
        assert len(checked) == 1, checked


def test_a_read_whose_cache_setting_its_own_home_makes_relative_waits_its_turn_and_is_refused(
        example_kb_read_only: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client's ``SLAYER_KB_CACHE=~/cache`` under a relative ``HOME`` names a relative folder,
    which its own process refuses; the server checked it with its own home, said it might go
    beside a write (in the server's settings), and the read did not check again: it answered.
    It is checked with the client's home, waits its turn, and is refused as in a process."""
    from slayer_kb.daemon.running import Runner

    for name in ("stdin", "stdout", "stderr"):  # the Runner gives each thread streams of its own
        monkeypatch.setattr(sys, name, getattr(sys, name))
    runner = Runner(example_kb_read_only, lower_git=False)
    env = dict(os.environ, HOME="home", SLAYER_KB_CACHE="~/cache")
    request = {"argv": ["get", "1"], "cwd": os.getcwd(), "env": env}
    assert not runner.goes_beside(request)
    code, chunks = runner(request)
    assert (code, chunks) == (1, [(2, b"Error: SLAYER_KB_CACHE is '~/cache', a relative path: set it to an absolute "
                                      b"path (such as home/.cache/slayer-kb) or unset it (the default is "
                                      b"$XDG_CACHE_HOME/slayer-kb, else ~/.cache/slayer-kb).\n")])
