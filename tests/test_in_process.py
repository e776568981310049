"""The in-process runner (``invoke_cli``, testing/cli.py) against the process (``run_cli``): the
same runs give the same exit code, stdout and stderr, byte for byte, and leave the test's process
as they found it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.store.idtrailer import without_trailer
from testing import CliRunner, git

# What only reads: run by both runners on one copy of the example KB. One of each kind of
# output (text, JSON, an error with exit 1, a usage error, help, the version), each a process
# (0.3 s of CPU); test_server.py compares every command family with what this runner prints.
READS: list[tuple[str, ...]] = [
    ("get", "1"), ("--json", "get", "nope"), ("search", "refunds", "--limit", "3"),
    ("search", "-e", "shop.orders.amount", "--json"), ("list", "--limit", "5"), ("stats",), ("validate",),
    ("fmt", "--check", "--json"), ("get", "1", "--bogus"), ("nosuch-command",), ("--help",), ("--version",),
]  # fmt: skip
# What writes: run in order on each of two copies of one repository.
WRITES: list[tuple[tuple[str, ...], str | None]] = [
    (("save", "NULL means not returned", "-e", "shop.orders.is_returned"), None),
    (("save", "-", "--title", "Piped", "--json"), "Piped observation\n"),
    (("save", "JWT", "--title", "Auth", "--id", "auth-model"), None),
    (("update", "1", "--title", "Order amount"), None),
    (("forget", "3", "--soft", "--json"), None),
    (("restore", "3"), None),
    (("forget", "kb.paid-revenue"), None),
]  # fmt: skip


_SHA = re.compile(r"\b[0-9a-f]{40}\b")


def outcome(proc: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.slow  # every command twice, as a process and in process: 12 s (slow suite, .ci/run)
def test_in_process_runs_print_what_a_process_prints(
    run_cli: CliRunner, invoke_cli: CliRunner, example_kb: KnowledgeBase, tmp_path: Path
) -> None:
    kb = example_kb.root
    # Copies without the state folder, which a copy would find untrusted (and say so, once).
    reads, twin = tmp_path / "reads", tmp_path / "twin"
    for copy in (reads, twin):
        shutil.copytree(kb, copy, ignore=shutil.ignore_patterns(".slayer-kb"))
    for args in READS:
        assert outcome(invoke_cli("--kb", reads, *args)) == outcome(run_cli("--kb", reads, *args)), args
    # Found from the working folder, and from $SLAYER_KB, as a process finds it.
    where = outcome(run_cli("get", "2", cwd=reads / "memories"))
    assert where[0] == 0 and outcome(invoke_cli("get", "2", cwd=reads / "memories")) == where
    named = outcome(run_cli("stats", env={"SLAYER_KB": str(reads)}))
    assert named[0] == 0 and outcome(invoke_cli("stats", env={"SLAYER_KB": str(reads)})) == named
    for args, stdin in WRITES:
        here, there = invoke_cli("--kb", kb, *args, input=stdin), run_cli("--kb", twin, *args, input=stdin)
        # The two repositories' commits differ (their times), and their folders, which advice
        # typed from elsewhere names (--kb DIR): each reply's own as "<sha>" and "<kb>".
        assert [_SHA.sub("<sha>", text).replace(str(kb), "<kb>") for text in map(str, outcome(here))] == [
            _SHA.sub("<sha>", text).replace(str(twin), "<kb>") for text in map(str, outcome(there))], args
    # The trailers name each repository's own parents and trees.
    assert without_trailer(git(kb, "log", "--format=%s%n%b")) == without_trailer(git(twin, "log", "--format=%s%n%b"))
    assert sorted(p.name for p in (kb / "memories").iterdir()) == sorted(p.name for p in (twin / "memories").iterdir())


def test_in_process_runs_leave_this_process_as_it_was(invoke_cli: CliRunner, example_kb: KnowledgeBase) -> None:
    root = example_kb.root

    def state() -> tuple[dict[str, str], str, int, Any]:
        umask = os.umask(0o022)
        os.umask(umask)
        return dict(os.environ), os.getcwd(), umask, (sys.stdin, sys.stdout, sys.stderr, sys.__stdout__)

    before = state()
    invoke_cli("stats", cwd=root / "memories", env={"SLAYER_KB_AUTHOR": "A <a@example.com>"}, check=True)
    assert invoke_cli("--kb", root, "get", "nope").returncode == 1
    assert state() == before
