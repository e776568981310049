"""The team flows a stop is about, and its printed steps run as a person pastes them."""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path

from .cli import CliRunner
from .repos import make_team_after, unlike


def given_again(tmp_path: Path, invoke_cli: CliRunner, *, by_rename: bool = True, also: tuple[tuple[str, str, str], ...] = (),
                folder: str = "", clones: int = 2) -> list[Path]:
    """A team (``make_team``) whose clones all hold kb.x and kb.y (``unlike`` texts "xray" and
    "yank", on shop.orders) and ``also`` (each a text's tag, its id and its entity, a link
    ``memory:...`` among them); then clone a forgets kb.y and gives the id to another memory: renames
    kb.x to it (``by_rename``), or saves a new text ("zulu") there. Made once a process for each
    choice and copied (``make_team_after``). The clones' KB folders."""

    def give(kbs: list[Path]) -> None:
        a = kbs[0]
        for tag, memory_id, entity in (("xray", "kb.x", "shop.orders"), ("yank", "kb.y", "shop.orders"), *also):
            invoke_cli("--kb", a, "save", unlike(tag), "--id", memory_id, "-e", entity, check=True)
        for clone in kbs:
            invoke_cli("--kb", clone, "sync", check=True)
        invoke_cli("--kb", a, "forget", "kb.y", check=True)
        if by_rename:
            invoke_cli("--kb", a, "rename", "kb.x", "kb.y", check=True)
        else:
            invoke_cli("--kb", a, "save", unlike("zulu"), "--id", "kb.y", "-e", "shop.orders", check=True)

    _bare, kbs = make_team_after(tmp_path, f"given-again {by_rename} {also}", give, clones=clones, folder=folder)
    return kbs


def _first(step: str, other: str) -> str:
    return step


def keeping(keep: bool) -> Callable[[str, str], str]:
    """A ``pick`` for ``typed_steps``: of a step's two commands, the one that keeps a memory (a
    ``git add`` of its file, or a chain that moves one aside with ``mv``) when ``keep``, else the
    one that lets it go."""
    def pick(step: str, other: str) -> str:
        return step if (" mv " in step or step.startswith("git add ")) == keep else other
    return pick


def typed_steps(invoke_cli: CliRunner, message: str, pick: Callable[[str, str], str] = _first) -> list[str]:
    """The steps of a stop's or refusal's ``message`` (after "To merge by hand: "), run as printed:
    git's, ``test`` and ``mv`` in a shell, slayer-kb's through ``invoke_cli``, each in the folder
    the ``cd`` step named. A step's command is its words before " (" or " to "; where it offers
    another ("X to keep it (or Y to let it go)"), ``pick(X, Y)`` is run (X unless told). What each
    slayer-kb step printed."""
    said, here = [], Path()
    for step in re.split(r"; (?![^(]*\))", message.split(" To merge by hand: ", 1)[1].strip().removesuffix(".")):
        typed = _command(step)
        if " (or " in step:
            typed = pick(typed, _command(step.split(" (or ", 1)[1]))
        if typed.startswith("cd "):
            here = Path(typed[3:])
        elif typed.startswith(("git ", "test ", "mv ")):
            subprocess.run(typed, shell=True, cwd=here, check=True, capture_output=True)
        else:
            assert typed.startswith("slayer-kb "), f"no command to run in {step!r}"
            proc = invoke_cli(*shlex.split(typed)[1:], cwd=here)
            said.append(proc.stdout + proc.stderr)
    return said


def _command(step: str) -> str:
    """A step's command: its words before what they are for ("git rm X to keep it forgotten")."""
    return step.split(" (")[0].split(" to ")[0]
