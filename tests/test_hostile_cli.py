"""A stranger's pass over the command line with hostile arguments: ``--json`` as an option's
value, look-alike ids, invisible characters in keys, oversized hand-made files. Each case runs the
real program as a process and checks the exit code, both streams and what was committed."""

from __future__ import annotations

import pytest

from slayer_kb import KnowledgeBase
from testing import CliRunner, json_of


@pytest.mark.parametrize("args", [
    ("save", "a note", "--title", "--json", "--bogus"),
    ("search", "-e", "--json", "--bogus"),
    ("--author", "--json", "list", "--bogus"),
    ("search", "--bogus", "--", "--json"),
])  # fmt: skip
def test_json_as_an_options_value_is_no_json_flag(example_kb: KnowledgeBase, run_cli: CliRunner,
                                                    args: tuple[str, ...]) -> None:
    proc = run_cli("--kb", example_kb.root, *args)
    command = next(arg for arg in args if arg in ("save", "search", "list"))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith(f"Usage: slayer-kb {command} [OPTIONS]")
    assert proc.stderr.endswith("\nError: No such option '--bogus'.\n")


def test_json_as_a_titles_value_saves_that_title(example_kb: KnowledgeBase, run_cli: CliRunner) -> None:
    root = example_kb.root
    proc = run_cli("--kb", root, "save", "a note", "--title", "--json", check=True)
    assert proc.stdout.startswith('Memory saved: "--json" (manual)\n'), proc.stdout
    memory_id = proc.stdout.rsplit("(memory ", 1)[1].removesuffix(")\n")
    assert json_of(run_cli("--kb", root, "--json", "get", memory_id, check=True))["title"] == "--json"
