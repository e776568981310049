"""Round seven of the hostile pass: where ``init`` may make a knowledge base. Inside a
repository's ``.git`` it made a second repository in git's own folder (after which ``git clone``
of the person's repository failed); inside another KB's ``memories/``, ``sessions/`` or state
folder it committed files there (a state folder git tracks is then set aside by every command,
with advice saying slayer-kb never commits there). Each case runs ``init`` in this process and
checks the exit code, both streams, and that nothing was made or committed."""

from __future__ import annotations

from pathlib import Path

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
    }
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
    assert not (root / "sessions").exists()
    # A folder merely named like one, in no KB, is still a place for a KB.
    elsewhere = Path(root.parent / "notes" / "memories")
    proc = invoke_cli("init", elsewhere)
    assert (proc.returncode, proc.stdout) == (0, f"Initialised knowledge base in {elsewhere}\n"), proc.stderr
