"""Round seven of the hostile pass: where ``init`` may make a knowledge base. Inside a
repository's ``.git`` it made a second repository in git's own folder (after which ``git clone``
of the person's repository failed); inside another KB's ``memories/``, ``sessions/`` or state
folder it committed files there (a state folder git tracks is then set aside by every command,
with advice saying slayer-kb never commits there). Each case runs ``init`` in this process and
checks the exit code, both streams, and that nothing was made or committed."""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import slayer_kb.kb as kb_module
from slayer_kb import KnowledgeBase
from testing import CliRunner, git, json_of


def test_init_refuses_git_s_folder_and_another_kb_s_own_folders(empty_kb: KnowledgeBase,
                                                               invoke_cli: CliRunner) -> None:
    root = empty_kb.root
    empty_kb.search("anything")  # its state folder made, as after any command
    head = git(root, "rev-parse", "HEAD")
    there = {name: sorted(p.name for p in (root / name).iterdir()) for name in (".git", "memories", ".slayer-kb")}
    outside = "Give that knowledge base's folder, or one outside it."
    cases = {
        root / ".git": f"{root}/.git is git's own folder of the repository at {root}, not a place for files: a "
                       f"knowledge base there would be git's data (and a repository made in it breaks 'git clone'). "
                       f"Give a folder in the working tree, e.g. {root}/kb.",
        root / ".git" / "kb": f"{root}/.git/kb is inside git's own folder ({root}/.git) of the repository at {root}, "
                              f"not a place for files: a knowledge base there would be git's data (and a repository "
                              f"made in it breaks 'git clone'). Give a folder in the working tree, e.g. {root}/kb.",
        root / "memories": f"{root}/memories is the memories/ folder of the knowledge base at {root}: a knowledge "
                           f"base there would mix its files with that one's. {outside}",
        root / "memories" / "kb": f"{root}/memories/kb is inside the memories/ folder of the knowledge base at "
                                  f"{root}: a knowledge base there would mix its files with that one's. {outside}",
        root / ".slayer-kb" / "kb": f"{root}/.slayer-kb/kb is inside the .slayer-kb/ folder of the knowledge base "
                                    f"at {root}: a knowledge base there would mix its files with that one's. "
                                    f"{outside}",
        root / "sessions" / "kb": f"{root}/sessions/kb is inside the sessions/ folder of the knowledge base at "
                                  f"{root}: a knowledge base there would mix its files with that one's. {outside}",
        # Its catalog's folder, or any other of its folders, made or not.
        root / "models": f"{root}/models is inside the knowledge base at {root}: a knowledge base there would mix "
                         f"its files with that one's. {outside}",
        root / "docs" / "kb": f"{root}/docs/kb is inside the knowledge base at {root}: a knowledge base there would "
                              f"mix its files with that one's. {outside}",
    }
    (root / "models").mkdir()
    for folder, message in cases.items():
        proc = invoke_cli("--json", "init", folder)
        assert (proc.returncode, json_of(proc), proc.stderr) == (
            1, {"error": {"type": "invalid_input", "message": message}}, f"Error: {message}\n"), folder
    # Named as the KB to use: `--kb kb/memories save` committed memories/memories/1.yaml, and a
    # search there answered "No matches." from a state folder made inside memories/.
    for folder, kind in ((root / "memories", "not_found"), (root / ".slayer-kb", "not_found"), (root / ".git", "store")):
        message = cases[folder] if folder.name != ".slayer-kb" else (
            f"{folder} is the .slayer-kb/ folder of the knowledge base at {root}: a knowledge base there would mix "
            f"its files with that one's. {outside}")
        for command in (("search", "x"), ("save", "wrong place", "--title", "T")):
            proc = invoke_cli("--json", "--kb", folder, *command)
            assert (proc.returncode, json_of(proc), proc.stderr) == (
                1, {"error": {"type": kind, "message": message}}, f"Error: {message}\n"), (folder, command)
    assert git(root, "rev-parse", "HEAD") == head and git(root, "status", "--porcelain", "--ignored") == (
        "!! .slayer-kb/\n")
    assert {name: sorted(p.name for p in (root / name).iterdir()) for name in there} == there
    assert not (root / "sessions").exists() and not (root / "docs").exists() and not any((root / "models").iterdir())
    # A folder merely named like one, in no KB, is still a place for a KB.
    elsewhere = Path(root.parent / "notes" / "memories")
    proc = invoke_cli("init", elsewhere)
    assert (proc.returncode, proc.stdout) == (0, f"Initialised knowledge base in {elsewhere}\n"), proc.stderr


def test_init_in_a_folder_that_only_looks_like_a_kb(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A folder holding memories/ is a knowledge base only by init's definition (a commit holding
    memories/ with .slayer-kb/ in a committed .gitignore, or the state folder a command made):
    init refused a KB inside an agent project with notes in memories/, or below an unrelated
    memories/ with no repository, as inside another KB. A clone of a KB, with no state folder
    yet, is still one."""
    project = tmp_path / "agentproj"
    (project / "memories").mkdir(parents=True)
    (project / "memories" / "notes.md").write_text("# notes\n")
    for args in (("init", "-q"), ("add", "."), ("commit", "-q", "-m", "notes")):
        git(project, *args)
    kb = project / "kb"
    made = invoke_cli("init", "kb", cwd=project)
    assert (made.returncode, made.stdout, made.stderr) == (0, f"Initialised knowledge base in {kb}\n", "")
    for folder, cwd in (("kb", project), (".", kb)):  # run again there, and from inside it
        proc = invoke_cli("init", folder, cwd=cwd)
        assert (proc.returncode, proc.stdout, proc.stderr) == (
            0, f"{kb} is already a knowledge base: nothing to do.\n", ""), cwd
    assert (git(project, "ls-files"), git(project, "status", "--porcelain")) == (
        "kb/.gitignore\nkb/memories/.gitkeep\nmemories/notes.md\n", "")
    # A look-alike inside a KB hides it not.
    (kb / "docs" / "memories").mkdir(parents=True)
    proc = invoke_cli("init", kb / "docs" / "new")
    assert (proc.returncode, proc.stderr) == (1, (
        f"Error: {kb}/docs/new is inside the knowledge base at {kb}: a knowledge base there would mix its files with "
        "that one's. Give that knowledge base's folder, or one outside it.\n"))
    home = tmp_path / "home"
    (home / "memories").mkdir(parents=True)
    (home / "projects").mkdir()
    proc = invoke_cli("init", "kb", cwd=home / "projects")
    assert (proc.returncode, proc.stdout) == (0, f"Initialised knowledge base in {home}/projects/kb\n"), proc.stderr
    # A clone of a KB: refused inside it as in the KB itself.
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(kb.parent), str(clone))
    message = (f"{clone}/kb/models is inside the knowledge base at {clone}/kb: a knowledge base there would mix its "
               "files with that one's. Give that knowledge base's folder, or one outside it.")
    proc = invoke_cli("init", clone / "kb" / "models")
    assert (proc.returncode, proc.stderr) == (1, f"Error: {message}\n")
    assert not (clone / "kb" / "models").exists() and not (clone / "kb" / ".slayer-kb").exists()


def test_init_holds_its_folder_while_it_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two inits of one folder at once each took the other's files for additions of its own, and
    the one that failed removed them (the stress run below). The folder is held (an flock of the
    folder) from before init looks at what is there until it is done; a second init waits."""
    folder = tmp_path / "kb"
    tried: list[str] = []
    copy_example = kb_module._example_changes

    def while_copying(root: Path) -> list[Any]:
        fd = os.open(folder, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            tried.append("free")
        except BlockingIOError:
            tried.append("held")
        finally:
            os.close(fd)
        return copy_example(root)

    monkeypatch.setattr(kb_module, "_example_changes", while_copying)
    KnowledgeBase.init(folder, example=True).close()
    assert tried == ["held"]


@pytest.mark.slow
def test_four_inits_of_one_folder_at_once_leave_one_whole_kb(tmp_path: Path, run_cli: CliRunner) -> None:
    for round in range(3):
        folder = tmp_path / f"round{round}" / "kb"
        with ThreadPoolExecutor(4) as pool:
            runs = list(pool.map(lambda path: run_cli("init", path, "--example"), [folder] * 4))
        assert sorted(r.returncode for r in runs) == [0, 1, 1, 1], [r.stderr for r in runs]
        assert {r.stderr for r in runs if r.returncode} == {
            f"Error: {folder}/README.md already exists; --example needs an empty folder.\n"}
        assert git(folder, "status", "--porcelain") == "" and git(folder, "rev-list", "--count", "HEAD") == "1\n"


def test_init_of_a_folder_whose_name_is_not_utf8_is_refused_and_leaves_nothing(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """slayer-kb gives git the KB's paths in the repository as UTF-8 (its input, sync's merge
    driver's attributes): a KB folder named otherwise ended 'init' in a traceback from staging
    the first commit. It is refused before anything is made, naming the folder."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "README").write_text("notes\n")
    for args in (("init", "-q"), ("add", "README"), ("commit", "-q", "-m", "notes")):
        git(root, *args)
    folder = root / os.fsdecode(b"k\xffb")
    message = (f"The knowledge base's folder {root}/k\\xffb is at k\\xffb in its git repository, a path that is not "
               "UTF-8, and slayer-kb gives git the KB's paths as UTF-8. Rename each folder of k\\xffb whose name is "
               "not UTF-8, then run the command again.")
    refused = invoke_cli("--json", "init", folder)
    assert (refused.returncode, json_of(refused), refused.stderr) == (
        1, {"error": {"type": "store", "message": message}}, f"Error: {message}\n")
    assert not folder.exists()
    assert (git(root, "rev-list", "--count", "HEAD"), git(root, "status", "--porcelain")) == ("1\n", "")


def test_a_kb_whose_path_is_not_utf8_is_named_as_errors_name_it(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A KB folder whose own name is not UTF-8 (above the repository's paths, so taken), printed
    to a strict UTF-8 stdout (PYTHONIOENCODING=utf-8; the test runner's) by init, server status or
    validate, ended in a traceback. Its other bytes are shown as ``\\xff``, as errors show them;
    --json keeps the path exactly (the JSON escape ``\\udcff``, which reads back as the path)."""
    folder = tmp_path / os.fsdecode(b"k\xffb")
    shown = f"{tmp_path}/k\\xffb"
    made = invoke_cli("init", folder)
    assert (made.returncode, made.stdout, made.stderr) == (0, f"Initialised knowledge base in {shown}\n", "")
    status = invoke_cli("--kb", folder, "server", "status")
    assert (status.returncode, status.stdout, status.stderr) == (0, f"No server for {shown}; mode: manual.\n", "")
    status = invoke_cli("--kb", folder, "--json", "server", "status")
    assert '"root": "' + str(tmp_path) + '/k\\udcffb"' in status.stdout and json_of(status)["root"] == str(folder)
    (folder / "memories" / "bad.yaml").write_text("learning: [\n")
    checked = invoke_cli("--kb", folder, "validate")
    assert (checked.returncode, checked.stdout.splitlines()[0]) == (
        1, f"{shown}/memories/bad.yaml:2: invalid YAML: did not find expected node content")


def test_advice_naming_a_path_that_is_not_utf8_pastes_as_that_path(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """The human output shows a byte of a path that is not UTF-8 as \\xff, as it shows a folder
    really named with a backslash, x, f, f: advice quoted as 'k\\xffb', pasted, opened that other
    folder. A command advised writes such a word as printf's output, "$(printf 'k\\377b')", which pastes
    as the bytes in sh (dash, which read bash's $'k\\xffb', the form before, as $, k, backslash...) as in bash."""
    folder = tmp_path / os.fsdecode(b"k\xffb")
    (tmp_path / "k\\xffb").mkdir()  # the other folder the display names alike
    invoke_cli("init", folder, "--example", check=True)
    invoke_cli("--kb", folder, "save", "Amounts are in cents", "-e", "shop.orders.amount", check=True)
    forgot = invoke_cli("--kb", folder.name, "forget", "--soft", "1", cwd=tmp_path, check=True)
    assert forgot.stdout == "Forgot memory 1 (soft; restore with 'slayer-kb --kb \"$(printf 'k\\377b')\" restore 1')\n"
    [advised] = re.findall(r"restore with '(slayer-kb .*)'\)", forgot.stdout)
    for shell in ("sh", "bash"):  # agents run advice through 'sh -c'; a person pastes it into bash
        pasted = subprocess.run([shell, "-c", f"printf '%s\\0' {advised.removeprefix('slayer-kb ')}"], cwd=tmp_path,
                                capture_output=True, check=True).stdout
        assert pasted.split(b"\0") == [b"--kb", b"k\xffb", b"restore", b"1", b""], shell


def test_a_folder_name_too_long_is_told_with_the_fix_and_cut(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A name over the file system's limit said 'fix that path', and a path of 6,000 characters
    came back whole in the message, twice with --json."""
    folder = tmp_path / ("x" * 300)
    fix = ("File name too long; a name in it, or the whole path, is longer than the file system takes (255 bytes a "
           "name on most): give a shorter one, then retry.")
    proc = invoke_cli("--json", "init", folder)
    message = f"Cannot use {folder}: {fix}"
    assert (proc.returncode, json_of(proc), proc.stderr) == (
        1, {"error": {"type": "store", "message": message}}, f"Error: {message}\n")
    deep = tmp_path / ("x/" * 3000)
    proc = invoke_cli("init", deep)
    shown = str(deep)
    assert (proc.returncode, proc.stderr) == (1, f"Error: Cannot use {shown[:1000]}... ({len(shown)} characters): {fix}\n")
    assert list(tmp_path.iterdir()) == []
