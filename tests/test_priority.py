"""A write's spare work yields the CPU to reads (core/priority.py; docs/server.md, "Reads beside
writes"): the relayed client of a write once its command began, the server's write process with
the git processes it runs (and their hooks), and the server's sentence model runs, each
``SLAYER_KB_WRITE_NICENESS`` steps lower, read back from /proc; never the server's threads that
answer reads."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import filelock
import pytest

from slayer_kb.core import priority
from slayer_kb.daemon import commands, relay
from testing import WAIT_SECONDS, Watcher, eventually, git, signals
from testing.threads import stat_fields, thread_niceness, thread_stats

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and per-thread priorities")

# Each `committed` ref transaction appends the hook's own niceness (inherited from git) and its
# session's group's ("-" without autogroup) to .git/nice-seen.
HOOK = """#!/bin/sh
cat >/dev/null
[ "$1" = committed ] || exit 0
"{python}" -c 'import os; g = "/proc/self/autogroup"; print(os.nice(0), open(g).read().split()[-1] if os.path.exists(g) else "-")' >> "$(git rev-parse --git-dir)/nice-seen"
"""


@pytest.fixture(autouse=True)
def default_niceness(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(priority.VARIABLE, raising=False)
    yield




def nice_of(stat: Path) -> int:
    """The niceness in a /proc .../stat file (field 19)."""
    return int(stat_fields(stat)[16])


BASE = os.nice(0)  # what this process and its children start from
LOWER = min(priority.MAX, BASE + priority.DEFAULT)


@pytest.mark.parametrize(("value", "steps"), [(None, 10), ("0", 0), ("3", 3), ("25", 19), ("-4", 0), ("ten", 10)])
def test_the_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch, value: str | None,
                                                   steps: int) -> None:
    if value is not None:
        monkeypatch.setenv(priority.VARIABLE, value)
    assert priority.niceness() == steps


def test_a_command_runs_lower_and_zero_steps_leave_it_as_it_is() -> None:
    argv = [sys.executable, "-c", "import os; print(os.nice(0))"]
    assert priority.command(argv, 0) == argv
    assert subprocess.run(priority.command(argv, 7), capture_output=True, text=True, check=True).stdout == (
        f"{min(priority.MAX, BASE + 7)}\n")


def test_a_missing_git_run_lower_still_says_git_is_not_installed(tmp_path: Path) -> None:
    # A PATH holding `nice` but no git: the error is slayer-kb's, not nice's own words.
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "nice").symlink_to(shutil.which("nice") or "/usr/bin/nice")
    script = ("from pathlib import Path; from slayer_kb.store.repo import run_git\n"
              "try: run_git(['--version'], Path('.'), niceness=5)\nexcept Exception as exc: print(exc)")
    out = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PATH": str(tmp_path / "bin")},
                         capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout == "git is not installed or not on PATH; install git first.\n"


def test_a_thread_runs_lower_and_the_others_do_not() -> None:
    seen: dict[str, int] = {}

    def lowered() -> None:
        priority.lower_thread(4)
        seen["thread"] = nice_of(Path(f"/proc/self/task/{threading.get_native_id()}/stat"))

    thread = threading.Thread(target=lowered)
    thread.start()
    thread.join()
    assert seen == {"thread": min(priority.MAX, BASE + 4)}
    assert nice_of(Path(f"/proc/self/task/{threading.get_native_id()}/stat")) == BASE


def _save(root: Path, text: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "slayer_kb", "--kb", str(root), "save", text, "-e",
                             "shop.orders.amount"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **env), preexec_fn=signals.as_a_shell_starts_it)  # noqa: PLW1509




def _states(pid: int) -> set[str]:
    """The scheduler states of process ``pid``'s threads (R running, S sleeping, ...)."""
    return {fields[0] for fields in thread_stats(Path(f"/proc/{pid}/task").iterdir())}




@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads Linux's /proc")
def test_a_thread_gone_between_listing_and_reading_is_not_counted() -> None:
    # Only threads this test holds: the worker's others (another test's, ending) may go between
    # two reads of /proc/self/task. One is lowered, so each niceness read is seen to be its own.
    listed, release = threading.Event(), threading.Event()
    tids: list[int] = []

    def held() -> None:
        priority.lower_thread(4)
        tids.append(threading.get_native_id())
        listed.set()
        release.wait()

    thread = threading.Thread(target=held)
    thread.start()
    try:
        listed.wait(WAIT_SECONDS)
        tasks = [Path(f"/proc/self/task/{tid}") for tid in (threading.get_native_id(), *tids)]
        gone = Path("/proc/self/task/2147483647")  # above pid_max: never a thread
        stats = thread_stats([tasks[0], gone, tasks[1]])
    finally:
        release.set()
        thread.join()
    assert [fields[16] for fields in stats] == [str(BASE), str(min(priority.MAX, BASE + 4))]


@pytest.mark.skipif(not relay.SUPPORTED, reason="commands are relayed on POSIX systems only")
@pytest.mark.skipif(LOWER == BASE, reason="this process runs at the lowest priority already")
def test_a_relayed_write_yields_and_the_server_threads_do_not(encoder_on: None, watcher: Watcher) -> None:
    root = watcher.root
    hook = root / ".git" / "hooks" / "reference-transaction"
    hook.write_text(HOOK.format(python=sys.executable))
    hook.chmod(0o755)
    seen = root / ".git" / "nice-seen"

    # The save waits for the KB lock this test holds, its command begun: its client waits on a
    # lower thread, its main thread at the caller's priority.
    lock = filelock.FileLock(str(root / ".slayer-kb" / "lock"))
    lock.acquire()
    try:
        saving = _save(root, "Refunds are netted against the order amount")
        eventually(lambda: saving.poll() is not None or thread_niceness(saving.pid) == [BASE, LOWER],
                   "the client of a begun write relaying from a lower thread")
        assert saving.poll() is None, saving.communicate()
    finally:
        lock.release()
    out, err = saving.communicate(timeout=120)
    assert (saving.returncode, err) == (0, ""), out
    lowered, raised = (f"{LOWER} {priority.DEFAULT}", f"{BASE} 0") if AUTOGROUP.exists() else (f"{LOWER} -", f"{BASE} -")
    assert seen.read_text() == f"{lowered}\n"  # update-ref, and the hook it ran, in the write process
    writer = relay.control(root, "status")["writer"]  # type: ignore[index]
    assert (writer["niceness"], writer["writes"], writer["starts"]) == (priority.DEFAULT, 1, 1)
    # The write ran on a lower thread (with the threads it started, the file monitor's): the
    # main thread, which runs a sync (below), is not lowered.
    assert stat_fields(Path(f"/proc/{writer['pid']}/stat"))[16] == str(BASE)
    # A session of its own (so a process group of its own: its git is ended with it), lowered as
    # a whole: Linux's autogroup shares the cores between sessions first, and a niceness alone
    # counts only within its session's group.
    (_, _, group, session) = stat_fields(Path(f"/proc/{writer['pid']}/stat"))[:4]
    assert (int(group), int(session)) == (writer["pid"], writer["pid"])
    if AUTOGROUP.exists():
        autogroup = Path(f"/proc/{writer['pid']}/autogroup").read_text()
        assert autogroup.split()[-1] == str(priority.DEFAULT), autogroup

    # A client's own setting no longer lowers anything but itself: the write process, started
    # with the server's setting, runs every write, and its git as low as itself, never lower.
    again = _save(root, "Chargebacks are netted too", **{priority.VARIABLE: "0"})
    assert again.communicate(timeout=120)[1] == "" and again.returncode == 0
    assert seen.read_text() == f"{lowered}\n{lowered}\n"

    # A sync, which every other clone's sync waits for while it holds the remote's turn, runs at
    # the server's priority, its git and their hooks with it, the group raised back for it and
    # lowered again after it.
    git(root.parent, "init", "-q", "--bare", "remote.git")
    git(root, "remote", "add", "origin", str(root.parent / "remote.git"))
    synced = subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), "--json", "sync"],
                            capture_output=True, text=True, timeout=120)
    assert (synced.returncode, json.loads(synced.stdout)["pushed"]) == (0, 3), synced.stderr
    assert seen.read_text().splitlines()[2:] and set(seen.read_text().splitlines()[2:]) == {raised}
    assert relay.control(root, "status")["writer"]["writes"] == 3  # type: ignore[index]
    if AUTOGROUP.exists():
        assert Path(f"/proc/{writer['pid']}/autogroup").read_text().split()[-1] == str(priority.DEFAULT)

    # Every thread of the server at its priority but the one the sentence model runs on, once
    # the model made the saved memories' vectors.
    def covered() -> bool:
        status = relay.control(root, "status")
        vectors = status and status["sentence_vectors"]
        return bool(vectors and vectors["covered"] == vectors["memories"] and not vectors["building"])

    eventually(covered, "the saved memories' sentence vectors")
    threads = thread_niceness(watcher.proc.pid)
    assert threads.count(LOWER) == 1 and threads.count(BASE) == len(threads) - 1, threads


# ``slayer-kb`` ARGS with a look-out in the import system: when the relay is imported, it says
# which thread imports it, at what niceness, and the main thread's.
SPY = """
import os, sys, _thread

def nice(tid):
    return open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()[16]

class Spy:
    def find_spec(self, name, path=None, target=None):
        if name == "slayer_kb.daemon.relay":
            tid = _thread.get_native_id()
            who = "the main thread" if tid == os.getpid() else "another thread"
            print(f"the relay imported by {who} at {nice(tid)}, the main thread at {nice(os.getpid())}", file=sys.stderr)

sys.meta_path.insert(0, Spy())
sys.argv[0] = "slayer-kb"
from slayer_kb.entry import main
main()
"""


@pytest.mark.skipif(not relay.SUPPORTED, reason="commands are relayed on POSIX systems only")
@pytest.mark.skipif(LOWER == BASE, reason="this process runs at the lowest priority already")
def test_a_write_client_lowers_its_relay_before_importing_it_and_a_read_does_not(watcher: Watcher) -> None:
    root = str(watcher.root)

    def client(*args: str, **env: str) -> tuple[str, str, int]:
        done = subprocess.run([sys.executable, "-c", SPY, "--kb", root, *args], capture_output=True, text=True,
                              env=dict(os.environ, **env), timeout=120)
        return done.stdout, done.stderr, done.returncode

    # Lowered before the relay's sockets are imported, on a thread of its own: the main thread,
    # which would run the command itself and start a server when there is none, keeps its own.
    assert client("save", "Refunds are netted", "-e", "shop.orders.amount") == (
        "Saved memory 27 (created)\n  entities: shop.orders.amount\n",
        f"the relay imported by another thread at {LOWER}, the main thread at {BASE}\n", 0)
    out, err, code = client("search", "refunds netted")
    assert (err, code) == (f"the relay imported by the main thread at {BASE}, the main thread at {BASE}\n", 0)
    assert out.startswith("Memories:\n  [27] Refunds are netted\n"), out
    assert client("forget", "27", **{priority.VARIABLE: "0"}) == (
        "Forgot memory 27\n", f"the relay imported by the main thread at {BASE}, the main thread at {BASE}\n", 0)


@pytest.mark.skipif(not relay.SUPPORTED, reason="commands are relayed on POSIX systems only")
@pytest.mark.skipif(LOWER == BASE, reason="this process runs at the lowest priority already")
def test_ctrl_c_stops_a_write_client_at_once_while_its_relay_waits(watcher: Watcher) -> None:
    # The save waits for the KB lock this test holds; Ctrl-C reaches the client's main thread,
    # which says so, and a second one exits then, not when the relaying thread is done. (The
    # server began the save: it finishes it, and the first Ctrl-C waits for that, relay.py.)
    lock = filelock.FileLock(str(watcher.root / ".slayer-kb" / "lock"))
    with lock:
        saving = _save(watcher.root, "Refunds are netted against the order amount")
        # While it waits (both threads asleep, the relay on the server), as the test's name says.
        eventually(lambda: saving.poll() is not None or (thread_niceness(saving.pid) == [BASE, LOWER]
                                                         and _states(saving.pid) == {"S"}),
                   "the client of a write waiting on a lower relaying thread")
        # And the server began it (it names a command once its client confirmed the start).
        eventually(lambda: saving.poll() is not None or ((status := relay.control(watcher.root, "status")) is not None
                                                         and str(status["current"]).endswith(" save Refunds are "
                                                         "netted against the order amount -e shop.orders.amount")),
                   "the server running the save")
        status = Path(f"/proc/{saving.pid}/status").read_text()
        masks = [line for line in status.splitlines() if line.startswith(("SigBlk", "SigIgn", "SigCgt"))]
        saving.send_signal(signal.SIGINT)
        assert saving.stderr is not None
        said = [saving.stderr.readline(), saving.stderr.readline()]
        saving.send_signal(signal.SIGINT)
        try:
            out, err = saving.communicate(timeout=WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            saving.kill()
            raise AssertionError(f"the client outlived Ctrl-C; its signals before it: {masks}") from None
        assert (saving.returncode, out, said, err) == (1, "", [
            "\n", "Interrupted: the server had begun this save and finishes it; waiting for its outcome (Ctrl-C "
            "again to stop waiting).\n"],
            "Not waiting: the server may still finish this save; `git log -1` shows whether it committed.\n")


AUTOGROUP = Path("/proc/self/autogroup")
# The whole line: a session in the kernel's default group (one that init's session started, as
# on a CI runner) reads as empty.
SHOW_AUTOGROUP = "import sys; from slayer_kb.core import priority; priority.lower_session(7); sys.stdout.write(open('/proc/self/autogroup').read())"


@pytest.mark.skipif(not AUTOGROUP.exists(), reason="a kernel without autogroup")
def test_a_session_leader_lowers_its_session_and_no_other_process_does() -> None:
    # A niceness counts only within its session's scheduling group: a detached job lowers the
    # group it leads; a process of someone's session (a terminal's) leaves that group alone.
    led = subprocess.run([sys.executable, "-c", SHOW_AUTOGROUP], capture_output=True, text=True, check=True,
                         start_new_session=True, timeout=120)
    assert led.stdout.endswith(" nice 7\n"), led.stdout
    member = subprocess.run([sys.executable, "-c", SHOW_AUTOGROUP], capture_output=True, text=True, check=True,
                            timeout=120)
    assert member.stdout == AUTOGROUP.read_text()


@pytest.mark.skipif(not AUTOGROUP.exists(), reason="a kernel without autogroup")
def test_the_upkeep_runs_its_commands_in_a_lowered_session_of_its_own(tmp_path: Path) -> None:
    from slayer_kb.store import upkeep

    seen = tmp_path / "seen"
    # The command says whether its session is another than this test's, and its group's niceness.
    probe = [sys.executable, "-c", f"import os; open({str(seen)!r} + '.tmp', 'w').write("
                                   f"str(os.getsid(0) != {os.getsid(0)}) + ' ' + open('/proc/self/autogroup').read().split()[-1]); "
                                   f"os.replace({str(seen)!r} + '.tmp', {str(seen)!r})"]
    assert upkeep.detach("slayer_kb.store.upkeep", str(tmp_path), json.dumps([probe])) is not None
    eventually(seen.exists, "the upkeep's command run")
    assert seen.read_text() == f"True {priority.DEFAULT}"


@pytest.mark.parametrize(("argv", "yields"), [
    (["save", "Refunds are netted"], True),
    (["--kb", "kb", "--json", "forget", "27"], True),
    (["sync"], False),  # other clones wait for it: the remote's turn
    (["--kb", "kb", "sync", "--remote", "origin"], False),
    (["search", "refunds"], False),  # a read: nothing of it is spare
    (["server", "status"], False),  # run here, never relayed
    (["watch"], False),
    (["--kb", "kb", "list"], False),
    (["--help"], False),
    ([], False),
])
def test_every_write_yields_but_a_sync(argv: list[str], yields: bool) -> None:
    assert commands.yields(argv) is yields


def test_a_bulk_index_write_beneath_keeps_its_worker_processes(tmp_path: Path) -> None:
    """The server's write process runs each write ``beneath``; a bulk index write there forks
    Whoosh's worker processes from that thread. Forked from a thread Python's threading did not
    start, each worker failed Python's own shutdown (exit code 1), and an import-engram of 1,200
    observations said "A search-index worker process died"."""
    from whoosh import fields
    from whoosh import index as windex

    from slayer_kb.search import writing

    ix = windex.create_in(str(tmp_path), fields.Schema(id=fields.ID(stored=True), body=fields.TEXT))

    def write() -> int:
        with writing.writer(ix, bulk=True) as writer:
            for n in range(writing.BULK_THRESHOLD + 100):
                writer.add_document(id=str(n), body=f"refunds post a day after order {n}")
        return int(ix.doc_count())

    assert priority.niceness() > 0  # so beneath runs it on a thread of its own
    assert priority.beneath(write) == writing.BULK_THRESHOLD + 100
