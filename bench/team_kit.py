"""What both team scenarios (bench/team.py, bench/team_branches.py) stand on: clones of one bare
remote, the ``slayer-kb`` CLI run as a subprocess with its warm server on, a person's way out of a
sync conflict, and reading what the remote holds.

slayer-kb is a black box here: every memory operation goes through the CLI, so the same bench
measures today's code and whatever replaces its id allocation and sync.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testing.catalog import write_test_catalog

from .corpus import GIT_IDENTITY

# A unique marker in every memory an agent saves: "mk-a03-0012" is agent 3's twelfth save.
MARKER = re.compile(r"\bmk-a\d{2}-\d{4}\b")
# No CLI call may hang the bench; a sync under heavy load took 41 s (issue 28), this is far above.
CALL_TIMEOUT = 300.0
# Every agent's server lives beyond the gaps between its commands and exits soon after the bench.
SERVER_IDLE = 120
# A person resolving a conflict gives up rather than replay more commits than an agent makes.
MAX_REPLAYED = 500
ENTITIES = ("shop.orders.amount", "shop.orders.status", "shop.orders.qty", "shop.customers.city",
            "shop.refunds.amount", "wh.orders.channel", "wh.warehouses.city")


@contextlib.contextmanager
def workspace(keep: Path | None, prefix: str) -> Iterator[Path]:
    """The folder a bench works in: ``keep`` (``--keep``), made if missing and kept, or a temporary
    one removed after."""
    work = keep or Path(tempfile.mkdtemp(prefix=prefix))
    work.mkdir(parents=True, exist_ok=True)
    try:
        yield work
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def marker(agent: int, n: int) -> str:
    return f"mk-a{agent:02d}-{n:04d}"


@dataclass
class Reply:
    """One CLI run: exit code, the ``--json`` document (an ``error`` key on failure), time taken."""

    rc: int
    out: dict[str, Any]
    seconds: float

    @property
    def message(self) -> str:
        error = self.out.get("error")
        return str(error.get("message", "")) if isinstance(error, dict) else ""

    @property
    def error_type(self) -> str:
        error = self.out.get("error")
        return str(error.get("type", "")) if isinstance(error, dict) else ""


def cli_env(author: str) -> dict[str, str]:
    """The environment of an agent's CLI runs: the server on (relayed), its own git identity."""
    name, email = author, f"{author}@bench.invalid"
    env = {**os.environ, **GIT_IDENTITY, "SLAYER_KB_SERVER": "on", "SLAYER_KB_SERVER_IDLE": str(SERVER_IDLE),
           "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name,
           "GIT_COMMITTER_EMAIL": email}
    for key in ("SLAYER_KB", "SLAYER_KB_AUTHOR", "SLAYER_KB_SERVER_SOCKET"):
        env.pop(key, None)
    return env


def cli(clone: Path, *args: str, env: dict[str, str]) -> Reply:
    """``slayer-kb --kb CLONE --json ARGS`` as a real process; a hang counts as a failure."""
    began = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(clone), "--json", *args],
                              capture_output=True, text=True, env=env, timeout=CALL_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return Reply(-1, {"error": {"type": "timeout", "message": f"no answer in {CALL_TIMEOUT:.0f} s"}},
                     time.perf_counter() - began)
    try:
        out = json.loads(proc.stdout) if proc.stdout.strip() else {}
    except json.JSONDecodeError:
        out = {"error": {"type": "output", "message": (proc.stdout + proc.stderr)[-500:]}}
    if proc.returncode != 0 and not out:
        out = {"error": {"type": "exit", "message": proc.stderr.strip()[-500:]}}
    return Reply(proc.returncode, out, time.perf_counter() - began)


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=check,
                          env={**os.environ, **GIT_IDENTITY}, timeout=CALL_TIMEOUT)


def make_remote(work: Path, names: list[str]) -> tuple[Path, list[Path]]:
    """A bare remote whose ``main`` holds a KB with the test catalog and no memory, and one clone
    of it per name (``work/NAME``)."""
    work.mkdir(parents=True, exist_ok=True)
    seed, bare = work / "seed", work / "remote.git"
    seed.mkdir()
    git(seed, "init", "-q", "-b", "main")
    write_test_catalog(seed, priority=["shop"])
    (seed / ".gitignore").write_text(".slayer-kb/\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "kb: the team's catalog")
    git(work, "init", "-q", "--bare", "-b", "main", str(bare))
    git(seed, "push", "-q", str(bare), "main")
    clones = []
    for name in names:
        git(work, "clone", "-q", str(bare), name)
        clones.append(work / name)
    return bare, clones


def stop_servers(clones: list[Path]) -> None:
    env = cli_env("bench")
    for clone in clones:
        cli(clone, "server", "stop", env=env)


@dataclass
class ByHand:
    """What a person did about a conflict sync could not resolve: which ids ``renumber`` moved
    first, how often ``slayer-kb rebase`` stopped on a conflict, and which files they took from
    main (dropping this clone's side); ``ok`` is false when they gave up (the rebase aborted)."""

    renumbered: dict[str, str] = field(default_factory=dict)
    stops: int = 0
    taken_from_main: list[str] = field(default_factory=list)
    ok: bool = True


def resolve_by_hand(clone: Path, env: dict[str, str], message: str) -> ByHand:
    """Follow the steps of sync's conflict ``message`` as a person would (docs/teams.md): the
    fetch, a ``renumber`` when it names one, ``slayer-kb rebase UPSTREAM``; at each stop take the
    upstream's side of every conflicting file (which loses no memory: the agent's edit or forget
    of its own memory gives way), ``slayer-kb validate``, ``slayer-kb rebase --continue``. The
    next ``sync`` then pushes."""
    done = ByHand()
    reply = None
    for step in merge_steps(message):
        words = step.split()
        if words[:2] == ["git", "fetch"]:
            git(clone, "fetch", "-q", *words[2:], check=False)
        elif words[:2] == ["slayer-kb", "renumber"]:
            done.renumbered = dict(cli(clone, *words[1:], env=env).out.get("renumbered") or {})
        elif words[:2] == ["slayer-kb", "rebase"]:
            reply = cli(clone, *words[1:], env=env)
            break
    for _stop in range(MAX_REPLAYED):
        if reply is None or reply.error_type != "conflict" or not rebasing(clone):
            break
        done.stops += 1
        unmerged = git(clone, "diff", "--name-only", "--diff-filter=U").stdout.split()
        for path in unmerged:  # in a rebase "ours" is the upstream the commits are replayed on
            if git(clone, "cat-file", "-e", f"HEAD:{path}", check=False).returncode == 0:
                git(clone, "checkout", "--ours", "--", path)
                git(clone, "add", "--", path)
            else:
                git(clone, "rm", "-q", "--", path)
        done.taken_from_main += unmerged
        if cli(clone, "validate", env=env).rc != 0:
            break
        reply = cli(clone, "rebase", "--continue", env=env)
    if reply is not None and reply.rc == 0:
        return done
    if rebasing(clone):
        cli(clone, "rebase", "--abort", env=env)
    done.ok = False
    return done


def merge_steps(message: str) -> list[str]:
    """The commands of a conflict message's "To merge by hand: a; b (why); c." part, in order,
    without their explanations."""
    steps = message.partition("To merge by hand: ")[2].removesuffix(".")
    return [re.sub(r" \(.*\)$", "", step) for step in steps.split("; ") if step]


def rebasing(clone: Path) -> bool:
    return any((clone / git(clone, "rev-parse", "--git-path", name).stdout.strip()).exists()
               for name in ("rebase-merge", "rebase-apply"))


def conflict_files(message: str) -> list[str]:
    """The files a sync conflict message names (``memories/27.yaml``, ``sessions/x.yaml``)."""
    return sorted(set(re.findall(r"(?:[^\s,()]*/)?(?:memories|sessions)/[^\s,()]+\.yaml", message)))


def memories_at(repo: Path, ref: str = "main") -> dict[str, str]:
    """Every memory file's text at ``ref`` of ``repo`` (a bare remote or a clone), by id."""
    names = git(repo, "ls-tree", "-r", "--name-only", ref, "--", "memories/").stdout.split()
    texts = {}
    for name in names:
        if name.endswith(".yaml"):
            texts[Path(name).stem] = git(repo, "show", f"{ref}:{name}").stdout
    return texts


def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (nearest rank) of ``values``, None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[rank]
