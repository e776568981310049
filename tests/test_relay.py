"""Commands relayed to a running ``slayer-kb watch`` (relay.py, server.py): the same output and
exit code as running them in the process, from the watcher's warm index, never stale. The
server started on demand is tested in test_server.py."""

from __future__ import annotations

import ast
import collections
import contextlib
import json
import os
import platform
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from slayer_kb import KnowledgeBase
from slayer_kb.cli import cli as cli_group
from slayer_kb.daemon import commands, relay
from testing import BLOCKED, Watcher, blocker, eventually, git, in_process_runner, signals, threads

pytestmark = pytest.mark.skipif(not relay.SUPPORTED, reason="commands are relayed on POSIX systems only")

SEARCHES = [
    ["search", "fiscal year"],
    ["--json", "search", "refunds", "--any", "--limit", "2"],
    ["search", "-e", "shop.orders.amount", "--full"],
    ["search", "decision/paid-revenue", "--json"],
    ["search", "--datasource", "nope", "x"],  # an error: exit 1
    ["search", "--limit", "0", "x"],  # a usage error: exit 2
    ["search"],  # no input: the newest memories, with a warning
]


def cli(root: Path, *args: str, blocked: Path | None = None, cwd: Path | None = None,
        kb_option: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="80")
    if blocked is not None:
        env["PYTHONPATH"] = str(blocked)
    argv = ["--kb", str(root), *args] if kb_option else list(args)
    return subprocess.run([sys.executable, "-m", "slayer_kb", *argv], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=60)


@pytest.fixture
def blocked_here(tmp_path: Path) -> Path:
    """A PYTHONPATH under which a process that runs a command itself fails (``testing.blocker``)."""
    return blocker(tmp_path / "blocker")


def test_relayed_searches_print_exactly_what_a_process_prints(watcher: Watcher, blocked_here: Path) -> None:
    root = watcher.root
    # The blocker works: a search this process answers itself (nothing is relayed with the
    # server off) fails under it.
    here = subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), "search", "fiscal year"],
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(blocked_here), SLAYER_KB_SERVER="off"))
    assert here.returncode == 1 and BLOCKED in here.stderr
    relayed = [cli(root, *args, blocked=blocked_here) for args in SEARCHES]
    watcher.stop()
    # What each prints with no server, in this process (in_process_runner prints what a process prints).
    direct = [in_process_runner()("--kb", root, *args, env={"COLUMNS": "80"}) for args in SEARCHES]
    for args, got, want in zip(SEARCHES, relayed, direct, strict=True):
        assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr), args
    assert [p.returncode for p in direct] == [0, 0, 0, 0, 1, 2, 0]
    assert "Unknown datasource" in direct[4].stderr or "nope" in direct[4].stderr
    assert json.loads(direct[1].stdout)["memories"]


def test_a_relayed_search_sees_an_edit_made_just_before_it(watcher: Watcher, blocked_here: Path) -> None:
    path = watcher.root / "memories" / "2.yaml"
    path.write_text(path.read_text().replace("Time zones:", "Time zones axolotlrelay:"))
    found = cli(watcher.root, "--json", "search", "axolotlrelay", blocked=blocked_here)
    assert found.returncode == 0, found.stderr
    assert [hit["id"] for hit in json.loads(found.stdout)["memories"]] == ["2"]
    path.unlink()
    gone = cli(watcher.root, "--json", "search", "axolotlrelay", blocked=blocked_here)
    assert json.loads(gone.stdout)["memories"] == []


RENAMES = [
    ["rename", "kb.refund-policy", "kb.refunds-once"],
    ["--json", "rename", "kb.soft-deletes", "kb.deleted-rows"],
    ["rename", "kb.fiscal-calendar", "KB.Active-Customer"],  # an error: exit 1
]


def test_a_relayed_rename_prints_exactly_what_a_process_prints(watcher: Watcher, blocked_here: Path) -> None:
    """Run by the server (the client, blocked, cannot), and on a twin of the KB in this process:
    the same output, the commit ids aside; then the server's index finds the new id at once."""
    root = watcher.root
    twin = root.parent / "twin"
    shutil.copytree(root, twin, ignore=shutil.ignore_patterns(".slayer-kb"))
    relayed = [cli(root, *args, blocked=blocked_here) for args in RENAMES]
    direct = [in_process_runner()("--kb", twin, *args, env={"COLUMNS": "80"}) for args in RENAMES]
    for args, got, want in zip(RENAMES, relayed, direct, strict=True):
        assert (got.returncode, got.stderr.replace(str(root), str(twin))) == (want.returncode, want.stderr), args
        if "--json" in args:
            got_json, want_json = json.loads(got.stdout), json.loads(want.stdout)
            assert got_json.pop("commit") == git(root, "rev-parse", "HEAD").strip()
            assert want_json.pop("commit") == git(twin, "rev-parse", "HEAD").strip()
            assert got_json == want_json
        else:
            assert got.stdout == want.stdout, args
    assert [p.returncode for p in relayed] == [0, 0, 1]
    assert relayed[0].stdout == ("Renamed memory kb.refund-policy to kb.refunds-once\n"
                                 "  rewrote memory:kb.refund-policy to memory:kb.refunds-once in 11\n")
    found = cli(root, "--json", "search", "-e", "memory:kb.refunds-once", blocked=blocked_here)
    assert [hit["id"] for hit in json.loads(found.stdout)["memories"]] == ["kb.refunds-once", "11"]


def test_a_relayed_json_save_carries_a_detached_head_in_its_warnings(watcher: Watcher, blocked_here: Path) -> None:
    """Run by the server (the client, blocked, cannot): the warning the KB tells travels in the
    JSON on stdout, as in a process of its own, not on the server's streams."""
    git(watcher.root, "checkout", "-q", "--detach")
    saved = cli(watcher.root, "--json", "save", "a learning the server saved while HEAD was detached", "-e", "shop.orders",
                blocked=blocked_here)
    assert (saved.returncode, saved.stderr) == (0, "")
    assert [w.split(" (")[0] for w in json.loads(saved.stdout)["warnings"]] == ["HEAD is detached"]


def sqlite_files_open(pid: int) -> list[str]:
    """The SQLite files (the manifest, the vector cache, their WAL) process ``pid`` holds open."""
    found = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(FileNotFoundError):
            target = os.readlink(fd)
            if ".db" in Path(target).name:
                found.append(Path(target).name)
    return sorted(found)


def test_a_server_keeps_no_sqlite_files_open_for_the_searches_it_answered(
        watcher_read_only: Watcher, blocked_here: Path) -> None:
    # Each relayed command runs on a thread of its own, which keeps a connection to the
    # manifest and to the vector cache for its reads. A sqlite3 connection refers to itself
    # (its statement cache), so one left to the thread's end was freed only by a full garbage
    # collection, rare in a big process: the server's open files grew by four a search.
    def search(n: int) -> None:
        done = cli(watcher_read_only.root, "search", f"fiscal year {n}", blocked=blocked_here)
        assert done.returncode == 0, done.stderr

    for n in range(12):
        search(n)
    # Each file open at most twice: by the kept connection of the server's filler thread, and
    # by one closed while that one held its lock, which SQLite keeps to open the file again.
    opened = collections.Counter(sqlite_files_open(watcher_read_only.proc.pid))
    assert max(opened.values(), default=0) <= 2, opened


def test_the_kb_is_found_as_the_cli_finds_it(watcher_read_only: Watcher, blocked_here: Path) -> None:
    inside = watcher_read_only.root / "models"
    by_cwd = cli(watcher_read_only.root, "search", "fiscal year", blocked=blocked_here, cwd=inside, kb_option=False)
    assert by_cwd.returncode == 0 and "kb.fiscal-calendar" in by_cwd.stdout
    by_env = subprocess.run([sys.executable, "-m", "slayer_kb", "search", "fiscal year"], capture_output=True,
                            text=True, env=dict(os.environ, SLAYER_KB=str(watcher_read_only.root), PYTHONPATH=str(blocked_here)),
                            cwd=watcher_read_only.root.parent, timeout=60)
    assert by_env.returncode == 0 and "kb.fiscal-calendar" in by_env.stdout


def test_a_file_the_server_can_read_is_read_there_a_pipe_here(watcher_read_only: Watcher, blocked_here: Path) -> None:
    query = watcher_read_only.root.parent / "q.json"
    query.write_text('{"source_model": "shop.orders", "measures": ["sum(amount)"]}')
    for args in (["search", "--query", f"@{query}"], ["search", f"--query=@{query}"]):
        relayed = cli(watcher_read_only.root, *args, blocked=blocked_here)
        assert relayed.returncode == 0 and BLOCKED not in relayed.stderr, args
        assert relayed.stdout == cli(watcher_read_only.root, *args).stdout
    # relative to the client's folder, as in its own process
    by_cwd = cli(watcher_read_only.root, "search", "--query", "@q.json", blocked=blocked_here, cwd=query.parent)
    assert by_cwd.returncode == 0, by_cwd.stderr
    if os.path.isdir("/dev/shm"):  # an ordinary file under /dev: the server reads it too
        with tempfile.NamedTemporaryFile("w", suffix=".json", dir="/dev/shm") as shared:
            shared.write(query.read_text())
            shared.flush()
            relayed = cli(watcher_read_only.root, "search", "--query", f"@{shared.name}", blocked=blocked_here)
            assert relayed.returncode == 0 and BLOCKED not in relayed.stderr, relayed.stderr
    # a missing file, a pipe: read here (the blocked import shows it ran here)
    for args in (["search", "--query", "@nope.json"], ["search", "--query", "@/dev/stdin"]):
        proc = cli(watcher_read_only.root, *args, blocked=blocked_here)
        assert proc.returncode == 1 and BLOCKED in proc.stderr, args


def test_a_relayed_read_takes_its_clients_settings(watcher_read_only: Watcher, blocked_here: Path) -> None:
    # search, get and list went beside any write, in the server's environment: a setting a
    # process refuses was taken (exit 0 where a process exits 1).
    root = watcher_read_only.root
    cases = [
        ({"SLAYER_KB_MAX_CONTENT": "abc"}, ["search", "fiscal year"]),
        ({"SLAYER_KB_WRITE_NICENESS": "x"}, ["get", "2"]),
        ({"SLAYER_KB_CACHE": "relative"}, ["list", "--limit", "1"]),
    ]
    for settings, args in cases:
        relayed = subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), *args], capture_output=True,
                                 text=True, env=dict(os.environ, COLUMNS="80", PYTHONPATH=str(blocked_here), **settings),
                                 timeout=60)
        direct = in_process_runner()("--kb", root, *args, env={"COLUMNS": "80", **settings})
        assert (relayed.returncode, relayed.stdout, relayed.stderr) == (direct.returncode, direct.stdout, direct.stderr)
        assert direct.returncode == 1 and next(iter(settings)) in direct.stderr, settings  # each refused


def test_stdin_is_sent_only_where_the_command_reads_it(watcher_read_only: Watcher, blocked_here: Path) -> None:
    # Any "-" among the arguments made the client read all of stdin and send it: `list --project -`
    # and `search --project - WORDS` read none in a process, but relayed they ate the input of
    # what came after them (`while read`, `; cat`), and waited for a pipe that never ends.
    root = shlex.quote(str(watcher_read_only.root))
    env = dict(os.environ, COLUMNS="80", PYTHONPATH=str(blocked_here))
    # `search fiscal -` is a usage error, given before stdin is read: a "-" past the text's slot;
    # so is `update --learning -`, without the id it changes. So is any error in the arguments,
    # whether click's (an unknown option, a bad choice) or the command's own (no learning given,
    # an empty -e, --all with --any), which the server finds before it asks for stdin.
    # So are a learning given empty and an empty -e beside `--query -`, and a bad setting, which
    # a process refuses as it opens its KB, before it reads stdin.
    cases = [("", args) for args in (
        "list --project - --limit 1", "search --project - fiscal", "--json search --limit=1 --project=- -- fiscal",
        "search fiscal -", "update --learning -", "update kb.paid-revenue --learning - --bogus",
        "save --query -", "save - --scope nope", "--json save - --content x", "search --all --any -",
        "update kb.paid-revenue --learning - -e ''", "session-end s1 --summary - extra",
        "save --query - ''", "save --query - text -e ''")]
    cases += [("SLAYER_KB_MAX_CONTENT=abc ", "update kb.paid-revenue --learning -"),
              ("SLAYER_KB_GIT_TIMEOUT=-1 ", "search -"), ("SLAYER_KB_MAX_CONTENT=1 ", "save --query - text")]
    for setting, args in cases:
        line = f"{setting}{shlex.quote(sys.executable)} -m slayer_kb --kb {root} {args}; echo; cat"
        proc = subprocess.run(["sh", "-c", line], input="left for cat\n", capture_output=True, text=True, env=env,
                              timeout=60)
        assert proc.stdout.endswith("\nleft for cat\n") and BLOCKED not in proc.stderr, (args, proc.stdout, proc.stderr)
        # And what it printed is what a process of its own prints.
        direct = in_process_runner()("--kb", watcher_read_only.root, *shlex.split(args), input="left for cat\n",
                                     env={"COLUMNS": "80", **dict([setting.strip().split("=", 1)] if setting else [])})
        assert (proc.stdout, proc.stderr) == (direct.stdout + "\nleft for cat\n", direct.stderr), args
        assert setting.split("=")[0] in proc.stderr, (args, proc.stderr)  # refused for the setting


def test_a_closed_stdin_is_told_as_closed_relayed_or_not(watcher_read_only: Watcher) -> None:
    """``save - <&-`` said "learning is empty": stdin, closed, is /dev/null to the command
    (entry.py), and relayed it sent nothing. Told as closed, the server running or not."""
    said = ("Error: Standard input is closed (the command was started with '<&-'), so '-' reads nothing: pipe the "
            "text or query in, or give it on the command line.\n")
    line = f"{shlex.quote(sys.executable)} -m slayer_kb --kb {shlex.quote(str(watcher_read_only.root))} save - <&-"
    for server in ("on", "off"):
        proc = subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, SLAYER_KB_SERVER=server))
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", said), server


@pytest.mark.parametrize("argv, expected", [
    (["save", "-"], True), (["save", "--content", "-"], True), (["save", "--content=-"], True),
    (["save", "--query", "-", "-e", "x"], True), (["save", "--title", "-", "--content", "x"], False),
    (["save", "--title", "t", "--", "-"], True), (["save", "--title", "--", "-"], True),
    (["--json", "search", "--project", "-", "x"], False), (["search", "--json", "-"], True),
    (["update", "-", "--title", "t"], False), (["update", "3", "--learning", "-"], True),
    (["session-end", "-"], False), (["session-end", "s", "--summary", "-"], True),
    (["save-prompt", "-"], True), (["capture-passive", "--project", "-", "-"], True),
    (["list", "--project", "-"], False), (["get", "-"], False), (["--kb", "-", "stats"], False),
    (["search", "fiscal", "-"], False), (["search", "-", "fiscal"], False), (["save", "x", "--", "-"], False),
    (["search", "--query", "-", "a", "b"], False), (["update", "3", "-", "--learning", "-"], False),
    (["update", "--learning", "-"], False), (["session-end", "--summary", "-"], False),
])
def test_which_arguments_are_read_from_stdin(argv: list[str], expected: bool) -> None:
    assert commands.reads_stdin(argv) is expected


def test_the_relay_knows_where_each_command_reads_stdin() -> None:
    """commands.STDIN against the CLI: the commands that read a "-" from stdin (read_text_arg,
    read_query) with whether their positional argument is that text, the options whose "-" is
    stdin, and every option of theirs that takes a value (whose value is skipped when looking for a
    positional "-")."""
    context = click.Context(cli_group)
    for name, (positional, options, valued) in commands.STDIN.items():
        command = cli_group.get_command(context, name)
        assert command is not None, name
        taking = {opt for p in command.params if isinstance(p, click.Option) and not p.is_flag for opt in p.opts}
        assert set(valued) == taking and set(options) <= taking, name
        # One positional argument at most (reads_stdin takes a second for a usage error), and one
        # that is not the text is required (reads_stdin takes none for a usage error too).
        arguments = [p for p in command.params if isinstance(p, click.Argument)]
        assert [p.nargs for p in arguments] in ([], [1]), name
        assert positional or [p.required for p in arguments] == [True], name
    assert set(commands.STDIN) == _commands_calling("read_text_arg", "read_query")


def _commands_calling(*names: str) -> set[str]:
    """The CLI's commands whose function calls one of ``names``, read from the cli modules' code."""
    found = set()
    for path in (Path(commands.__file__).parent.parent / "cli").glob("*.py"):
        for node in ast.parse(path.read_text()).body:  # a command is a function at the top of its module
            if not isinstance(node, ast.FunctionDef):
                continue
            named = [d for d in node.decorator_list if isinstance(d, ast.Call) and ast.unparse(d.func) == "click.command"]
            calls = {ast.unparse(c.func) for c in ast.walk(node) if isinstance(c, ast.Call)}
            if named and calls & set(names):
                given = [a.value for a in named[0].args if isinstance(a, ast.Constant)]
                found.add(given[0] if given else node.name.replace("_", "-"))
    return found


def test_stdin_is_sent_to_the_server(watcher_read_only: Watcher, blocked_here: Path) -> None:
    env = dict(os.environ, COLUMNS="80", PYTHONPATH=str(blocked_here))
    proc = subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(watcher_read_only.root), "search", "-"],
                          input="fiscal year", capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0 and "kb.fiscal-calendar" in proc.stdout, proc.stderr


def test_a_second_watcher_keeps_the_index_but_leaves_the_searches(watcher: Watcher) -> None:
    second = Watcher(watcher.root)
    try:
        second.wait_for_line("Watching")
        assert "Another server answers this KB's commands; this one only keeps the index current." in second.lines
    finally:
        second.stop()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another user")
def test_another_user_gets_no_answer(watcher_read_only: Watcher) -> None:
    address = relay.address(watcher_read_only.root)
    probe = (
        "import os, socket\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(10)\n"
        f"s.connect({address!r})\n"
        # A watcher acknowledges its own user's connections at once; this one must hang up.
        "try:\n"
        "    s.sendall(b'{\"argv\": [\"search\", \"x\"], \"root\": \"/\", \"width\": 80}')\n"
        "    s.shutdown(socket.SHUT_WR)\n"
        "    print('answered' if s.recv(100) else 'closed')\n"
        "except (BrokenPipeError, ConnectionResetError):\n    print('closed')\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "closed", proc.stderr


FAKE_WATCHER = """
import marshal, os, socket, struct, sys, time
mode = sys.argv[2]
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(b"\\0" + sys.argv[1].encode("latin-1"))  # an abstract name: a NUL, then this
if mode == "as-nobody":
    os.setgid(65534); os.setuid(65534)
listener.listen(8)
print("ready", flush=True)
conn, _ = listener.accept()
if mode == "wedged":
    conn.recv(1)  # never acknowledges,
    time.sleep(3600)  # nor goes away when the client does: the test stops it, then kills it
else:
    if mode == "late":
        time.sleep(3)  # a loaded machine's server: slower than the client's old 2 s bound
    conn.sendall(b"+")
    size = int.from_bytes(conn.recv(4), "big")  # the request, one frame
    while size > 0:
        size -= len(conn.recv(size))
    answer = marshal.dumps({"code": 0, "chunks": [(1, b"FAKE ANSWER")]})
    conn.sendall(b"R" + struct.pack(">I", len(answer)) + answer)
conn.close()
"""


def fake_watcher(root: Path, mode: str = "answer") -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", FAKE_WATCHER, relay.address(root)[1:].decode("latin-1"), mode],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


def test_the_client_takes_an_answer_only_from_its_own_user(example_kb: KnowledgeBase) -> None:
    root = example_kb.root
    # The same user: its answer is printed (this is all the client checks about a watcher).
    same = fake_watcher(root)
    try:
        proc = cli(root, "search", "fiscal year")
        assert (proc.returncode, proc.stdout) == (0, "FAKE ANSWER")
    finally:
        same.wait(timeout=60)
    if os.geteuid() != 0:
        pytest.skip("needs root to pose as another user")
    other = fake_watcher(root, "as-nobody")
    try:
        assert relay.forward(["--kb", str(root), "search", "fiscal year"]).code is None
    finally:
        other.kill()
        other.wait(timeout=60)


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_a_server_slow_to_acknowledge_on_a_loaded_machine_is_waited_for(example_kb: KnowledgeBase) -> None:
    # A client that gave a live server up would run the command beside it, in a second process.
    late = fake_watcher(example_kb.root, "late")
    try:
        proc = cli(example_kb.root, "search", "fiscal year")
        assert (proc.returncode, proc.stdout) == (0, "FAKE ANSWER"), proc.stderr
    finally:
        late.wait(timeout=60)


def test_a_watcher_that_does_not_acknowledge_is_given_up_on(example_kb: KnowledgeBase) -> None:
    wedged = fake_watcher(example_kb.root, "wedged")
    try:
        assert relay.connect(example_kb.root, timeout=0.5) is None  # alive: after the bound
        # Stopped (Ctrl-Z): given up on once seen stopped, whatever the bound.
        wedged.send_signal(signal.SIGSTOP)
        eventually(lambda: relay.stopped(wedged.pid), "the watcher stopped")
        given_up: list[object] = []
        waiting = threading.Thread(target=lambda: given_up.append(relay.connect(example_kb.root, timeout=3600)),
                                   daemon=True)
        waiting.start()
        eventually(lambda: given_up, "the client giving the stopped watcher up")
        assert given_up == [None]
        proc = cli(example_kb.root, "search", "fiscal year")
        assert proc.returncode == 0 and "kb.fiscal-calendar" in proc.stdout  # answered here instead
    finally:
        wedged.kill()
        wedged.wait(timeout=60)


def test_a_request_for_another_kb_or_command_is_refused(watcher_read_only: Watcher) -> None:
    real = os.path.realpath(watcher_read_only.root)
    for request in (
        {"argv": ["search", "x"], "root": "/elsewhere"},
        {"argv": ["watch"], "root": real},
        {"argv": ["search", "--query", "@q.json"], "root": real},
        {"argv": ["forget", "1"], "root": real, "stamp": "another install"},
        {"op": "shutdown", "root": real},
        {"nonsense": True},
    ):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(10)
            conn.connect(relay.address(watcher_read_only.root))
            assert conn.recv(1) == relay.ACK
            relay.send_frame(conn, relay.dumps(request))
            assert relay.recv_exactly(conn, 1) == relay.REFUSED, request
    assert (watcher_read_only.root / "memories" / "1.yaml").exists()


def _still_open(conn: socket.socket) -> bool:
    """Whether the server has not closed ``conn`` (heartbeats read and dropped)."""
    conn.setblocking(False)
    try:
        while True:
            if not conn.recv(4096):
                return False
    except BlockingIOError:
        return True
    finally:
        conn.settimeout(60)


def test_a_read_told_it_starts_keeps_no_other_read_waiting_for_its_confirmation(
    watcher_read_only: Watcher, blocked_here: Path
) -> None:
    # The server tells a read's client it starts and waits for it to confirm: a round trip to a
    # process that may wait for the CPU. No other read waits for it (the view is let go).
    root = watcher_read_only.root
    request = {"argv": ["search", "fiscal year"], "root": os.path.realpath(root), "cwd": str(root),
               "env": dict(os.environ, COLUMNS="80"), "umask": 0o022, "terminal": None, "streams": None,
               "stamp": relay.version_stamp(), "stdin": None, "request": "0" * 32}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as slow:
        slow.settimeout(60)
        slow.connect(relay.address(root))
        assert slow.recv(1) == relay.ACK
        relay.send_frame(slow, relay.dumps(request))
        while (tag := relay.recv_exactly(slow, 1)) == relay.BEAT:
            pass
        assert tag == relay.START
        other = cli(root, "search", "fiscal year", blocked=blocked_here)
        assert other.returncode == 0 and "kb.fiscal-calendar" in other.stdout, other.stderr
        assert _still_open(slow), "the other read was answered only once the server gave up on this one"
        slow.sendall(relay.GO)
        while (tag := relay.recv_exactly(slow, 1)) == relay.BEAT:
            pass
        assert tag == relay.RESULT
        result = relay.loads(relay.recv_frame(slow))
    assert isinstance(result, dict) and result["code"] == 0
    assert b"kb.fiscal-calendar" in b"".join(data for _fd, data in result["chunks"])


# An in-process caller of the relay: a write the server begins (a forget it refuses, which
# changes nothing), then a read that waits for its stdin, where the test presses Ctrl-C.
RELAYS_TWICE = """import sys
from slayer_kb.daemon import relay
print("first:", relay.forward(["--kb", sys.argv[1], "forget", "no-such-memory"]).code, flush=True)
print("second:", relay.forward(["--kb", sys.argv[1], "search", "-"]).code, flush=True)
"""


@pytest.mark.skipif(threads.READ_SYSCALL.get(platform.machine()) is None or not Path("/proc/self/syscall").exists(),
                    reason="reads Linux's /proc/PID/syscall")
def test_a_caller_relaying_twice_carries_no_mark_of_the_first_write(watcher_read_only: Watcher) -> None:
    """The write the server began was a module global, never cleared: Ctrl-C on a read relayed
    after a write, in one process, said "the server had begun this forget and finishes it" and
    waited on, where it aborts the read."""
    root = watcher_read_only.root
    client = subprocess.Popen([sys.executable, "-c", RELAYS_TWICE, str(root)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root,
                              env=dict(os.environ, SLAYER_KB_SERVER="manual"),
                              preexec_fn=signals.as_a_shell_starts_it)  # noqa: PLW1509
    try:
        eventually(lambda: client.poll() is not None or threads.reads_stdin_now(client.pid),
                   "the relayed search reading its stdin")
        client.send_signal(signal.SIGINT)
        out, err = client.communicate(timeout=120)
    finally:
        client.kill()
    assert (client.returncode, out, err) == (0, "first: 1\nsecond: 1\n", (
        "Error: No memory with id 'no-such-memory'.\n\nAborted!\n"))


def test_without_a_watcher_nothing_is_relayed(example_kb: KnowledgeBase) -> None:
    outcome = relay.forward(["--kb", str(example_kb.root), "search", "x"])
    assert (outcome.code, outcome.start) == (None, None)  # SLAYER_KB_SERVER=manual: none started


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["search", "x"], (None, "search", ["x"])),
        (["--kb", "d", "--json", "search", "x", "--any"], ("d", "search", ["x", "--any"])),
        (["--kb=d", "--author", "A", "search"], ("d", "search", [])),
        (["--author=A", "search", "-e", "m.c"], (None, "search", ["-e", "m.c"])),
        (["list"], (None, "list", [])),
        (["save", "-", "-e", "x"], (None, "save", ["-", "-e", "x"])),
        (["forget", "1"], (None, "forget", ["1"])),
        (["--version"], None),
        (["search", "--help"], None),
        (["search", "-h"], None),
        (["search", "--query", "@f.json"], (None, "search", ["--query", "@f.json"])),
        (["search", "--query=@f.json"], (None, "search", ["--query=@f.json"])),
        (["watch"], None),
        (["edit", "1"], None),
        (["server", "status"], None),
        (["--kb"], None),
        ([], None),
    ],
)
def test_which_commands_are_relayed(argv: list[str], expected: object) -> None:
    assert relay.relayable(argv) == expected


def test_a_reindex_that_draws_a_progress_bar_runs_in_the_process() -> None:
    assert relay.relayable(["reindex"]) == (None, "reindex", [])
    assert relay.relayable(["reindex"], stderr_tty=True) is None


def test_a_sync_is_relayed_unless_a_terminal_may_have_to_answer_git() -> None:
    assert relay.relayable(["sync", "--remote", "up"]) == (None, "sync", ["--remote", "up"])
    assert relay.relayable(["sync"], stdin_tty=True) is None
    assert relay.relayable(["sync"], stderr_tty=True) is None


def _click_reads(argv: list[str]) -> tuple[str | None, list[str]]:
    """What the CLI's click group makes of ``argv``: the --kb value, and the command with its
    arguments (what is left after the group's own options)."""
    ctx = cli_group.make_context("slayer-kb", list(argv), resilient_parsing=True)
    with warnings.catch_warnings():  # click 9 moves protected_args into args
        warnings.simplefilter("ignore", DeprecationWarning)
        rest = [*getattr(ctx, "protected_args", []), *ctx.args]
    return ctx.params["kb_path"], rest


def test_the_relay_knows_every_option_of_the_cli_group() -> None:
    # --version and --help are eager: they answer at once, and the relay leaves them to run here.
    options = [p for p in cli_group.params if isinstance(p, click.Option) and not p.is_eager]
    flags = {name for p in options if p.is_flag for name in p.opts}
    valued = {name for p in options if not p.is_flag for name in p.opts}
    assert (flags, valued) == (set(commands.GLOBAL_FLAGS), set(commands.GLOBAL_WITH_VALUE))


_GLOBAL_TOKENS = ["--kb", "d", "--kb=e", "--kb=", "--author", "A", "--author=B", "--json"]


@given(st.lists(st.sampled_from([*_GLOBAL_TOKENS, "search", "list", "-", "@f", "-e", "x", "--any", "--help", "--bogus", "--",
                                  "--json=1"]),
                max_size=8))
def test_the_relay_reads_argv_as_click_does(argv: list[str]) -> None:
    found = commands.parse(argv)
    if found is not None:
        kb_path, command, rest = found
        assert _click_reads(argv) == (kb_path, [command, *rest])


@given(st.lists(st.sampled_from(_GLOBAL_TOKENS), max_size=6), st.sampled_from(["search", "list", "save"]),
       st.lists(st.sampled_from(["-e", "x", "--kb", "-", "--json"]), max_size=4))
def test_the_relay_finds_the_command_after_any_global_options(globals_: list[str], command: str, rest: list[str]) -> None:
    argv = [*globals_, command, *rest]
    kb_path, click_rest = _click_reads(argv)
    if click_rest[:1] == [command]:  # a trailing "--kb" or "--author" took the command as its value otherwise
        assert commands.parse(argv) == (kb_path, command, click_rest[1:])


@given(st.lists(st.sampled_from(["search", "list", "--kb", "d", "--json", "-", "@f", "-e", "x", "--any", "--help"]),
                max_size=8))
def test_relayable_passes_no_help(argv: list[str]) -> None:
    found = relay.relayable(argv)
    if found is not None:
        _kb_path, command, rest = found
        assert not command.startswith("-")
        assert rest == argv[len(argv) - len(rest):]
        assert argv[len(argv) - len(rest) - 1] == command
        assert "--help" not in rest


def test_the_client_imports_nothing_heavy_to_find_a_watcher() -> None:
    probe = "import sys; import slayer_kb.entry, slayer_kb.daemon.relay; print(sorted(m for m in sys.modules if m.split('.')[0] in ('whoosh', 'numpy', 'yaml', 'click', 'git', 'watchdog')))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize("server", ["on", None])  # None: unset, the KB's git setting (unset too) read
def test_the_client_imports_not_even_json_pathlib_or_typing(tmp_path: Path, server: str | None) -> None:
    # Without site (-S), which imports some of them for an editable install; a run in the
    # process that follows imports what it needs then. Nor socket.py (its enums and selectors:
    # the built-in _socket serves) nor subprocess (no git run to read an unset setting).
    root = Path(relay.__file__).resolve().parent.parent.parent
    git(tmp_path, "init", "-q")
    (tmp_path / "memories").mkdir()  # a KB with no server: the client looks for one, then gives up
    probe = (
        f"import sys; sys.path.insert(0, {str(root)!r}); import os; os.chdir({str(tmp_path)!r})\n"
        "from slayer_kb.daemon import relay\n"
        "assert relay.forward(['search', 'x']).start == relay.forward(['--kb', '.', 'list']).start == os.getcwd()\n"
        "print(sorted(m for m in ('json', 'pathlib', 'typing', 'hashlib', 'subprocess', 're', 'socket', 'selectors',"
        " 'enum') if m in sys.modules))"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("SLAYER_KB_SERVER", "CI", "XDG_CONFIG_HOME")}
    env["HOME"] = str(tmp_path)  # no config file of the developer's own (the system's is off: conftest.py)
    proc = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, timeout=60, check=True,
                          env=env if server is None else {**env, "SLAYER_KB_SERVER": server})
    assert proc.stdout.strip() == "[]", proc.stderr


def test_a_deleted_current_folder_gets_the_clis_own_error(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    probe = (
        "import os, sys\n"
        f"os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})\n"
        "sys.argv = ['slayer-kb', 'search', 'x']\n"
        "from slayer_kb.entry import main\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("Error: ")
