"""A relayed write is done once, whenever its server dies (store/requests.py, daemon/settle.py,
docs/server.md "Exactly once").

A ``reference-transaction`` hook in the test repository SIGKILLs the server (a ``slayer-kb
watch``) at the moment git publishes the command's commit, once. The client then finds out
whether the commit landed and prints what the command prints, with its exit code, instead of
running it again. Each case runs the same commands on a twin of the KB with no server: the same
output (commit ids and times masked), the same number of commits and memories.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.daemon import relay
from slayer_kb.daemon.settle import settle
from slayer_kb.store import requests
from slayer_kb.store.repo import Change
from testing import Watcher, eventually, git, in_process_runner, signals

T = TypeVar("T")

# Kills of servers and write processes (fault injection: the slow suite, .ci/run).
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not relay.SUPPORTED, reason="commands are relayed on POSIX systems only")]

# Kills the pid named in .git/kill-at-<state> (one shot: the file goes) when a ref transaction
# reaches that state; at "prepared" it also aborts the transaction, as a kill before update-ref.
KILL = """#!/bin/sh
cat >/dev/null
armed="$(git rev-parse --git-dir)/kill-at-$1"
[ -f "$armed" ] || exit 0
pid=$(cat "$armed")
rm -f "$armed"
kill -9 "$pid"
"""
HOOK = KILL + """[ "$1" = prepared ] && exit 1
exit 0
"""

# (commands run first on both KBs, normally; the command whose commit kills the server)
CASES = {
    "save": ([], ["save", "saved exactly once", "-e", "shop.orders.amount"]),
    "save --json": ([], ["--json", "save", "saved exactly once", "-e", "shop.orders.amount"]),
    "save --id (replaced)": ([], ["save", "replaced once", "--id", "2", "-e", "shop.orders.amount"]),
    "update": ([], ["update", "2", "--title", "Renamed once", "--json"]),
    "restore --rev": ([["update", "2", "--title", "Renamed, then restored"]], ["restore", "2", "--rev", "HEAD~1"]),
    "forget": ([["save", "points at 3", "-e", "memory:3"]], ["forget", "3"]),
    "forget --soft --json": ([], ["forget", "4", "--soft", "--json"]),
    "rename": ([["save", "points at 3", "-e", "memory:3"]], ["rename", "3", "kb.three"]),
    "rename --json": ([], ["--json", "rename", "4", "kb.four"]),
    "delete-model": ([], ["delete-model", "shop.refunds"]),
    "delete-model --json": ([], ["delete-model", "shop.refunds", "--json"]),
    "observation": ([], ["save", "JWT over sessions", "--title", "Auth decision", "--type", "decision"]),
    "observation --json": ([], ["--json", "save", "JWT", "--title", "Auth", "--type", "decision", "--topic-key",
                                "architecture/auth"]),
    "session-start": ([], ["--json", "session-start", "ses-once", "--project", "api"]),
    "save-prompt": ([], ["save-prompt", "Why does net revenue go negative in March?", "--session", "ses-once"]),
    "session-end": ([["session-start", "ses-once", "--project", "api"]], ["session-end", "ses-once", "--json"]),
    "session-summary": ([], ["session-summary", "Fixed the refund double count", "--project", "api"]),
}


def run(root: Path, *args: str, server: bool) -> subprocess.CompletedProcess[str]:
    """``slayer-kb --kb root args``: relayed to the server from a process, or with no server in
    this process (``in_process_runner``, which prints what a process prints)."""
    if not server:
        return in_process_runner()("--kb", root, *args, cwd=root, env={"COLUMNS": "80", "SLAYER_KB_SERVER": "off"})
    env = dict(os.environ, COLUMNS="80", SLAYER_KB_SERVER="manual")
    return subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), *args], capture_output=True,
                          text=True, env=env, cwd=root, timeout=120)


def masked(text: str) -> str:
    """Commit ids and times, which differ between the twins."""
    text = re.sub(r"\b[0-9a-f]{12,40}\b", "<commit>", text)
    return re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+(Z|[+-]\d\d:\d\d)?", "<time>", text)


def memory_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "memories").glob("*.yaml"))


def commits(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD"))


def twin_of(root: Path) -> Path:
    twin = root.parent / "twin"
    shutil.copytree(root, twin, ignore=shutil.ignore_patterns(".slayer-kb"))
    return twin


def arm(root: Path, state: str, pid: int) -> None:
    hook = root / ".git" / "hooks" / "reference-transaction"
    hook.write_text(HOOK)
    hook.chmod(0o755)
    (root / ".git" / f"kill-at-{state}").write_text(str(pid))


# Whom a test kills: the server, or the write process it runs writes in (started by a first write).
KILLED = ["server", "write process"]


def _victim(watcher: Watcher, killed: str) -> int:
    if killed == "server":
        return watcher.proc.pid
    status = relay.control(watcher.root, "status")
    assert status is not None and status["writer"] is not None
    return int(status["writer"]["pid"])


def _killed(watcher: Watcher, killed: str, pid: int) -> None:
    """Wait for ``pid`` to be gone: the server's exit status; the write process, with its server
    living on (which reaps it: no zombie is left either)."""
    if killed == "server":
        assert watcher.proc.wait(timeout=60) == -9
        return
    eventually(lambda: not Path(f"/proc/{pid}").exists(), "the write process reaped")
    assert watcher.proc.poll() is None


# Every command with the server killed; with the write process killed, one of each way a
# command commits (a new file, a cascade over files, a catalog file, a topic-key upsert, a
# session file). Settling is the same code for all: the client prints the output the write
# process recorded (requests.finish) for the commit that landed, whatever the command, and
# each case costs a server's start and kill. The default run kills each under a save; the
# other commands run with -m slow (.ci/run). What settling prints for a command's recorded
# output, or for its commits alone, is checked in process below (settle() on a real KB). The
# write process killed under a save, with its exact output and its restart, is the default run's
# test_a_write_process_killed_as_its_commit_lands_is_started_again_and_its_command_settled.
BY_WRITE_PROCESS = ("save", "forget", "delete-model", "observation --json", "session-end", "restore --rev")


@pytest.mark.parametrize(("case", "killed"), [
    pytest.param(case, killed, marks=() if (case, killed) == ("save", "server") else pytest.mark.slow)
    for killed, cases in (("server", CASES), ("write process", BY_WRITE_PROCESS))
    for case in cases
])
def test_a_server_killed_as_its_commit_lands_is_not_run_again(watcher: Watcher, case: str, killed: str) -> None:
    root = watcher.root
    twin = twin_of(root)
    before, argv = CASES[case]
    for args in [["save", "starts the write process", "-e", "shop.orders.amount"], *before]:
        assert run(root, *args, server=True).returncode == 0
        assert run(twin, *args, server=False).returncode == 0
    twin_start = commits(twin)
    want = run(twin, *argv, server=False)
    assert want.returncode == 0, want.stderr
    start = commits(root)
    pid = _victim(watcher, killed)
    arm(root, "committed", pid)
    got = run(root, *argv, server=True)
    _killed(watcher, killed, pid)  # killed as the commit landed
    assert not (root / ".git" / "kill-at-committed").exists()
    assert (got.returncode, masked(got.stdout)) == (0, masked(want.stdout)), got.stderr
    assert "Traceback" not in got.stderr and "running it in this process" not in got.stderr
    if argv[-1] == "--json" or argv[0] == "--json":
        assert json.loads(got.stdout)
    assert commits(root) - start == commits(twin) - twin_start == 1
    assert memory_files(root) == memory_files(twin)
    assert git(root, "status", "--porcelain") == ""



@pytest.mark.parametrize("killed", KILLED)
def test_a_server_killed_before_its_commit_lands_leaves_the_command_to_the_client(
    watcher: Watcher, killed: str
) -> None:
    root = watcher.root
    assert run(root, "save", "starts the write process", "-e", "shop.orders.amount", server=True).returncode == 0
    start, files = commits(root), memory_files(root)
    pid = _victim(watcher, killed)
    arm(root, "prepared", pid)  # killed, and the update-ref refused: nothing landed
    got = run(root, "save", "saved once after all", "-e", "shop.orders.amount", server=True)
    _killed(watcher, killed, pid)
    assert got.returncode == 0, got.stderr
    # A write process killed before its commit leaves the id it counted out (store/counted.py) used:
    # a gap, never a repeat; one that lives on, its commit refused, gives it back.
    saved = "28" if killed == "server" else "29"
    assert got.stdout == f"Saved memory {saved} (created)\n  entities: shop.orders.amount\n"
    # The client names what stopped: the server, or only its write process (the server lives on).
    stopped = "the server" if killed == "server" else "the server's write process"
    assert got.stderr == (f"slayer-kb: {stopped} stopped while running this command, before it committed "
                          "anything; running it in this process.\n")
    assert commits(root) == start + 1
    assert memory_files(root) == sorted([*files, f"{saved}.yaml"])
    assert git(root, "status", "--porcelain") == ""


def test_a_write_process_killed_as_its_commit_lands_is_started_again_and_its_command_settled(
    watcher: Watcher,
) -> None:
    root = watcher.root
    assert run(root, "save", "starts the write process", "-e", "shop.orders.amount", server=True).returncode == 0
    first = relay.control(root, "status")["writer"]  # type: ignore[index]
    start, files = commits(root), memory_files(root)
    arm(root, "committed", first["pid"])
    got = run(root, "save", "saved exactly once", "-e", "shop.orders.amount", server=True)
    assert not (root / ".git" / "kill-at-committed").exists()
    assert (got.returncode, got.stdout) == (0, "Saved memory 28 (created)\n  entities: shop.orders.amount\n")
    assert "Traceback" not in got.stderr and "running it in this process" not in got.stderr
    assert commits(root) == start + 1
    # The server lives on; the next write starts another write process, and is found at once.
    again = run(root, "save", "Chargebacks are netted daily", "-e", "shop.orders.amount", server=True)
    assert (again.returncode, again.stderr) == (0, "")
    status = relay.control(root, "status")
    assert status is not None and status["pid"] == watcher.proc.pid
    assert status["writer"]["starts"] == 2 and status["writer"]["pid"] != first["pid"]
    assert "[29] " in run(root, "search", "chargebacks netted daily", server=True).stdout
    assert memory_files(root) == sorted([*files, "28.yaml", "29.yaml"])
    assert git(root, "status", "--porcelain") == ""


def _under(kb: KnowledgeBase, request: str, write: Callable[[], T]) -> T:
    """``write`` run as a relayed request would run it (its commits noted under ``request``)."""
    kb.store.request = request
    try:
        return write()
    finally:
        kb.store.request = None


def _saved_under(kb: KnowledgeBase, request: str, *texts: str) -> list[str]:
    """Save ``texts`` as a relayed request would."""
    return _under(kb, request, lambda: [kb.save_memory(text, ["shop.orders.amount"]).commit or "" for text in texts])


def _read_back(kb: KnowledgeBase, capfd: pytest.CaptureFixture[str], request: str, argv: list[str]) -> str:
    """What a client prints for ``request``, whose output no one recorded, once its server died:
    the command's output read back from its commit, nothing on stderr."""
    assert settle((str(kb.root), request), argv) == 0
    out, err = capfd.readouterr()
    assert err == ""
    return out


def test_the_output_recorded_when_the_command_returned_is_printed(
    indexed_example_kb: KnowledgeBase, capfd: pytest.CaptureFixture[str]
) -> None:
    request = "a" * 32
    _saved_under(indexed_example_kb, request, "answered, then killed")
    requests.finish(indexed_example_kb.store.state, request, 0, [(1, b"Saved memory 27 (created)\n"), (2, b"warning: x\n")])
    assert settle((str(indexed_example_kb.root), request), ["save", "answered, then killed", "-e", "shop.orders.amount"]) == 0
    assert capfd.readouterr() == ("Saved memory 27 (created)\n", "warning: x\n")
    assert requests.read(indexed_example_kb.store.state, request) is None  # settled: the record goes


def test_a_command_of_several_commits_is_reported_not_run_again(
    indexed_example_kb: KnowledgeBase, capfd: pytest.CaptureFixture[str]
) -> None:
    request = "b" * 32
    made = _saved_under(indexed_example_kb, request, "first part", "second part")
    start = commits(indexed_example_kb.root)
    assert settle((str(indexed_example_kb.root), request), ["import", "somewhere"]) == 1
    out, err = capfd.readouterr()
    assert out == ""
    assert err == (f"slayer-kb: the server stopped while running this command, after it had made 2 commits: "
                   f"{made[0][:12]} (memory: save 27); {made[1][:12]} (memory: save 28). It is not run again, "
                   "since that part is done: check 'git log' and finish the rest by hand.\n")
    assert commits(indexed_example_kb.root) == start


def test_a_commit_that_cannot_be_read_back_is_named(indexed_example_kb: KnowledgeBase, capfd: pytest.CaptureFixture[str]) -> None:
    request = "c" * 32
    indexed_example_kb.store.request = request
    try:
        with indexed_example_kb.store.locked():
            indexed_example_kb.store.commit([Change("notes.txt", b"a note\n")], "notes: a note")
    finally:
        indexed_example_kb.store.request = None
    head = git(indexed_example_kb.root, "rev-parse", "HEAD").strip()
    assert settle((str(indexed_example_kb.root), request), ["import", "somewhere"]) == 0
    assert capfd.readouterr() == ("", f"slayer-kb: the server stopped after committing this command as {head[:12]} "
                                      f"(notes: a note); it is not run again: 'git show {head[:12]}' shows what it did.\n")


@pytest.mark.parametrize("as_json", [False, True])
def test_a_restore_of_a_revision_is_printed_as_the_command_prints_it(
    indexed_example_kb: KnowledgeBase, capfd: pytest.CaptureFixture[str], as_json: bool
) -> None:
    """``restore --rev`` commits "memory: restore ID as of REV": read back like the rest, its
    output is the command's, not a note naming the commit."""
    indexed_example_kb.update("2", title="Renamed, then restored")
    done = _under(indexed_example_kb, "d" * 32, lambda: indexed_example_kb.history.restore("2", "HEAD~1"))
    out = _read_back(indexed_example_kb, capfd, "d" * 32, ["restore", "2", "--rev", "HEAD~1", *(["--json"] if as_json else [])])
    if as_json:
        assert json.loads(out) == done.to_json()
    else:
        assert out == f"Restored memory 2 as of {done.rev[:12]}\n"


@pytest.mark.parametrize("as_json", [False, True])
def test_a_rename_is_printed_as_the_command_prints_it(
    indexed_example_kb: KnowledgeBase, capfd: pytest.CaptureFixture[str], as_json: bool
) -> None:
    """A rename's output recorded by no one (its server killed as the commit landed, its write
    process before it finished): read back from the commit, the links it rewrote from its body."""
    done = _under(indexed_example_kb, "e" * 32, lambda: indexed_example_kb.rename("kb.paid-revenue", "kb.revenue.paid"))
    assert done.rewritten  # the example KB links it
    out = _read_back(indexed_example_kb, capfd, "e" * 32,
                     ["rename", "kb.paid-revenue", "kb.revenue.paid", *(["--json"] if as_json else [])])
    if as_json:
        assert json.loads(out) == done.to_json()
    else:
        assert out == ("Renamed memory kb.paid-revenue to kb.revenue.paid\n  rewrote memory:kb.paid-revenue to "
                       f"memory:kb.revenue.paid in {', '.join(done.rewritten)}\n")


# Kills the write process named in .git/kill-at-prepared as its update-ref prepares; the git it
# ran goes on, as slow as a hook on a loaded machine, and publishes the commit.
SLOW_HOOK = KILL + """sleep 1
exit 0
"""


def test_a_write_process_killed_mid_commit_is_settled_once_its_git_is_done(watcher: Watcher) -> None:
    root = watcher.root
    assert run(root, "save", "starts the write process", "-e", "shop.orders.amount", server=True).returncode == 0
    start, files = commits(root), memory_files(root)
    pid = _victim(watcher, "write process")
    arm(root, "prepared", pid)
    (root / ".git" / "hooks" / "reference-transaction").write_text(SLOW_HOOK)
    got = run(root, "save", "saved once after all", "-e", "shop.orders.amount", server=True)
    _killed(watcher, "write process", pid)
    # Settled once that git was done: the commit it published is the command's, not run again.
    assert (got.returncode, got.stdout) == (0, "Saved memory 28 (created)\n  entities: shop.orders.amount\n"), got.stderr
    assert "running it in this process" not in got.stderr and "Traceback" not in got.stderr
    again = run(root, "save", "Chargebacks are netted daily", "-e", "shop.orders.amount", server=True)
    assert again.returncode == 0, again.stderr
    assert commits(root) == start + 2
    assert memory_files(root) == sorted([*files, "28.yaml", "29.yaml"])
    assert git(root, "status", "--porcelain") == ""


# Holds a commit's ref update ("prepared") until the test says go.
HELD = """#!/bin/sh
cat >/dev/null
git_dir="$(git rev-parse --git-dir)"
if [ "$1" = prepared ]; then
    touch "$git_dir/held"
    i=0
    while [ ! -e "$git_dir/go" ] && [ $i -lt 6000 ]; do sleep 0.01; i=$((i+1)); done
fi
exit 0
"""


# 10: the client relays from a thread of its own, lowered, which Ctrl-C does not interrupt
# (priority.beneath); 0: from its main thread.
@pytest.mark.parametrize("niceness", ["10", "0"])
def test_ctrl_c_on_a_write_the_server_began_waits_for_its_outcome(watcher: Watcher, niceness: str) -> None:
    """Ctrl-C printed "Aborted!" and exited 1 while the server went on and committed the save:
    an agent that retried saved it twice. The client now says the server finishes it, waits,
    and prints what the save printed, with its exit code."""
    root = watcher.root
    run(root, "search", "warm", server=True)  # the write process up: the save below is held in its git
    hook = root / ".git" / "hooks" / "reference-transaction"
    hook.write_text(HELD)
    hook.chmod(0o755)
    before = commits(root)
    env = dict(os.environ, COLUMNS="80", SLAYER_KB_SERVER="manual", SLAYER_KB_WRITE_NICENESS=niceness)
    client = subprocess.Popen([sys.executable, "-m", "slayer_kb", "--kb", str(root), "save", "interrupted once",
                               "-e", "shop.orders.amount"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env, cwd=root, preexec_fn=signals.as_a_shell_starts_it)  # noqa: PLW1509
    eventually(lambda: (root / ".git" / "held").exists(), "the save's commit under way")
    client.send_signal(signal.SIGINT)
    assert client.stderr is not None
    said = ""
    while not said.strip():  # the message follows a blank line, as click's "Aborted!" did
        said = client.stderr.readline()
    (root / ".git" / "go").touch()
    out, err = client.communicate(timeout=120)
    assert said == ("Interrupted: the server had begun this save and finishes it; waiting for its outcome "
                    "(Ctrl-C again to stop waiting).\n")
    saved = KnowledgeBase(root).newest(limit=1)[0]
    assert (client.returncode, out, err) == (0, f"Saved memory {saved['id']} (created)\n  entities: shop.orders.amount\n", "")
    assert commits(root) == before + 1 and KnowledgeBase(root).get(saved["id"]).learning == "interrupted once"
