"""Running slayer-kb as real processes: the CLI, and ``slayer-kb watch`` in the background."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

CliRunner = Callable[..., subprocess.CompletedProcess[str]]


def cli_runner() -> CliRunner:
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
