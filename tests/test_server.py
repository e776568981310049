"""The warm server started on demand (server.py, relay.py, docs/server.md), in real processes.

Every test turns the server on explicitly (conftest.py sets SLAYER_KB_SERVER=manual) and the
``servers`` fixture stops every server a test started, by asking and then by SIGKILL; every wait
has a bound. A relayed command runs in a client whose PYTHONPATH blocks Whoosh, so it can only
have succeeded in the server.
"""

from __future__ import annotations

import compileall
import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import filelock
import pytest

from slayer_kb.core.errors import StoreError
from slayer_kb.daemon import relay
from slayer_kb.kb import KnowledgeBase
from slayer_kb.store import upkeep
from testing import (
    BLOCKED,
    GIT_ENV,
    WAIT_SECONDS,
    Watcher,
    blocker,
    commit_all,
    default_first,
    eventually,
    git,
    in_process_runner,
    isolate,
    make_empty_kb,
    make_indexed_example_kb,
)
from testing.threads import thread_niceness

pytestmark = pytest.mark.skipif(not relay.SUPPORTED, reason="no server on this system")

FIXED_DATES = {"GIT_AUTHOR_DATE": "2026-11-30T12:00:00Z", "GIT_COMMITTER_DATE": "2026-11-30T12:00:00Z"}


def started(pid: int) -> str | None:
    """When process ``pid`` started (field 22 of /proc/PID/stat); None when it is gone (a zombie
    nobody reaped yet counts as gone). Two test runs side by side wrap pid_max (32,768) within
    minutes: a pid of a server that exited soon names another process, which has another start,
    so no test waits for it or kills it."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return None if fields[0] == "Z" else fields[19]
    except FileNotFoundError:
        return None
    except OSError:  # no /proc: whatever process has the pid
        try:
            os.kill(pid, 0)
        except OSError:
            return None
        return "?"


class Servers:
    """Runs ``slayer-kb`` with the server on, and stops every server it saw at the end.

    The commands run from a copy of the package: other work in the checkout changing a file
    would change the version stamp, and the server would (rightly) retire in mid-test."""

    def __init__(self, tmp_path: Path, install: Path) -> None:
        self.tmp_path = tmp_path
        self.install = str(install)
        self.roots: set[Path] = set()
        self.pids: dict[int, str | None] = {}  # each server seen, with its start (started())
        self.blocked = str(blocker(tmp_path / "blocker"))
        self.no_index = str(blocker(tmp_path / "no-index", ("whoosh", "numpy")))

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "SLAYER_KB_SERVER": "on", "SLAYER_KB_SERVER_IDLE": "120", "COLUMNS": "80",
                "PYTHONPATH": self.install, **FIXED_DATES, **extra}

    def run(self, root: Path, *args: str, input: str | None = None, blocked: bool = False, no_index: bool = False,
            env: dict[str, str] | None = None, kb_option: bool = True) -> subprocess.CompletedProcess[str]:
        """``blocked``: the command must be answered by the server; ``no_index``: it may run here,
        without the search stack."""
        self.roots.add(root)
        full = dict(env if env is not None else self.env())
        full.setdefault("PYTHONPATH", self.install)
        for block, folder in ((blocked, self.blocked), (no_index, self.no_index)):
            if block:
                full["PYTHONPATH"] = os.pathsep.join(p for p in (folder, full.get("PYTHONPATH")) if p)
        argv = ["--kb", str(root), *args] if kb_option else list(args)
        return subprocess.run([sys.executable, "-m", "slayer_kb", *argv], input=input, capture_output=True,
                              text=True, env=full, cwd=root, timeout=120)

    def status(self, root: Path) -> dict | None:
        return relay.control(root, "status")

    def wait_up(self, root: Path) -> dict:
        self.roots.add(root)
        found = eventually(lambda: (s := self.status(root)) and s.get("ready") and s, f"a server for {root}")
        assert isinstance(found, dict)
        self.seen(found["pid"])
        return found

    def seen(self, pid: int) -> str | None:
        return self.pids.setdefault(pid, started(pid))

    def alive(self, pid: int) -> bool:
        born = self.seen(pid)
        return born is not None and started(pid) == born

    def wait_down(self, pid: int) -> None:
        eventually(lambda: not self.alive(pid), f"server {pid} exiting")

    def kill(self, pid: int) -> None:
        """SIGKILL the server ``pid``, if it is still that server."""
        if self.alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def stop_all(self) -> None:
        for root in self.roots:
            answer = relay.control(root, "status")
            if answer is not None:
                self.seen(answer["pid"])
                relay.control(root, "stop")
        for pid in self.pids:
            if self.alive(pid):
                # As Ctrl-C would: a server that a loaded machine kept from answering the stop
                # above stops too (it finishes a command first), instead of being waited for.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + WAIT_SECONDS
        for pid in self.pids:
            while self.alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            self.kill(pid)


def started_servers(root: Path) -> list[str]:
    """The command lines of the running servers started for ``root``: a client that starts one
    has started its process before it exits, so right after a command this is what it did."""
    listing = subprocess.run(["ps", "-A", "-ww", "-o", "args="], capture_output=True, text=True, check=True).stdout
    return [line for line in listing.splitlines()
            if "slayer_kb.daemon.server" in line and os.path.realpath(root) in line]


def copy_package(where: Path) -> Path:
    # With its bytecode (conftest.py writes it), which copy2's mtimes keep valid: each server and
    # client process run from the copy would otherwise compile the package again.
    shutil.copytree(Path(relay.__file__).parent.parent, where / "slayer_kb")
    compileall.compile_dir(where / "slayer_kb", quiet=1)  # (only what the checkout had not compiled)
    return where


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_package(tmp_path_factory.mktemp("install"))


@pytest.fixture
def servers(tmp_path: Path, install: Path) -> Iterator[Servers]:
    found = Servers(tmp_path, install)
    try:
        yield found
    finally:
        found.stop_all()


@pytest.fixture
def short_folder() -> Iterator[Path]:
    """A folder with a short path for a KB whose server listens on a socket file in it: such a
    path is limited to about 100 bytes (``relay.MAX_SOCKET_PATH``; the KB then runs with no
    server), which tmp_path's (pytest's numbered folders, the worker's, the test's name) can
    pass. Listed before ``servers``, it is removed after they are stopped."""
    folder = Path(tempfile.mkdtemp(prefix="kb-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def served_pair(tmp_path_factory: pytest.TempPathFactory, install: Path) -> Iterator[tuple[Servers, Path, Path]]:
    """For the tests that only read through a server: the example KB with its server started
    (a second of CPU or more, and a client process) and its twin, which the tests run with the
    server off, shared by the module. The module fails if a test stopped the server, committed
    or changed a file in either KB; a test that writes, or starts and stops a server, takes
    ``servers``."""
    folder = tmp_path_factory.mktemp("served-pair")
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate(monkeypatch, folder)
        found = Servers(folder, install)
        try:
            relayed_kb, local_kb = make_indexed_example_kb(folder / "a" / "kb"), make_indexed_example_kb(folder / "b" / "kb")
            # Not idle between its tests however long the others in between take: stopped below.
            idle = found.env(SLAYER_KB_SERVER_IDLE="3600")
            assert found.run(relayed_kb, "server", "start", env=idle).returncode == 0
            pid = found.wait_up(relayed_kb)["pid"]
            head = git(relayed_kb, "rev-parse", "HEAD")
            yield found, relayed_kb, local_kb
            # As promised: a test that wrote, or stopped the server, would change the next one's.
            assert (found.status(relayed_kb) or {}).get("pid") == pid, "the shared server stopped"
            for kb in (relayed_kb, local_kb):
                assert (git(kb, "rev-parse", "HEAD"), git(kb, "status", "--porcelain")) == (head, "")
        finally:
            found.stop_all()


# -- starting, relaying, stopping ----------------------------------------------------------------


# A server started on a socket file and relayed to: test_a_socket_file_in_the_state_folder.
@pytest.mark.parametrize("channel", default_first(["default", "file"]))
def test_the_first_command_starts_a_server_and_the_next_are_relayed(
    short_folder: Path, servers: Servers, monkeypatch: pytest.MonkeyPatch, channel: str
) -> None:
    if channel == "file":  # the socket file of macOS and the BSDs, on any system
        monkeypatch.setenv("SLAYER_KB_SERVER_SOCKET", "file")
    root = make_indexed_example_kb(short_folder / "kb")
    assert servers.status(root) is None
    first = servers.run(root, "search", "fiscal year")
    assert first.returncode == 0 and "kb.fiscal-calendar" in first.stdout, first.stderr
    up = servers.wait_up(root)
    assert up["root"] == os.path.realpath(root) and up["idle_exit"] == 120
    # Once its first sync is done, it loads the searcher and the vectors before any command asks.
    eventually(lambda: (s := servers.status(root)) and s["warm"], "the server warming up")
    second = servers.run(root, "search", "fiscal year", blocked=True)
    assert (second.returncode, second.stdout, second.stderr) == (0, first.stdout, first.stderr), (
        second.stderr + (root / ".slayer-kb" / "server.log").read_text())
    # The status is the server's answer: the client opens no KB (no Whoosh, no index).
    shown = json.loads(servers.run(root, "server", "status", "--json", no_index=True).stdout)
    assert shown["running"] is True and shown["pid"] == up["pid"] and shown["served"] >= 1
    grouped = json.loads(servers.run(root, "server", "--json", "status", no_index=True).stdout)
    assert (grouped["running"], grouped["pid"]) == (True, up["pid"])  # --json after the group as well
    log = (root / ".slayer-kb" / "server.log").read_text()
    assert f"server {up['pid']} for {os.path.realpath(root)}" in log
    stopped = servers.run(root, "server", "stop")
    assert stopped.returncode == 0 and f"Stopped the server {up['pid']}." in stopped.stdout
    servers.wait_down(up["pid"])
    assert servers.run(root, "server", "status", no_index=True).stdout == (
        f"No server for {os.path.realpath(root)}; mode: on.\n")
    # with no server, the command runs in its process again
    again = servers.run(root, "search", "fiscal year", blocked=True, env=servers.env(SLAYER_KB_SERVER="manual"))
    assert again.returncode == 1 and BLOCKED in again.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and per-thread priorities")
def test_a_write_that_starts_the_server_leaves_it_at_the_callers_priority(servers: Servers, tmp_path: Path) -> None:
    # The client of a write relays from a lower thread (entry.py); with no server, its main
    # thread runs the save and starts one, which must answer searches at the caller's priority.
    root = make_indexed_example_kb(tmp_path / "kb")
    saved = servers.run(root, "save", "Refunds are netted", "-e", "shop.orders.amount")
    assert (saved.returncode, saved.stdout, saved.stderr) == (0, "Saved memory 27 (created)\n  entities: shop.orders.amount\n", "")
    pid = servers.wait_up(root)["pid"]
    assert set(thread_niceness(pid)) == {os.nice(0)}


def test_off_manual_and_a_command_refused_for_a_bad_setting_start_no_server(servers: Servers, tmp_path: Path) -> None:
    root = make_indexed_example_kb(tmp_path / "kb")
    for env in (servers.env(SLAYER_KB_SERVER="off"), servers.env(SLAYER_KB_SERVER="manual")):
        assert servers.run(root, "list", "--limit", "1", env=env).returncode == 0
    off_ci = {k: v for k, v in servers.env(CI="true").items() if k != "SLAYER_KB_SERVER"}
    assert servers.run(root, "list", "--limit", "1", env=off_ci).returncode == 0
    # A server started anyway would run with the default in its place, and keep it once the
    # setting is fixed: the commands that follow are relayed to it.
    refused = servers.run(root, "list", "--limit", "1", env=servers.env(SLAYER_KB_SERVER_IDLE="30s"))
    assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", (
        "Error: SLAYER_KB_SERVER_IDLE is '30s', not a number of seconds; set it to a number above 0 "
        "(the default is 300) or unset it.\n"))
    assert started_servers(root) == [] and servers.status(root) is None
    # Read only where git runs: the save was refused there, and a server started all the same.
    refused = servers.run(root, "save", "Refunds are netted", "-e", "shop.orders.amount",
                          env=servers.env(SLAYER_KB_GIT_TIMEOUT="1m"))
    assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", (
        "Error: SLAYER_KB_GIT_TIMEOUT is '1m', not a number of seconds; set it to a whole number above 0 "
        "(the default is 60) or unset it.\n"))
    assert started_servers(root) == [] and servers.status(root) is None
    up_env = servers.env()
    servers.run(root, "list", "--limit", "1", env=up_env)
    assert len(started_servers(root)) == 1  # what the checks above would have seen
    up = servers.wait_up(root)
    pid = up["pid"]
    assert up["idle_exit"] == 120  # the setting the command ran with
    # off: nothing is relayed even to a running server
    off = servers.run(root, "list", blocked=True, env=servers.env(SLAYER_KB_SERVER="off"))
    assert off.returncode == 1 and BLOCKED in off.stderr
    assert servers.status(root)["pid"] == pid


@pytest.mark.slow  # covered by a default test (docs/testing.md, "What is in -m slow")
def test_the_kb_setting_turns_it_off_unless_the_environment_says_otherwise(servers: Servers, tmp_path: Path) -> None:
    root = make_indexed_example_kb(tmp_path / "kb")
    git(root, "config", "slayer-kb.server", "off")
    unset = {k: v for k, v in servers.env().items() if k != "SLAYER_KB_SERVER"}
    assert servers.run(root, "list", "--limit", "1", env=unset).returncode == 0
    assert started_servers(root) == [] and servers.status(root) is None
    shown = json.loads(servers.run(root, "server", "status", "--json", env=unset).stdout)
    assert (shown["running"], shown["mode"]) == (False, "off")
    # the environment wins over the setting: a server starts, and still the setting keeps
    # commands off it
    servers.run(root, "list", "--limit", "1")
    servers.wait_up(root)
    off = servers.run(root, "list", blocked=True, env={**unset, "PYTHONPATH": servers.install})
    assert off.returncode == 1 and BLOCKED in off.stderr


@pytest.mark.parametrize(
    ("setting", "variables", "expected"),
    [
        ("off", {}, "off"),
        ("manual", {}, "manual"),
        ("On", {"CI": "true"}, "on"),
        ("off", {"SLAYER_KB_SERVER": "on"}, "on"),
        ("sometimes", {}, "off"),  # not a value: run here, where the command refuses it
        ("sometimes", {"CI": "1"}, "off"),
    ],
)
def test_the_mode_from_the_kb_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, setting: str,
                                      variables: dict[str, str], expected: str) -> None:
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "slayer-kb.server", setting)
    monkeypatch.delenv("SLAYER_KB_SERVER", raising=False)
    monkeypatch.delenv("CI", raising=False)
    for key, value in variables.items():
        monkeypatch.setenv(key, value)
    assert relay.mode(str(tmp_path)) == expected


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({}, "on"),
        ({"CI": "true"}, "off"),
        ({"CI": "1", "SLAYER_KB_SERVER": "on"}, "on"),
        ({"CI": "false"}, "on"),
        ({"SLAYER_KB_SERVER": "off"}, "off"),
        ({"SLAYER_KB_SERVER": "0"}, "off"),
        ({"SLAYER_KB_SERVER": "manual"}, "manual"),
    ],
)
def test_the_mode(monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], expected: str) -> None:
    monkeypatch.delenv("SLAYER_KB_SERVER", raising=False)
    monkeypatch.delenv("CI", raising=False)
    for key, value in variables.items():
        monkeypatch.setenv(key, value)
    assert relay.mode() == expected


# -- every command family, byte for byte -------------------------------------------------------

FAMILIES: list[tuple[list[str], str | None]] = [
    (["search", "fiscal year"], None),
    (["--json", "search", "refunds", "--limit", "2"], None),
    (["search", "-"], "how are refunds counted"),
    (["--json", "search", "--query", "@../q.json"], None),
    (["search", "--query=@../bad.json"], None),
    (["get", "kb.fiscal-calendar"], None),
    (["get", "nope"], None),
    (["--json", "get", "nope"], None),
    (["list", "--limit", "3"], None),
    (["stats"], None),
    (["context"], None),
    (["suggest-topic-key", "--type", "architecture", "--title", "Auth model"], None),
    (["search", "--limit", "0", "x"], None),
    (["save", "NULL means not returned", "-e", "shop.orders.amount"], None),
    (["save", "-", "-e", "shop.orders.amount", "--json"], "from stdin, two lines\nsecond line\n"),
    (["save", "nothing linked"], None),
    (["save", "--title", "Auth decision", "--type", "decision", "--project", "api", "--content", "JWT"], None),
    (["save", "--title", "Auth decision", "--type", "decision", "--project", "api", "--content", "JWT"], None),
    (["update", "kb.fiscal-calendar", "--description", "Fiscal year from February"], None),
    (["update", "kb.fiscal-calendar", "--learning", "-"], "The fiscal year starts in February.\n"),
    (["forget", "1", "--soft"], None),
    (["restore", "1"], None),
    (["forget", "2", "--json"], None),
    (["log", "kb.fiscal-calendar"], None),
    (["show", "kb.fiscal-calendar"], None),
    (["review", "HEAD~3"], None),
    (["delete-leaf", "shop.orders.amount", "--json"], None),
    (["prune", "--dry-run"], None),
    (["validate"], None),
    (["fmt", "--check"], None),
    (["schema"], None),
    (["session-start", "s1", "--project", "api"], None),
    (["save-prompt", "how do refunds work", "--session", "s1", "--project", "api"], None),
    (["session-end", "s1", "--summary", "-"], "done for today\n"),
    (["sessions"], None),
    (["session-summary", "wrapped up", "--project", "api"], None),
    (["timeline", "--session", "s1"], None),
    (["capture-passive", "## Key Learnings:\n- refunds are negative rows", "--session", "s1", "--project", "api"], None),
    (["reindex"], None),
    (["--author", "Other <other@example.com>", "save", "by another", "-e", "shop.orders"], None),
]
_VOLATILE = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?|\b[0-9a-f]{12,40}\b")


def masked(text: str, root: Path) -> str:
    """Times and commit ids (a memory made a second later has another time, so another commit)
    and the KB's own path are the only differences two runs may show."""
    return _VOLATILE.sub("<*>", text.replace(str(root), "<KB>"))


# 40-odd processes: past the suite's 300 s per test on a loaded 2-core machine (seen at load 16-20).
@pytest.mark.timeout(900)
def test_every_command_family_prints_what_a_process_prints(servers: Servers, tmp_path: Path) -> None:
    """Each relayed command (a real process, answered by the server) prints what the command
    prints with the server off. That side runs in this process (``in_process_runner``, with the
    same arguments, folder, environment and stdin): tests/test_in_process.py shows it prints what
    a process prints."""
    relayed_kb = make_indexed_example_kb(tmp_path / "a" / "kb")
    local_kb = make_indexed_example_kb(tmp_path / "b" / "kb")
    assert git(relayed_kb, "rev-parse", "HEAD") == git(local_kb, "rev-parse", "HEAD")
    for kb in (relayed_kb, local_kb):  # @FILE arguments, next to each KB
        (kb.parent / "q.json").write_text('{"source_model": "shop.orders", "measures": ["amount:sum"]}')
        (kb.parent / "bad.json").write_text('{"source_model": ')
    assert servers.run(relayed_kb, "server", "start").returncode == 0
    pid = servers.wait_up(relayed_kb)["pid"]
    off = servers.env(SLAYER_KB_SERVER="off")
    local = in_process_runner()
    codes = []
    for argv, stdin in FAMILIES:
        got = servers.run(relayed_kb, *argv, input=stdin, blocked=True)
        want = local("--kb", local_kb, *argv, input=stdin, cwd=local_kb, env=off)
        assert BLOCKED not in got.stderr, (argv, got.stderr)
        assert got.returncode == want.returncode, (argv, got.stderr, want.stderr)
        assert masked(got.stdout, relayed_kb) == masked(want.stdout, local_kb), argv
        assert masked(got.stderr, relayed_kb) == masked(want.stderr, local_kb), argv
        codes.append(got.returncode)
    assert codes[:13] == [0, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 2]
    assert servers.status(relayed_kb)["pid"] == pid  # one server answered them all
    # the same files and history on both sides
    for name in ("memories", "models"):
        assert sorted(p.name for p in (relayed_kb / name).rglob("*")) == sorted(p.name for p in (local_kb / name).rglob("*"))
    authors = git(relayed_kb, "log", "--topo-order", "--format=%an <%ae>").splitlines()
    assert authors == git(local_kb, "log", "--topo-order", "--format=%an <%ae>").splitlines()
    assert git(relayed_kb, "log", "-1", "--format=%an <%ae>") == "Other <other@example.com>\n", git(relayed_kb, "log", "-5", "--format=%an %s")


def test_stdout_and_stderr_interleave_as_in_a_process(served_pair: tuple[Servers, Path, Path]) -> None:
    """One pipe for both (``2>&1``): the relayed command's writes come in the order it made them."""
    servers, relayed_kb, local_kb = served_pair
    relayed_env = servers.env(PYTHONPATH=f"{servers.blocked}{os.pathsep}{servers.install}")
    local_env = servers.env(SLAYER_KB_SERVER="off")
    for argv in (["--json", "get", "nope"], ["--json", "search", "--datasource", "nope", "x"],
                 ["save", "twice linked", "-e", "shop.orders", "-e", "no.such.thing"]):
        both = [subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(kb), *argv], cwd=kb, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
                for kb, env in ((relayed_kb, relayed_env), (local_kb, local_env))]
        assert BLOCKED not in both[0].stdout.decode(errors="replace")
        assert both[0].returncode == both[1].returncode, argv
        assert masked(both[0].stdout.decode(), relayed_kb) == masked(both[1].stdout.decode(), local_kb), argv


def test_each_command_commits_as_its_own_environment_says(servers: Servers, tmp_path: Path) -> None:
    root = make_indexed_example_kb(tmp_path / "kb")
    servers.run(root, "server", "start")
    servers.wait_up(root)
    for name in ("First Agent", "Second Agent"):
        env = servers.env(GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=f"{name.split()[0].lower()}@example.com",
                          PYTHONPATH=f"{servers.blocked}{os.pathsep}{servers.install}")
        proc = servers.run(root, "save", f"by {name}", "-e", "shop.orders", env=env)
        assert proc.returncode == 0, proc.stderr
    assert git(root, "log", "-2", "--topo-order", "--format=%an <%ae>").splitlines() == [
        "Second Agent <second@example.com>", "First Agent <first@example.com>"]


def test_each_command_commits_as_gits_config_says_now(servers: Servers, tmp_path: Path) -> None:
    """The same environment each time, with no identity in it: who commits is whatever git's
    config files say when the command runs (the repository's, then the user's ~/.gitconfig, with
    the same HOME), as a process started for the command would read it."""
    root = make_indexed_example_kb(tmp_path / "kb")
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in servers.env(HOME=str(home)).items() if k not in GIT_ENV and k != "GIT_CONFIG_GLOBAL"}
    servers.run(root, "server", "start", env=env)
    pid = servers.wait_up(root)["pid"]

    def saved_by(text: str) -> str:
        proc = servers.run(root, "save", text, "-e", "shop.orders", env=env, blocked=True)
        assert proc.returncode == 0, proc.stderr
        return git(root, "log", "-1", "--format=%an <%ae> | %cn <%ce>").strip()

    neutral = "slayer-kb <slayer-kb@localhost> | slayer-kb <slayer-kb@localhost>"
    assert saved_by("no identity anywhere") == neutral
    git(root, "config", "user.name", "Alice")
    git(root, "config", "user.email", "alice@example.com")
    assert saved_by("the repository names Alice") == "Alice <alice@example.com> | Alice <alice@example.com>"
    git(root, "config", "--unset", "user.name")
    git(root, "config", "--unset", "user.email")
    assert saved_by("the repository names nobody again") == neutral
    (home / ".gitconfig").write_text("[user]\n\tname = Bob\n\temail = bob@example.com\n")
    assert saved_by("the user's config names Bob") == "Bob <bob@example.com> | Bob <bob@example.com>"
    assert servers.status(root)["pid"] == pid  # all four in the one server


def modes(folder: Path) -> list[tuple[str, str]]:
    return sorted((str(p.relative_to(folder)), oct(p.stat().st_mode & 0o777)) for p in [folder, *folder.rglob("*")])


def test_relative_paths_umask_and_the_current_folder(served_pair: tuple[Servers, Path, Path], tmp_path: Path) -> None:
    servers, root, _ = served_pair
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    runs = []
    for name, env in (("relayed", servers.env(PYTHONPATH=f"{servers.blocked}{os.pathsep}{servers.install}")),
                      ("local", servers.env(SLAYER_KB_SERVER="off"))):
        runs.append(subprocess.run(
            [sys.executable, "-m", "slayer_kb", "--kb", str(root), "export-slayer", name], capture_output=True,
            text=True, cwd=elsewhere, timeout=60, env=env, umask=0o027,
        ))
    relayed, local = runs
    assert relayed.returncode == local.returncode == 0, relayed.stderr + local.stderr
    assert relayed.stdout.replace("relayed", "local") == local.stdout
    assert modes(elsewhere / "relayed") == modes(elsewhere / "local")
    assert modes(elsewhere / "local")[0][1] == "0o750"
    # the KB found from the current folder, as the CLI finds it
    inside = subprocess.run([sys.executable, "-m", "slayer_kb", "search", "fiscal year"], capture_output=True,
                            text=True, cwd=root / "models", timeout=60,
                            env=servers.env(PYTHONPATH=f"{servers.blocked}{os.pathsep}{servers.install}"))
    assert inside.returncode == 0 and "kb.fiscal-calendar" in inside.stdout, inside.stderr


def test_a_read_beside_shows_paths_from_the_clients_folder(servers: Servers, tmp_path: Path) -> None:
    """A read the server answers beside a write keeps the server's folder ("/"); the ``cd`` step
    of its fix must still be the one the client's own process prints, which works when pasted."""
    root = make_indexed_example_kb(tmp_path / "kb")
    # Moved before the server starts: a move it sees later sends each read to its turn, which
    # runs in the client's folder.
    (root / "memories" / "3.yaml").rename(root / "memories" / "300.yaml")
    servers.run(root, "server", "start")
    servers.wait_up(root)
    eventually(lambda: servers.status(root)["warm"], "the server warming up")  # its searcher open: reads go beside
    relayed = servers.env(PYTHONPATH=f"{servers.blocked}{os.pathsep}{servers.install}")
    local = in_process_runner()  # what the client's own process prints (tests/test_in_process.py)
    moved = ("memories/3.yaml was moved to memories/300.yaml (slayer-kb now reads it as memory '300'), "
             "and HEAD still has it at memories/3.yaml: a move that is not committed. Move it back ({cd}mv "
             "memories/300.yaml memories/3.yaml), or commit the move ({cd}git add -A -- memories/3.yaml "
             "memories/300.yaml; git commit).")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for cwd, kb, cd in ((root, [], ""), (tmp_path, ["--kb", "kb"], "cd kb; "),
                        (elsewhere, ["--kb", str(root)], f"cd {root}; ")):
        got = subprocess.run([sys.executable, "-m", "slayer_kb", *kb, "get", "3"], capture_output=True, text=True,
                             cwd=cwd, env=relayed, timeout=60)
        want = local(*kb, "get", "3", cwd=cwd, env=servers.env(SLAYER_KB_SERVER="off"))
        for name, run in (("relayed", got), ("in its own process", want)):
            assert (run.returncode, run.stdout, run.stderr) == (1, "", f"Error: {moved.format(cd=cd)}\n"), (cwd, name)
    assert servers.status(root)["served"] == 3


# -- idle exit, upgrades, crashes ----------------------------------------------------------------


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_a_server_exits_when_idle(servers: Servers, tmp_path: Path) -> None:
    root = make_indexed_example_kb(tmp_path / "kb")
    servers.run(root, "list", "--limit", "1", env=servers.env(SLAYER_KB_SERVER_IDLE="1"))
    # Its log says it, not a status request: on a loaded machine a second can pass before one.
    log = root / ".slayer-kb" / "server.log"
    said = eventually(lambda: log.exists() and re.search(
        r"server (\d+) for .* \(idle exit after 1 s\)\n(?:.*\n)*.* no command for 1 s: exiting\n", log.read_text()),
        "the server's idle exit in its log")
    assert isinstance(said, re.Match)
    servers.wait_down(int(said.group(1)))
    assert servers.status(root) is None


def test_a_command_that_meets_a_stopping_server_starts_the_next(servers: Servers, tmp_path: Path) -> None:
    root = make_indexed_example_kb(tmp_path / "kb")
    servers.run(root, "server", "start")
    old = servers.wait_up(root)["pid"]
    assert relay.control(root, "stop") == {"stopping": old}
    proc = servers.run(root, "list", "--limit", "1")
    assert proc.returncode == 0, proc.stderr
    servers.wait_down(old)
    assert servers.wait_up(root)["pid"] != old


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_a_server_exits_when_its_kb_is_deleted(servers: Servers, tmp_path: Path) -> None:
    root = make_indexed_example_kb(tmp_path / "kb")
    servers.run(root, "list", "--limit", "1")
    up = servers.wait_up(root)
    # the server may write in the folder while it goes (its log, the index): remove until gone
    eventually(lambda: shutil.rmtree(root, ignore_errors=True) or not root.exists(), "the KB deleted")
    servers.wait_down(up["pid"])


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_a_kb_replaced_at_its_path_is_never_answered_from_the_old_one(servers: Servers, tmp_path: Path) -> None:
    # `rm -rf kb && git clone URL kb` while a server holds the old KB open: it answered from the
    # old index (34 memories listed in a KB of none) and mixed the two (`stats`: the old
    # memories, the new sessions), since the new folder has a state folder again.
    root = make_indexed_example_kb(tmp_path / "kb")
    servers.run(root, "list", "--limit", "1")
    old = servers.wait_up(root)["pid"]
    eventually(lambda: servers.status(root)["warm"], "the server warmed up")  # its searcher open
    root.rename(tmp_path / "old")
    make_empty_kb(root)
    for _ in range(2):  # the command that finds the old server, and the one after it
        listed = servers.run(root, "list")
        assert (listed.returncode, listed.stdout, listed.stderr) == (0, "No memories.\n", "")
    servers.wait_down(old)
    log = (tmp_path / "old" / ".slayer-kb" / "server.log").read_text()
    assert f"the KB at {root} is not the folder this server opened (deleted, moved or replaced): exiting" in log


def _idle(watch: Watcher) -> None:
    """Once the watch's first sync is done and it has nothing left to do: a sync already running
    as its KB is moved away goes on writing the index at the path, in what stands there then. A
    broken file, written old (no settling re-read of a young file follows), is said once synced."""
    broken = watch.root / "kb.broken.yaml"
    broken.write_text("learning: [unclosed\n", encoding="utf-8")
    os.utime(broken, (time.time() - 60, time.time() - 60))
    broken.rename(watch.root / "memories" / broken.name)
    watch.wait_for_line("memories/kb.broken.yaml:")


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_a_watch_of_a_kb_replaced_at_its_path_stops_saying_why(tmp_path: Path) -> None:
    root = make_indexed_example_kb(tmp_path / "kb")
    watch = Watcher(root)
    try:
        _idle(watch)
        root.rename(tmp_path / "old")
        # Made beside and moved into place: a copy into the path itself would fail where a sync
        # already running wrote there first (``_idle``).
        make_empty_kb(tmp_path / "new").rename(root)
        # Not 0: a supervisor that restarts a watch only when it fails must start it again.
        assert watch.proc.wait(timeout=WAIT_SECONDS) == 1
    finally:
        watch.stop()
    said = f"the KB at {root} is not the folder this server opened (deleted, moved or replaced): exiting"
    assert any(line.endswith(said) for line in watch.lines), watch.lines


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_a_watch_of_a_kb_moved_away_stops_and_writes_nothing_at_its_path(tmp_path: Path) -> None:
    # The watch follows the folder it opened: a change there once moved synced an index into
    # whatever stood at the old path (a folder being copied there, which then failed). A second
    # watch, which only keeps the index current, then skipped every sync, silent and up for good.
    root = make_indexed_example_kb(tmp_path / "kb")
    first = Watcher(root)
    try:
        first.wait_for_line("Watching")
        second = Watcher(root)
        try:
            second.wait_for_line("Watching")
            _idle(first)
            second.wait_for_line("memories/kb.broken.yaml:")
            assert second.lines[0] == "Another server answers this KB's commands; this one only keeps the index current."
            root.rename(tmp_path / "old")
            root.mkdir()
            (tmp_path / "old" / "memories" / "kb.fiscal-calendar.yaml").write_text("id: kb.fiscal-calendar\n")
            assert [watch.proc.wait(timeout=WAIT_SECONDS) for watch in (first, second)] == [1, 1]
        finally:
            second.stop()
    finally:
        first.stop()
    said = f"the KB at {root} is not the folder this server opened (deleted, moved or replaced): exiting"
    # The first's server may say it first, at its own check, in a line with the time.
    assert second.lines[-2:] == [said, "Stopped watching."], second.lines
    assert first.lines[-2].endswith(said) and first.lines[-1] == "Stopped watching.", first.lines
    assert list(root.iterdir()) == []


def test_an_index_sync_of_a_deleted_kb_never_makes_its_folder_again(tmp_path: Path) -> None:
    # The server's sync of a KB being deleted (the test above): the index made again, its folders
    # with it, kept the server up for good.
    root = make_indexed_example_kb(tmp_path / "kb")
    kb = KnowledgeBase(root)
    shutil.rmtree(root)
    with pytest.raises(StoreError, match=f"The knowledge base at {re.escape(str(root))} is not the folder this process "
                       "opened: it was deleted, moved or replaced since"):
        kb.index.sync(full=True)
    assert not root.exists()


def test_a_state_folder_deleted_under_an_open_kb_is_made_again_stamped(tmp_path: Path) -> None:
    # The index made the folder back by a bare mkdir, unstamped: the next check of the state set
    # it aside as untrusted, and the command failed ("was set aside while this process had the
    # KB open"). The store makes it now, stamped as the open did.
    root = make_indexed_example_kb(tmp_path / "kb")
    kb = KnowledgeBase(root)
    kb.index.sync(full=True)
    shutil.rmtree(root / ".slayer-kb")
    kb.index.sync(full=True)
    saved = kb.save_memory("Refunds are counted once, on the day they are processed", ["shop.refunds"])
    assert [m["id"] for m in kb.search("refunds counted once processed").memories][:1] == [saved.memory_id]
    assert sorted(p.name for p in root.iterdir() if p.name.startswith(".slayer-kb")) == [".slayer-kb"]


def test_an_index_sync_of_a_kb_moved_away_makes_nothing_in_the_folder_at_its_path(tmp_path: Path) -> None:
    # The watch's check of its folder passed, then the KB was moved away and a folder made at
    # its path (the slow test above, 1 run in many under load): the sync made the index again
    # in that folder, .slayer-kb/ and all.
    root = make_indexed_example_kb(tmp_path / "kb")
    kb = KnowledgeBase(root)
    root.rename(tmp_path / "old")
    root.mkdir()
    said = (f"The knowledge base at {root} is not the folder this process opened: it was deleted, moved or replaced "
            "since, and no state folder is made in the one there now. Run the command again (start a server or MCP "
            "process again) to open it.")
    with pytest.raises(StoreError) as synced:
        kb.index.sync(full=True)
    with pytest.raises(StoreError) as saved:
        kb.save_memory("a note", ["shop.orders"])
    assert [str(synced.value), str(saved.value)] == [said, said]
    assert list(root.iterdir()) == []


@pytest.mark.slow  # covered by a default test (docs/testing.md, "What is in -m slow")
def test_a_changed_install_restarts_the_server(servers: Servers, tmp_path: Path) -> None:
    package = copy_package(tmp_path / "install")
    env = servers.env(PYTHONPATH=str(package))
    root = make_indexed_example_kb(tmp_path / "kb")
    servers.run(root, "list", "--limit", "1", env=env)
    first = servers.wait_up(root)
    # an upgrade: a file of the installed package changes
    later = time.time() + 10
    os.utime(package / "slayer_kb" / "kb.py", (later, later))
    proc = servers.run(root, "search", "fiscal year", env=env)
    assert proc.returncode == 0 and "kb.fiscal-calendar" in proc.stdout, proc.stderr
    servers.wait_down(first["pid"])
    second = servers.wait_up(root)
    assert second["pid"] != first["pid"] and second["stamp"] != first["stamp"]
    relayed = servers.run(root, "search", "fiscal year", env=env | {"PYTHONPATH": f"{servers.blocked}{os.pathsep}{package}"})
    assert (relayed.returncode, relayed.stdout) == (0, proc.stdout), relayed.stderr


def test_an_upgrade_that_keeps_sizes_and_mtimes_restarts_the_server(servers: Servers, tmp_path: Path) -> None:
    """A file of the install rewritten in place to the same size, its mtime put back (as a copy
    that preserves times does): the stamp still changes, and the old server retires."""
    package = copy_package(tmp_path / "install")
    env = servers.env(PYTHONPATH=str(package))
    root = make_indexed_example_kb(tmp_path / "kb")
    servers.run(root, "list", "--limit", "1", env=env)
    first = servers.wait_up(root)
    target = package / "slayer_kb" / "kb.py"
    before = os.stat(target)
    text = target.read_bytes()
    target.write_bytes(text.replace(b"# ", b"#:", 1))  # a comment still: the same code, the same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(target)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns) and target.read_bytes() != text
    proc = servers.run(root, "search", "fiscal year", env=env)
    assert proc.returncode == 0 and "kb.fiscal-calendar" in proc.stdout, proc.stderr
    servers.wait_down(first["pid"])
    second = servers.wait_up(root)
    assert second["pid"] != first["pid"] and second["stamp"] != first["stamp"]


def watched_folders(pid: int) -> set[tuple[int, int]]:
    """(device, inode) of every folder the process's inotify instances watch (Linux's fdinfo)."""
    found = set()
    for info in Path(f"/proc/{pid}/fdinfo").iterdir():
        with contextlib.suppress(OSError):
            for match in re.finditer(r"^inotify wd:\d+ ino:([0-9a-f]+) sdev:([0-9a-f]+)", info.read_text(), re.M):
                sdev = int(match.group(2), 16)
                found.add((os.makedev(sdev >> 20, sdev & 0xFFFFF), int(match.group(1), 16)))
    return found


@pytest.mark.skipif(not Path("/proc/self/fdinfo").is_dir(), reason="reads Linux's /proc")
def test_the_server_does_not_watch_gits_own_folders(servers: Servers, tmp_path: Path) -> None:
    """Saves through a warm server: git makes object folders and packs them along the way; the
    server watches none of .git/ nor its own state folder, and its log holds none of watchdog's
    warnings about watching them ("Callback with id ... already exists")."""
    root = make_indexed_example_kb(tmp_path / "kb")
    # Loose objects past upkeep.LOOSE and the count five commits short of upkeep.EVERY: the fifth
    # save starts a repack, and the saves make object folders before and after it (as 30 saves
    # from a packed KB did, a relayed client and the server's save each).
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    for n in range(upkeep.LOOSE + 10):
        (blobs / str(n)).write_text(f"loose object {n}\n")
    git(root, "hash-object", "-w", *(str(p) for p in blobs.iterdir()))
    (root / ".slayer-kb" / upkeep.COUNTER).write_text(str(upkeep.EVERY - 5))
    servers.run(root, "list", "--limit", "1")
    up = servers.wait_up(root)
    for n in range(10):
        proc = servers.run(root, "save", f"note {n} saved through the server", "--title", f"Note {n}")
        assert proc.returncode == 0, proc.stderr
    assert servers.status(root)["pid"] == up["pid"]
    # The repack the saves started packs (and removes) object folders: walk them once it is done.
    assert upkeep.wait(root / ".slayer-kb", 120)
    assert upkeep.loose_objects(root / ".git" / "objects") < upkeep.LOOSE, "no repack ran"
    inside = {(st.st_dev, st.st_ino) for folder in (root / ".git", root / ".slayer-kb")
              for path in (folder, *folder.rglob("*")) if path.is_dir() and (st := path.stat())}
    watched = watched_folders(up["pid"])
    assert (root.stat().st_dev, (root / "memories").stat().st_ino) in watched
    assert watched & inside == set()
    log = (root / ".slayer-kb" / "server.log").read_text()
    assert "already exists" not in log and "WARNING" not in log, log
    found = servers.run(root, "search", "note 9 saved through the server", blocked=True)
    assert found.returncode == 0 and "Note 9" in found.stdout, found.stderr


def test_stdin_read_for_a_server_that_refuses_goes_to_the_command(servers: Servers, tmp_path: Path) -> None:
    # A foreground watch of an install that has since changed refuses the command (it does not
    # retire), after the client has read stdin to send it: the client runs it with those bytes.
    package = copy_package(tmp_path / "install")
    env = servers.env(PYTHONPATH=str(package), SLAYER_KB_SERVER="manual")
    root = make_indexed_example_kb(tmp_path / "kb")
    watch = subprocess.Popen([sys.executable, "-m", "slayer_kb", "--kb", str(root), "watch"], cwd=root, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        servers.wait_up(root)
        later = time.time() + 10
        os.utime(package / "slayer_kb" / "kb.py", (later, later))
        proc = servers.run(root, "save", "-", "-e", "shop.orders", input="learnt from stdin\n", env=env)
        assert proc.returncode == 0, proc.stderr
        saved = [p for p in (root / "memories").glob("*.yaml") if "learnt from stdin" in p.read_text()]
        assert len(saved) == 1
    finally:
        watch.terminate()
        watch.wait(timeout=WAIT_SECONDS)


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_a_server_killed_during_a_write_leaves_it_to_the_client(servers: Servers, tmp_path: Path) -> None:
    root = make_indexed_example_kb(tmp_path / "kb")
    # Files old enough to trust and an index built: the server's own syncs never take the lock.
    old = time.time() - 3600
    for path in root.rglob("*"):
        if ".git" not in path.parts:
            os.utime(path, (old, old))
    assert servers.run(root, "list", env=servers.env(SLAYER_KB_SERVER="off")).returncode == 0
    servers.run(root, "server", "start")
    pid = servers.wait_up(root)["pid"]
    assert servers.run(root, "list", blocked=True).returncode == 0  # after the server's first sync
    # The test holds the KB lock: the relayed save waits for it inside the server.
    lock = filelock.FileLock(str(root / ".slayer-kb" / "lock"))
    lock.acquire(timeout=60)
    try:
        client = subprocess.Popen(
            [sys.executable, "-m", "slayer_kb", "--kb", str(root), "save", "saved once", "-e", "shop.orders.amount"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=servers.env(), cwd=root,
        )
        try:
            eventually(lambda: (s := servers.status(root)) and (s.get("current") or "").startswith("--kb"),
                       "the server running the save")
            servers.kill(pid)
            servers.wait_down(pid)
        finally:
            lock.release()
        out, err = client.communicate(timeout=120)
    finally:
        if lock.is_locked:
            lock.release()
    assert client.returncode == 0, err
    assert "the server stopped while running this command, before it committed anything; running it in this process" in err
    assert out.startswith("Saved memory ")
    saved = [p for p in (root / "memories").glob("*.yaml") if "saved once" in p.read_text()]
    assert len(saved) == 1
    assert git(root, "status", "--porcelain") == ""
    # the client started a new server after it ran the command itself
    assert servers.wait_up(root)["pid"] != pid


# Each moment is a server started and killed: fault injection, which runs with -m slow as every
# kill does (docs/testing.md, "What is in -m slow").
@pytest.mark.slow  # fault injection (slow suite, .ci/run)
@pytest.mark.parametrize("delay", [0.0, 0.01, 0.03])
def test_a_server_killed_during_a_save_leaves_a_sound_kb(servers: Servers, tmp_path: Path, delay: float) -> None:
    """Killed a moment after it began the save: before, during or after its commit. The client
    runs the save itself when the commit did not land, else prints its result; the KB is whole,
    and the memory is there once."""
    root = make_indexed_example_kb(tmp_path / "kb")
    servers.run(root, "server", "start")
    pid = servers.wait_up(root)["pid"]
    assert servers.run(root, "list", blocked=True).returncode == 0  # after the server's first sync
    client = subprocess.Popen(
        [sys.executable, "-m", "slayer_kb", "--kb", str(root), "save", "killed midway", "-e", "shop.orders.amount"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=servers.env(), cwd=root,
    )
    try:
        # (or the save already done: on a busy machine a poll can miss the moment it ran)
        eventually(lambda: client.poll() is not None or (s := servers.status(root)) is None
                   or (s.get("current") or "").startswith("--kb"), "the server running the save")
        time.sleep(delay)
        servers.kill(pid)
        out, err = client.communicate(timeout=120)
    finally:
        if client.poll() is None:
            client.kill()
    assert client.returncode == 0, err
    assert out.startswith("Saved memory "), (out, err)
    saved = [p for p in (root / "memories").glob("*.yaml") if "killed midway" in p.read_text()]
    assert len(saved) == 1, err
    assert git(root, "status", "--porcelain") == ""
    # What the index holds, read in this process (no server in it, nothing about the process).
    found = json.loads(in_process_runner()("--kb", root, "--json", "search", "killed midway", "--all",
                                           env={"SLAYER_KB_SERVER": "off"}).stdout)
    assert sorted(h["id"] for h in found["memories"]) == sorted(p.stem for p in saved)


def test_two_kbs_have_two_servers(servers: Servers, tmp_path: Path) -> None:
    first, second = make_indexed_example_kb(tmp_path / "one"), make_indexed_example_kb(tmp_path / "two")
    (second / "memories" / "1.yaml").write_text("learning: the axolotl word lives only here\n"
                                                "created_at: '2026-11-01T10:00:00Z'\n")
    commit_all(second, "an own memory")
    for root in (first, second):
        servers.run(root, "list", "--limit", "1")
    one, two = servers.wait_up(first), servers.wait_up(second)
    assert one["pid"] != two["pid"]
    hits = [json.loads(servers.run(root, "--json", "search", "axolotl", "--all", blocked=True).stdout)["memories"]
            for root in (first, second)]
    assert hits[0] == [] and [h["id"] for h in hits[1]] == ["1"]


# -- the socket file (where abstract sockets do not exist) ----------------------------------------


def test_a_socket_file_in_the_state_folder(short_folder: Path, servers: Servers, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLAYER_KB_SERVER_SOCKET", "file")
    root = make_indexed_example_kb(short_folder / "kb")
    first = servers.run(root, "search", "fiscal year")
    up = servers.wait_up(root)
    sock = root / ".slayer-kb" / "server.sock"
    st = os.lstat(sock)
    assert stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077
    assert up["channel"] == str(sock.resolve())
    relayed = servers.run(root, "search", "fiscal year", blocked=True)
    assert (relayed.returncode, relayed.stdout, relayed.stderr) == (0, first.stdout, first.stderr)
    # a socket others could open is not trusted: the command runs in the process
    os.chmod(sock, 0o666)
    refused = servers.run(root, "search", "fiscal year", blocked=True)
    assert refused.returncode == 1 and BLOCKED in refused.stderr
    os.chmod(sock, 0o600)
    if os.geteuid() == 0:  # another user cannot even reach the socket: its folder is private
        probe = ("import os, socket\nos.setgid(65534); os.setuid(65534)\n"
                 "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(10)\n"
                 f"try:\n    s.connect({str(sock)!r}); print('connected', s.recv(1))\n"
                 "except PermissionError:\n    print('refused')\n")
        other = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
        assert other.stdout.strip() == "refused", other.stdout + other.stderr
    # a second server of the same KB exits at once (the lock file), the first keeps the socket
    second = subprocess.run([sys.executable, "-m", "slayer_kb.daemon.server", str(root), "--idle", "30"],
                            capture_output=True, text=True, timeout=60, env=servers.env())
    assert second.returncode == 0
    assert servers.status(root)["pid"] == up["pid"]
    relay.control(root, "stop")
    servers.wait_down(up["pid"])
    assert not sock.exists()


def test_a_kb_whose_socket_path_is_too_long_starts_no_server(servers: Servers, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # A socket file's path takes at most about 100 bytes (macOS, the BSDs; SLAYER_KB_SERVER_SOCKET
    # =file on Linux). Every command in such a KB started a server, which opened the KB (0.7 s
    # of CPU) and then tried to listen for 20 s; `server start` waited those 20 s to say "see
    # server.log", where nothing said why.
    monkeypatch.setenv("SLAYER_KB_SERVER_SOCKET", "file")
    root = make_indexed_example_kb(tmp_path / ("deep" * 20) / "kb")
    sock = root / ".slayer-kb" / "server.sock"
    assert len(os.fsencode(sock)) > relay.MAX_SOCKET_PATH
    listed = servers.run(root, "list", "--limit", "1")
    assert listed.returncode == 0 and "Memories:" in listed.stdout, listed.stderr
    assert started_servers(root) == []
    why = (f"its socket file {sock} would be {len(os.fsencode(sock))} bytes long, over the "
           f"{relay.MAX_SOCKET_PATH} a socket's path may take, so commands run in their own process; move the "
           "knowledge base to a shorter path to have one")
    start = servers.run(root, "server", "start")
    assert (start.returncode, start.stdout, start.stderr) == (1, "", f"Error: no server for {root}: {why}.\n")
    # With --json, the error document every error prints (it printed none).
    start = servers.run(root, "--json", "server", "start")
    assert (start.returncode, json.loads(start.stdout)) == (
        1, {"error": {"type": "store", "message": f"no server for {root}: {why}."}})
    assert started_servers(root) == []
    status = servers.run(root, "server", "status")
    assert (status.returncode, status.stdout) == (0, f"No server for {root} ({why}); mode: on.\n")


def on_a_terminal(argv: list[str], cwd: Path, env: dict[str, str], columns: int) -> tuple[int, bytes]:
    """Run with stdout on a pseudo-terminal ``columns`` wide: (exit code, what it printed there)."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=slave, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal's other side is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return proc.wait(timeout=60), b"".join(chunks)


def test_the_terminal_width_is_the_clients(served_pair: tuple[Servers, Path, Path]) -> None:
    servers, relayed_kb, local_kb = served_pair
    base = {k: v for k, v in servers.env().items() if k not in ("COLUMNS", "LINES")}
    relayed_env = {**base, "PYTHONPATH": f"{servers.blocked}{os.pathsep}{servers.install}"}
    local_env = {**base, "SLAYER_KB_SERVER": "off"}
    outputs = set()
    for columns in (70, 118):
        argv = [sys.executable, "-m", "slayer_kb", "search", "refunds", "--full"]
        got = on_a_terminal(argv, relayed_kb, relayed_env, columns)
        want = on_a_terminal(argv, local_kb, local_env, columns)
        assert got == want and got[0] == 0
        outputs.add(got[1])
    assert len(outputs) == 2  # the two widths wrap differently
    # no terminal and no $COLUMNS: both fall back to the same width
    plain = [subprocess.run([sys.executable, "-m", "slayer_kb", "search", "refunds"], cwd=kb, env=env,
                            capture_output=True, timeout=60) for kb, env in ((relayed_kb, relayed_env), (local_kb, local_env))]
    assert plain[0].returncode == 0 and plain[0].stdout == plain[1].stdout


def test_watch_takes_over_from_a_background_server(servers: Servers, tmp_path: Path) -> None:
    root = make_indexed_example_kb(tmp_path / "kb")
    servers.run(root, "server", "start")
    background = servers.wait_up(root)
    watch = subprocess.Popen([sys.executable, "-m", "slayer_kb", "--kb", str(root), "watch"], cwd=root,
                             env=servers.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        servers.wait_down(background["pid"])
        up = eventually(lambda: (s := servers.status(root)) and s["pid"] == watch.pid and s["ready"] and s,
                        "the watch answering")
        assert isinstance(up, dict) and up["idle_exit"] is None
        relayed = servers.run(root, "search", "fiscal year", blocked=True)
        assert relayed.returncode == 0 and "kb.fiscal-calendar" in relayed.stdout, relayed.stderr
    finally:
        watch.terminate()
        watch.wait(timeout=WAIT_SECONDS)


def test_writes_run_in_a_write_process_that_stops_with_its_server(servers: Servers, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLAYER_KB_WRITE_NICENESS")  # the default's steps, which the status shows
    root = make_indexed_example_kb(tmp_path / "kb")
    servers.run(root, "server", "start")
    up = servers.wait_up(root)
    assert up["writer"] is None  # started by the first write, not before
    saved = servers.run(root, "save", "Refunds post a day late", "-e", "shop.orders.amount", blocked=True)
    assert (saved.returncode, saved.stdout) == (0, "Saved memory 27 (created)\n  entities: shop.orders.amount\n")
    writer = servers.status(root)["writer"]  # type: ignore[index]
    assert (writer["writes"], writer["starts"]) == (1, 1)
    assert started(writer["pid"]) is not None and writer["pid"] != up["pid"]
    assert f"write process: {writer['pid']}, 10 steps lower, 1 writes, started 1 times" in servers.run(
        root, "server", "status").stdout.splitlines()
    # Found by its words as soon as the save returned (the server took the write in).
    found = servers.run(root, "search", "refunds post a day late", blocked=True)
    assert "[27] " in found.stdout, found.stdout
    assert servers.run(root, "server", "stop").returncode == 0
    servers.wait_down(up["pid"])
    assert started(writer["pid"]) is None  # no orphan: the server waited for it
