"""Replaying a documentation page's console sessions as a new user types them: the ```console
blocks after a ``<!-- replayed -->`` comment, in order, in one folder, each ``$ `` line run and
what it prints compared with the lines the page shows under it."""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .cli import CliRunner

MARKER = "<!-- replayed -->"
_BLOCK = re.compile(re.escape(MARKER) + r"\s*```console\n(.*?)^```", re.S | re.M)
# Commit ids differ on every run (they hash the commit's time): any one stands for any other.
_SHA = re.compile(r"\b[0-9a-f]{7,40}\b")


@dataclass(frozen=True)
class Step:
    command: str
    shown: str  # what the page prints under the command


@dataclass(frozen=True)
class Mismatch:
    command: str
    shown: str
    printed: str

    def __str__(self) -> str:
        return f"$ {self.command}\n--- the page shows:\n{self.shown}\n--- it printed:\n{self.printed}"


def steps(page: str) -> list[Step]:
    """The commands of the page's replayed console blocks, with the output shown for each."""
    found = []
    for block in _BLOCK.findall(page):
        for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, _, shown = chunk.partition("\n")
            found.append(Step(command, shown.rstrip("\n")))
    return found


def replay(page: str, folder: Path, invoke_cli: CliRunner, paths: dict[str, str] | None = None) -> list[Mismatch]:
    """Run the page's replayed steps in ``folder`` (``cd`` moves, ``&&`` chains, ``git`` as a
    process, ``slayer-kb`` through ``invoke_cli``), a path the page names replaced as ``paths``
    says (``/tmp/`` by a test's folder), and return every step whose output differs."""
    where = folder
    mismatches = []
    for step in steps(page):
        command, shown = step.command, step.shown
        for old, new in (paths or {}).items():
            command, shown = command.replace(old, new), shown.replace(old, new)
        printed = []
        words = shlex.split(command)
        while words:
            end = words.index("&&") if "&&" in words else len(words)
            (program, *args), words = words[:end], words[end + 1:]
            if program == "cd":
                where = (where / args[0]).resolve()
                continue
            if program == "slayer-kb":
                # As a process with no terminal prints (no COLUMNS: pytest's workers may set it).
                proc = invoke_cli(*args, cwd=where, env={"COLUMNS": None, "LINES": None})
            else:
                proc = subprocess.run([program, *args], cwd=where, capture_output=True, text=True)
            printed.append(proc.stdout + proc.stderr)
            if proc.returncode:
                break
        output = "".join(printed).rstrip("\n")
        if _SHA.sub("<sha>", output) != _SHA.sub("<sha>", shown):
            mismatches.append(Mismatch(step.command, shown, output))
    return mismatches
