"""Shared fixtures: real git repositories in tmp_path and real subprocess runs of the CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_KB = ROOT / "kb"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
}


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    # Tests never read the developer's own git configuration or SLAYER_KB.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("SLAYER_KB", raising=False)
    monkeypatch.delenv("SLAYER_KB_AUTHOR", raising=False)
    # No test starts a warm server by accident (docs/server.md): commands relay to a server a
    # test started itself (``slayer-kb watch``), and the server tests turn ``on`` explicitly.
    monkeypatch.setenv("SLAYER_KB_SERVER", "manual")
    monkeypatch.delenv("SLAYER_KB_SERVER_IDLE", raising=False)
    monkeypatch.delenv("SLAYER_KB_SERVER_SOCKET", raising=False)


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return proc.stdout


def fsck(root: Path) -> subprocess.CompletedProcess[str]:
    """``git fsck --strict`` once slayer-kb's background repack (upkeep.py) has finished: fsck
    reports loose objects that a repack packs away while it reads them."""
    from slayer_kb import upkeep

    assert upkeep.wait(root / ".slayer-kb", 60), "the background repack did not finish"
    return subprocess.run(["git", "fsck", "--strict"], cwd=root, capture_output=True, text=True)


def commit_all(repo: Path, message: str = "test setup") -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def empty_kb(tmp_path: Path) -> KnowledgeBase:
    """A new KB (``slayer-kb init``) at the root of a fresh repository."""
    return KnowledgeBase.init(tmp_path / "kb")


def make_catalog_kb(root: Path) -> Path:
    """A committed KB at ``root`` with the test catalog of tests/catalogfixture.py (priority: shop)."""
    from catalogfixture import write_test_catalog

    root.mkdir()
    git(root, "init", "-q")
    write_test_catalog(root, priority=["shop"])
    (root / "memories").mkdir()
    (root / ".gitignore").write_text(".slayer-kb/\n")
    commit_all(root)
    return root


@pytest.fixture
def catalog_kb(tmp_path: Path) -> KnowledgeBase:
    return KnowledgeBase(make_catalog_kb(tmp_path / "kb"))


@pytest.fixture
def example_kb(tmp_path: Path) -> KnowledgeBase:
    """A copy of the shipped example KB in kb/, committed to a fresh repository."""
    root = tmp_path / "kb"
    shutil.copytree(EXAMPLE_KB, root, ignore=shutil.ignore_patterns(".slayer-kb"))
    git(root, "init", "-q")
    commit_all(root)
    return KnowledgeBase(root)


CliRunner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run_cli() -> CliRunner:
    """Run ``slayer-kb`` as a real subprocess: ``run_cli("--kb", dir, "get", "1", input=...)``."""

    def run(
        *args: str | Path,
        input: str | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        check: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        full_env = dict(os.environ)
        full_env.update(env or {})
        proc = subprocess.run(
            [sys.executable, "-m", "slayer_kb", *map(str, args)],
            input=input,
            capture_output=True,
            text=True,
            cwd=cwd,
            env=full_env,
            timeout=120,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"slayer-kb {args} exited {proc.returncode}: {proc.stderr}")
        return proc

    return run


def json_of(proc: subprocess.CompletedProcess[str]) -> dict:
    return json.loads(proc.stdout)


class Watcher:
    """A running ``slayer-kb watch`` whose stderr is collected on a thread (so it never blocks)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "slayer_kb", "--kb", str(root), "watch"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for_line(self, prefix: str, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(line.startswith(prefix) for line in self.lines):
                return
            assert self.proc.poll() is None, f"watcher died: {self.lines}"
            time.sleep(0.02)
        raise AssertionError(f"no line starting with {prefix!r} in {self.lines}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=5)


@pytest.fixture
def watcher(example_kb: KnowledgeBase) -> Iterator[Watcher]:
    # Build the index first so the watcher's initial sync is incremental and quick.
    example_kb.ensure_fresh()
    example_kb.close()
    w = Watcher(example_kb.root)
    try:
        w.wait_for_line("Watching")
        yield w
    finally:
        w.stop()
