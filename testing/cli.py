"""Running slayer-kb: the CLI as a real process or in this process, and ``slayer-kb watch`` in
the background."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from click import formatting
from click.testing import CliRunner as ClickRunner

from .wait import WAIT_SECONDS, eventually

CliRunner = Callable[..., subprocess.CompletedProcess[str]]


def _checked(proc: subprocess.CompletedProcess[str], check: bool) -> subprocess.CompletedProcess[str]:
    if check and proc.returncode != 0:
        raise AssertionError(f"{proc.args} exited {proc.returncode}: {proc.stderr}")
    return proc


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
        return _checked(proc, check)

    return run


class _AsAProcess(ClickRunner):
    """click's test runner with the terminal a process whose output is piped has: none."""

    @contextlib.contextmanager
    def isolation(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        saved_stdout = sys.__stdout__
        with super().isolation(*args, **kwargs) as streams:
            # click's runner forces 80 columns; a process finds no terminal and takes the default.
            formatting.FORCED_WIDTH = None
            sys.__stdout__ = None  # type: ignore[misc]  # so shutil finds no terminal size either
            try:
                yield streams
            finally:
                sys.__stdout__ = saved_stdout  # type: ignore[misc]


def in_process_runner() -> CliRunner:
    """Run ``slayer-kb`` in this process through click's test runner, as ``cli_runner`` runs it
    as a process, with the same arguments, and the same exit code, stdout and stderr as a result:
    a fraction of a second less a run (no interpreter start, no imports).

    What a process would not share with the next one is put back after each run: os.environ,
    the working folder, the umask, the standard streams. The warm server is never asked (the
    relay is ``slayer_kb.entry``'s, before the CLI), and the KB a command opens is closed with it.
    What a process loads once and keeps is shared, as a warm server shares it: the word
    embedder and the sentence encoder stay loaded, each asked at its use whether the environment
    turns it off (``SLAYER_KB_NO_MEANING``, ``SLAYER_KB_NO_ENCODER``), as a server's command is.
    """

    def run(
        *args: str | Path,
        input: str | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        check: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        from slayer_kb.cli import cli

        argv = [str(arg) for arg in args]
        saved_env = dict(os.environ)
        saved_cwd = os.getcwd()
        saved_umask = os.umask(0o022)
        os.umask(saved_umask)
        try:
            if cwd is not None:
                os.chdir(cwd)
            result = _AsAProcess().invoke(cli, argv, input=input, env=env, prog_name="slayer-kb")
        finally:
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
            os.umask(saved_umask)
        stderr = result.stderr
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            # What the interpreter prints for an exception nothing caught, before it exits 1.
            stderr += "".join(traceback.format_exception(result.exception))
        proc = subprocess.CompletedProcess(["slayer-kb", *argv], result.exit_code, result.stdout, stderr)
        return _checked(proc, check)

    return run


def in_the_kb(runner: CliRunner) -> CliRunner:
    """``runner``, run from the folder ``--kb`` names (when no ``cwd`` is given), as a user types
    there: the steps an error prints then name the KB's files from there, with no ``--kb`` or ``cd``
    (``problems.command``), and work as written."""

    def run(*args: str | Path, cwd: Path | None = None, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if cwd is None and len(args) > 1 and args[0] == "--kb":
            cwd = Path(args[1])
        return runner(*args, cwd=cwd, **kwargs)

    return run


BLOCKED = "is blocked by the test"


def blocker(folder: Path, names: tuple[str, ...] = ("click", "whoosh")) -> Path:
    """A folder for PYTHONPATH under which a process cannot run a command itself: importing
    click or Whoosh raises ImportError (``BLOCKED``). A command relayed to a warm server needs
    neither (test_relay checks the client's imports), so one that succeeds under it was answered
    by the server; one that opens no index (``get``) still needs click to run here. With ``names``
    ("whoosh", "numpy"): a command run here that must not open the index."""
    for name in names:
        (folder / name).mkdir(parents=True)
        (folder / name / "__init__.py").write_text(f"raise ImportError({f'{name} {BLOCKED}'!r})\n")
    return folder


def json_of(proc: subprocess.CompletedProcess[str]) -> dict:
    return json.loads(proc.stdout)


def save_refusal(invoke_cli: CliRunner, root: Path, query: dict[str, Any]) -> str:
    """The last line ``save --query`` prints of ``query``, which it must refuse: what a user reads."""
    proc = invoke_cli("--kb", root, "save", "a query", "--query", json.dumps(query))
    assert proc.returncode != 0, f"saved: {proc.stdout}"
    return proc.stderr.strip().splitlines()[-1]


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

    def wait_for_line(self, prefix: str, timeout: float = WAIT_SECONDS) -> None:
        def seen() -> bool:
            assert self.proc.poll() is None, f"watcher died: {self.lines}"
            return any(line.startswith(prefix) for line in self.lines)

        try:
            eventually(seen, f"a line starting with {prefix!r}", timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the watcher's lines: {self.lines}") from None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=60)
