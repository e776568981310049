"""The commands slayer-kb prints for a memory or a folder, pasted into a shell as they are, run
what they name: an id such as ``x;y`` or ``1[0-9]`` (both valid ids) and a folder with a space
are quoted (``problems.words``). Unquoted, ``x;y`` ran ``slayer-kb restore x`` and then ``y``, and
``1[0-9]`` named whichever file ``15`` the shell found."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.problems import shell_word
from testing import CliRunner, make_team
from testing.shell import as_pasted, printed_commands

# Every command typed in the clone's folder, as a user would (conftest's invoke_cli).
pytestmark = pytest.mark.typed_in_the_kb


def test_commands_printed_for_an_id_run_that_id_when_pasted(catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = catalog_kb.root
    for memory_id in ("x;y", "1[0-9]"):
        invoke_cli("--kb", root, "save", f"Memory {memory_id}", "-e", "orders.amount", "--id", memory_id, check=True)
    (root / "15").write_text("")  # what a shell expands 1[0-9] to
    said = [
        # A soft-deleted memory: how to bring it back.
        invoke_cli("--kb", root, "forget", "--soft", "x;y", check=True) and invoke_cli("--kb", root, "get", "x;y"),
        # A revision that does not hold the memory: where to find those that do.
        invoke_cli("--kb", root, "show", "1[0-9]", "--rev", "HEAD~2"),
        # No such memory to edit: how to make it.
        invoke_cli("--kb", root, "edit", "x;z"),
        # An empty entity would unlink them all: how to do that on purpose.
        invoke_cli("--kb", root, "update", "x;y", "-e", " "),
    ]
    (root / "memories" / "1[0-9].yaml").write_text("learning: [broken\n")
    # A file broken by hand: how to repair it, read and forgotten softly.
    said += [invoke_cli("--kb", root, "get", "1[0-9]"), invoke_cli("--kb", root, "forget", "--soft", "1[0-9]")]
    assert [proc.returncode for proc in said] == [1, 1, 1, 1, 1, 1]
    # The error's own advice (a usage error's usage text, with its '--help', comes before it).
    commands = [command for proc in said for command in printed_commands(proc.stderr.split("\n\n")[-1])]
    assert as_pasted(commands, root) == [[["slayer-kb", *words]] for words in (
        ["restore", "x;y"],
        ["log", "1[0-9]"],
        ["save", "...", "--id", "x;z"],
        ["edit", "x;y"],
        ["validate"], ["edit", "1[0-9]"],
        ["edit", "1[0-9]"], ["restore", "1[0-9]", "--rev", "REV"], ["log", "1[0-9]"], ["forget", "1[0-9]"],
    )]
    # Run as the shell read them, they do what they say.
    restore, log = (as_pasted([command], root)[0][0][1:] for command in commands[:2])
    assert invoke_cli("--kb", root, *restore, check=True).stdout == "Restored memory x;y\n"
    assert "memory: save 1[0-9]" in invoke_cli("--kb", root, *log, check=True).stdout


def test_init_printed_for_a_folder_with_a_space_makes_that_folder(tmp_path: Path, invoke_cli: CliRunner) -> None:
    missing = invoke_cli("--kb", "team kb", "list", cwd=tmp_path)
    assert missing.returncode == 1
    [command] = printed_commands(missing.stderr)
    [[init]] = as_pasted([command], tmp_path)
    assert init == ["slayer-kb", "init", str(tmp_path / "team kb")]
    invoke_cli(*init[1:], cwd=tmp_path, check=True)
    assert (tmp_path / "team kb" / "memories").is_dir()


def test_a_conflicts_git_steps_name_the_memory_file_as_one_word(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Two edits of memory x;y: the steps said 'git add memories/x;y.yaml', which a shell runs as
    'git add memories/x' and then 'y.yaml'."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "Costs are in cents", "-e", "shop.orders.cost", "--id", "x;y", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    for clone in (a, b):
        invoke_cli("--kb", clone, "update", "x;y", "--content", f"Costs are in cents ({clone.name})", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    stopped = invoke_cli("--kb", b, "sync")
    assert stopped.returncode == 1
    step = "git add " + stopped.stderr.split("; git add ", 1)[1].split("; slayer-kb validate", 1)[0]
    assert as_pasted([step], b) == [[["git", "add", "memories/x;y.yaml"]]]


def test_a_word_holding_bytes_or_controls_is_written_as_sh_reads_it() -> None:
    """Such a word was quoted as bash's $'k\\xffb', which sh (dash: agents run advice through
    'sh -c') read as $, k, backslash...: it is printf's output now, '-', '%', a quote and a
    backslash kept. One ending in a line break, which a command substitution drops, keeps bash's
    form: the break itself, quoted, would be shown as the text \\x0a on a one-line output."""
    words = [os.fsdecode(b"k\xffb"), "-a\tb%s'c\\d1", "x\n::error::forged"]
    for shell in ("sh", "dash", "bash"):
        pasted = subprocess.run([shell, "-c", "printf '%s\\0' " + " ".join(map(shell_word, words))],
                                capture_output=True, check=True).stdout
        assert pasted.split(b"\0")[:-1] == [os.fsencode(word) for word in words], shell
    assert shell_word("k\xe9\n") == "$'k\xe9\\x0a'"


def test_advice_naming_a_kb_whose_name_ends_in_a_line_break_pastes_in_bash(tmp_path: Path,
                                                                            invoke_cli: CliRunner) -> None:
    """validate prints each problem on one line, its advice with it: a trailing line break
    quoted as itself came out as the text \\x0a, which named another folder in every shell."""
    root = tmp_path / "k\n"
    invoke_cli("init", root, check=True)
    (root / "memories" / "9.yaml").write_text("learning: x\nentities: [nope.nothing]\n")
    proc = invoke_cli("--kb", root, "validate", cwd=tmp_path)
    [line] = [line for line in proc.stdout.splitlines() if "9.yaml:2:" in line]
    assert "(correct it with 'slayer-kb --kb $'k\\x0a' edit 9', or, " in line
    assert as_pasted(printed_commands(line), tmp_path, shell="bash") == [
        [["slayer-kb", "--kb", "k\n", "edit", "9"]], [["slayer-kb", "--kb", "k\n", "prune"]]]
