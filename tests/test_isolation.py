"""No code from a KB, ever (SECURITY.md, "Child processes"): a cloned KB that tracks a
``slayer_kb/`` package and files shadowing the standard library, run from a folder holding the
same, never has one of them imported, by the command itself, the warm server, the background
repack or the index compaction, with the server on or off. Real processes throughout: the
``slayer-kb`` program a user runs, a bare remote for ``sync``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core import children
from slayer_kb.daemon import relay
from slayer_kb.search import compaction
from slayer_kb.store import upkeep
from testing import WAIT_SECONDS, commit_all, default_first, eventually, git, make_empty_kb

# Each writes a marker file named for where it was planted when it is imported.
PLANTED = ("slayer_kb/__init__.py", "socket.py", "json.py", "yaml.py")


def plant(folder: Path, markers: Path, where: str) -> None:
    for name in PLANTED:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        marker = markers / f"{where}-{name.replace('/', '-')}"
        path.write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")


def program() -> list[str]:
    """``slayer-kb`` as installed: the console script beside this Python (whose own folder is
    the only one it puts on its path)."""
    script = Path(sys.executable).parent / "slayer-kb"
    return [str(script)] if script.exists() else [*children.python_child("slayer_kb")[0]]


def loose_objects(root: Path) -> int:
    return upkeep.loose_objects(root / ".git" / "objects")


def segments(root: Path) -> int:
    return KnowledgeBase(root).index.segments()


class HostileClone:
    """A clone of a KB whose repository tracks the planted modules, with a bare remote, and a
    caller's folder holding them too."""

    def __init__(self, tmp_path: Path) -> None:
        self.markers = tmp_path / "markers"
        self.markers.mkdir()
        work = tmp_path / "work"
        kb = KnowledgeBase(make_empty_kb(work))
        kb.save_observation(title="Refunds", content="refunds are counted once, as negative rows")
        kb.save_observation(title="Fiscal year", content="the fiscal year starts in February")
        plant(work, self.markers, "kb")
        commit_all(work, "a KB that ships Python files")
        self.remote = tmp_path / "remote.git"
        git(tmp_path, "clone", "-q", "--bare", str(work), str(self.remote))
        self.root = tmp_path / "clone"
        git(tmp_path, "clone", "-q", str(self.remote), str(self.root))
        self.caller = tmp_path / "caller"
        self.caller.mkdir()
        plant(self.caller, self.markers, "caller")
        self.env = dict(os.environ)

    def run(self, *args: str, server: str) -> subprocess.CompletedProcess[str]:
        env = {**self.env, "SLAYER_KB_SERVER": server, "SLAYER_KB_SERVER_IDLE": "120"}
        return subprocess.run([*program(), "--kb", str(self.root), *args], capture_output=True, text=True,
                              cwd=self.caller, env=env, timeout=180)

    def ok(self, *args: str, server: str) -> str:
        proc = self.run(*args, server=server)
        assert proc.returncode == 0, f"{args}: {proc.stderr}"
        return proc.stdout

    def stop_server(self) -> None:
        answer = relay.control(self.root, "status")
        if answer is None:
            return
        relay.control(self.root, "stop")
        eventually(lambda: not os.path.exists(f"/proc/{answer['pid']}"), "the server exiting")

    def background_done(self) -> None:
        assert upkeep.wait(self.root / ".slayer-kb", WAIT_SECONDS), "the background job did not finish"


@pytest.fixture
def clone(tmp_path: Path) -> Iterator[HostileClone]:
    found = HostileClone(tmp_path)
    try:
        yield found
    finally:
        if relay.SUPPORTED:
            found.stop_server()


def every_command_family(clone: HostileClone, server: str) -> None:
    """Search, save, get, update, forget, list, validate, log, review, sync; then a repack and an
    index compaction started in the background by a save, as they start in real use."""
    assert "Refunds" in clone.ok("search", "refunds", server=server)
    if server == "on":
        up = eventually(lambda: (s := relay.control(clone.root, "status")) and s.get("ready") and s, "a server")
        assert isinstance(up, dict)
        if os.path.isdir(f"/proc/{up['pid']}"):
            # isolated, out of the KB: the commands it runs later change folder, not its import path
            argv = Path(f"/proc/{up['pid']}/cmdline").read_bytes().split(b"\0")
            assert argv[1] in (b"-I", b"-P") and b"-c" not in argv
            assert os.readlink(f"/proc/{up['pid']}/cwd") == children.NEUTRAL_CWD
    saved = json.loads(clone.ok("--json", "save", "returns arrive a week late", "--title", "Returns", server=server))
    memory_id = saved["memory_id"]
    assert "returns arrive a week late" in clone.ok("get", memory_id, server=server)
    clone.ok("update", memory_id, "--title", "Late returns", server=server)
    clone.ok("forget", memory_id, server=server)
    assert "Fiscal year" in clone.ok("list", server=server)
    clone.ok("validate", server=server)
    clone.ok("log", memory_id, server=server)
    clone.ok("review", "origin/HEAD", "HEAD", server=server)
    clone.ok("sync", server=server)
    assert git(clone.remote, "rev-parse", "HEAD") == git(clone.root, "rev-parse", "HEAD")

    # A repack: due at the next commit, with loose objects enough.
    clone.background_done()
    blobs = clone.root.parent / "blobs"
    blobs.mkdir(exist_ok=True)
    for n in range(upkeep.LOOSE + 10):
        (blobs / f"{server}-{n}").write_text(f"loose object {server} {n}\n")
    git(clone.root, "hash-object", "-w", *(str(p) for p in blobs.iterdir()))
    (clone.root / ".slayer-kb" / upkeep.COUNTER).write_text(str(upkeep.EVERY - 1))
    clone.ok("save", f"a save that starts a repack ({server})", "--title", "Repack", server=server)
    clone.background_done()
    assert loose_objects(clone.root) < upkeep.LOOSE

    # An index compaction: segments of hand-made memories piled up, then a save. A server's
    # watcher would index a batch's files as they appear, in segments of any size, which may
    # leave no tier of COMPACT_AT: the save below starts it again.
    clone.stop_server()
    for batch in range(compaction.COMPACT_AT):
        for n in range(compaction.TINY + 4):
            (clone.root / "memories" / f"hand-{server}-{batch}-{n}.yaml").write_text(
                f"learning: hand batch {batch} note {n}\ncreated_at: '2026-01-01T00:00:00Z'\n", encoding="utf-8")
        commit_all(clone.root, f"batch {batch}")
        KnowledgeBase(clone.root).ensure_fresh()
    piled = segments(clone.root)
    clone.ok("save", f"a save that starts a compaction ({server})", "--title", "Compaction", server=server)
    clone.background_done()
    assert segments(clone.root) < piled


# The server on, as users run it, runs the first command in its process and the rest in the
# server, so it crosses both; the commands all run in their process with -m slow (or by default
# where there is no server to start).
@pytest.mark.parametrize("server", default_first(["on", "off"] if relay.SUPPORTED else ["off", "on"]))
def test_a_kb_and_the_callers_folder_never_run_their_python(clone: HostileClone, server: str) -> None:
    if server == "on" and not relay.SUPPORTED:
        pytest.skip("no server on this system")
    every_command_family(clone, server)
    assert sorted(p.name for p in clone.markers.iterdir()) == []


def test_a_child_is_isolated_and_finds_this_install(tmp_path: Path) -> None:
    """The command a child is started with imports this very install with nothing of the folder
    it runs in (here a folder that shadows the package and json) on its path."""
    markers = tmp_path / "markers"
    markers.mkdir()
    plant(tmp_path, markers, "cwd")
    argv, env = children.python_child("slayer_kb.store.upkeep")
    assert argv[1] in ("-I", "-P") and "-c" not in argv
    probe = [*argv[:-2], "-c", "import sys, slayer_kb; print(slayer_kb.__file__); print(sys.path)"]
    proc = subprocess.run(probe, capture_output=True, text=True, cwd=tmp_path, env=env, check=True)
    where, path = proc.stdout.splitlines()
    assert Path(where).resolve() == Path(relay.__file__).resolve().parent.parent / "__init__.py"
    assert "''" not in path and str(tmp_path) not in path
    assert list(markers.iterdir()) == []
    assert children.NEUTRAL_CWD == os.path.abspath(os.sep)
