"""``edit ID`` with a scripted $EDITOR: a small Python program that writes prepared texts."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import InvalidInputError, MemoryFileError
from slayer_kb.ops.editing import edit
from testing import git, json_of

EDITOR = """\
import sys
from pathlib import Path

here = Path(__file__).parent
count = here / "count"
n = int(count.read_text()) if count.exists() else 0
count.write_text(str(n + 1))
(here / f"seen-{n}.txt").write_text(Path(sys.argv[1]).read_text())
step = here / f"step-{n}.yaml"
if step.exists():
    Path(sys.argv[1]).write_text(step.read_text())
"""


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Returns ``steps(*texts)``: the texts the editor writes on its 1st, 2nd, ... run."""
    folder = tmp_path / "editor"
    folder.mkdir()
    (folder / "editor.py").write_text(EDITOR)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(folder / 'editor.py'))}"
    monkeypatch.setenv("EDITOR", command)
    monkeypatch.delenv("VISUAL", raising=False)

    def steps(*texts: str | None) -> Path:
        for n, text in enumerate(texts):
            if text is not None:
                (folder / f"step-{n}.yaml").write_text(text)
        return folder

    return steps


def commits(kb: KnowledgeBase) -> int:
    return int(git(kb.root, "rev-list", "--count", "HEAD"))


def test_valid_edit_is_committed_in_canonical_form(catalog_kb: KnowledgeBase, editor) -> None:
    kb = catalog_kb
    mid = kb.save_memory("Amount is EUR", ["orders.amount"]).memory_id
    created = kb.get(mid).to_dict()["created_at"]
    folder = editor(
        f"created_at: '{created}'\nentities: [orders.amount, status]\nlearning: Amount is EUR incl. VAT\n"
    )
    before = commits(kb)
    result = edit(kb, mid, reopen=lambda _p: pytest.fail("no problem expected"))
    assert result.changed and commits(kb) == before + 1
    assert git(kb.root, "log", "-1", "--format=%s").strip() == f"memory: edit {mid}"
    assert (kb.root / "memories" / f"{mid}.yaml").read_text() == (
        "learning: Amount is EUR incl. VAT\nentities:\n- shop.orders.amount\n- shop.orders.status\n"
        f"created_at: '{created}'\n"
    )
    # The editor saw a copy outside memories/.
    assert (folder / "seen-0.txt").read_text().startswith("learning: Amount is EUR")
    assert kb.search(entities=["orders.status"]).memories[0]["id"] == mid
    assert not list((kb.root / ".slayer-kb" / "tmp").glob("edit-*"))


def test_noop_edit_commits_nothing(catalog_kb: KnowledgeBase, editor) -> None:
    kb = catalog_kb
    mid = kb.save_memory("Amount is EUR", ["orders.amount"]).memory_id
    editor()  # the editor changes nothing
    before = commits(kb)
    assert not edit(kb, mid, reopen=lambda _p: True).changed
    assert commits(kb) == before


def test_problem_reopens_then_commits(catalog_kb: KnowledgeBase, editor) -> None:
    kb = catalog_kb
    mid = kb.save_memory("Amount is EUR", ["orders.amount"]).memory_id
    created = kb.get(mid).to_dict()["created_at"]
    folder = editor(
        f"learning: fixed?\nentities:\n- orders.nope\ncreated_at: '{created}'\n",
        f"learning: fixed\nid: 3\ncreated_at: '{created}'\n",
        f"learning: fixed\ncreated_at: '{created}'\n",
    )
    problems: list[str] = []
    result = edit(kb, mid, reopen=lambda p: problems.append(p) is None)
    assert result.changed
    assert problems[0].startswith(f"memories/{mid}.yaml:2: entities:") and "nope" in problems[0]
    assert problems[1].startswith(f"memories/{mid}.yaml:2: unknown key 'id'")
    # Each reopen showed the text as left, not the original.
    assert "orders.nope" in (folder / "seen-1.txt").read_text()
    assert kb.get(mid).to_dict()["learning"] == "fixed" and kb.get(mid).to_dict()["entities"] == []


def test_declined_reopen_commits_nothing_and_keeps_the_draft(catalog_kb: KnowledgeBase, editor) -> None:
    kb = catalog_kb
    mid = kb.save_memory("Amount is EUR", ["orders.amount"]).memory_id
    editor("learning: [broken\n")
    before = commits(kb)
    with pytest.raises(InvalidInputError) as exc:
        edit(kb, mid, reopen=lambda _p: False)
    assert "invalid YAML" in str(exc.value) and "kept in" in str(exc.value)
    assert commits(kb) == before
    assert kb.get(mid).to_dict()["learning"] == "Amount is EUR"


def test_cli_edit(catalog_kb: KnowledgeBase, editor, invoke_cli) -> None:
    kb = catalog_kb
    mid = kb.save_memory("Amount is EUR", ["orders.amount"]).memory_id
    created = kb.get(mid).to_dict()["created_at"]
    editor("learning: [broken\n", f"learning: Amount is EUR, checked\ncreated_at: '{created}'\n")
    before = commits(kb)
    # No answer on stdin: the problem is shown, nothing committed, exit 1.
    proc = invoke_cli("--kb", kb.root, "edit", mid, input="")
    assert proc.returncode == 1
    assert f"memories/{mid}.yaml:2: invalid YAML" in proc.stderr and "Reopen the editor?" in proc.stderr
    assert commits(kb) == before


def test_cli_edit_reopens_on_yes(catalog_kb: KnowledgeBase, editor, invoke_cli) -> None:
    kb = catalog_kb
    mid = kb.save_memory("Amount is EUR", ["orders.amount"]).memory_id
    created = kb.get(mid).to_dict()["created_at"]
    editor("learning: [broken\n", f"learning: Amount is EUR, checked\ncreated_at: '{created}'\n")
    proc = invoke_cli("--kb", kb.root, "edit", mid, "--json", input="y\n")
    assert proc.returncode == 0, proc.stderr
    assert json_of(proc)["changed"] is True
    assert KnowledgeBase(kb.root).get(mid).to_dict()["learning"] == "Amount is EUR, checked"


def test_cli_edit_noop_says_so(catalog_kb: KnowledgeBase, editor, invoke_cli) -> None:
    kb = catalog_kb
    mid = kb.save_memory("Amount is EUR", ["orders.amount"]).memory_id
    editor()
    proc = invoke_cli("--kb", kb.root, "edit", mid, check=True)
    assert "nothing committed" in proc.stdout


# -- what edit refuses to open (issue 16, item 9) -------------------------------------------------


def test_edit_never_follows_a_symlinked_memory(catalog_kb: KnowledgeBase, editor, invoke_cli, tmp_path: Path) -> None:
    """A committed link to a file outside the KB (/etc/passwd in the report) went into the editor,
    and a save would then have written its contents into the KB; get already refused it."""
    kb = catalog_kb
    outside = tmp_path / "outside" / "passwd"
    outside.parent.mkdir()
    outside.write_text("root:x:0:0:root:/root:/bin/bash\n")
    (kb.root / "memories" / "link.yaml").symlink_to(outside)
    git(kb.root, "add", "-A")
    git(kb.root, "commit", "-q", "-m", "a committed symlink")
    folder = editor("learning: stolen\ncreated_at: '2026-01-01T00:00:00Z'\n")
    before = commits(kb)
    message = "memories/link.yaml: is a symlink; refusing to follow it; move it out of memories/ by hand, then retry"
    with pytest.raises(MemoryFileError) as info:
        kb.get("link").to_dict()
    assert str(info.value) == message
    with pytest.raises(MemoryFileError) as info:
        edit(kb, "link", reopen=lambda _p: pytest.fail("nothing to reopen"))
    assert str(info.value) == message
    proc = invoke_cli("--kb", kb.root, "edit", "link", input="")
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Error: {message}\n")
    assert not (folder / "count").exists()  # the editor never ran
    assert commits(kb) == before
    assert outside.read_text() == "root:x:0:0:root:/root:/bin/bash\n"
    assert not list((kb.root / ".slayer-kb" / "tmp").glob("edit-*"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_edit_refuses_a_fifo_or_a_folder_without_waiting(catalog_kb: KnowledgeBase, editor, tmp_path: Path) -> None:
    kb = catalog_kb
    os.mkfifo(kb.root / "memories" / "ff.yaml")
    (kb.root / "memories" / "dir.yaml").mkdir()
    folder = editor("learning: x\ncreated_at: '2026-01-01T00:00:00Z'\n")
    # A subprocess with a bound: reading a FIFO with no writer would wait forever.
    proc = subprocess.run(
        [sys.executable, "-m", "slayer_kb", "--kb", str(kb.root), "edit", "ff"],
        input="", capture_output=True, text=True, timeout=60,
    )
    assert (proc.returncode, proc.stderr) == (
        1, "Error: memories/ff.yaml: is a FIFO, not a regular file; refusing to open it; move it out of memories/ by hand, then retry\n",
    )  # fmt: skip
    with pytest.raises(MemoryFileError) as info:
        edit(kb, "dir", reopen=lambda _p: pytest.fail("nothing to reopen"))
    assert str(info.value) == "memories/dir.yaml: is a folder, not a regular file; refusing to open it; move it out of memories/ by hand, then retry"
    assert not (folder / "count").exists()


def test_an_editor_setting_that_cannot_run_is_named(catalog_kb: KnowledgeBase, invoke_cli, tmp_path: Path) -> None:  # noqa: ANN001
    """An empty EDITOR ran vi with no terminal all the same (its screen codes in --json's output);
    an unbalanced quote was a traceback; a file that is no program said to chmod the KB."""
    root = catalog_kb.root
    catalog_kb.save_memory("A note.", ["orders.amount"], id="n")
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    fake_vi = bin_folder / "vi"  # what the old code ran: it leaves a mark
    fake_vi.write_text(f"#!/bin/sh\ntouch {tmp_path / 'vi-ran'}\n")
    fake_vi.chmod(0o755)
    not_a_program = tmp_path / "notes.txt"
    not_a_program.write_text("not a program\n")
    path = f"{bin_folder}{os.pathsep}{os.environ['PATH']}"
    no_editor = ("No editor to run: $VISUAL and $EDITOR are unset, and vi needs a terminal, which this is not. Set "
                 f"EDITOR to a command that edits the file it is given, or change the memory with 'slayer-kb --kb {root} "
                 "update n --content -' (the new text on stdin; MCP: mem_update).")
    cases = [
        ({"EDITOR": "", "VISUAL": ""}, no_editor),
        ({"EDITOR": 'vi "notes'}, "$VISUAL / $EDITOR ('vi \"notes') cannot be split into a command: No closing "
                                  "quotation; quote it as a shell would, e.g. EDITOR='code --wait'."),
        ({"EDITOR": str(not_a_program)}, f"The editor '{not_a_program}' cannot be run (Permission denied); set "
                                         "$VISUAL or $EDITOR to an installed editor."),
    ]
    head = git(root, "rev-parse", "HEAD")
    for env, message in cases:
        proc = invoke_cli("--kb", root, "--json", "edit", "n", env={"VISUAL": None, "PATH": path, **env})
        assert (proc.returncode, json_of(proc), proc.stderr) == (
            1, {"error": {"type": "invalid_input", "message": message}}, f"Error: {message}\n"), env
    assert not (tmp_path / "vi-ran").exists()
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == ""


def test_an_edit_to_a_title_of_two_lines_is_a_problem_with_the_fix(catalog_kb: KnowledgeBase) -> None:
    """``edit`` committed a title with a line break, which a save and an update refuse; it is a
    problem of the file, said as ``validate`` says it, and the editor reopens on it."""
    kb = catalog_kb
    mid = kb.save_memory("Amount is EUR", ["orders.amount"]).memory_id
    created = kb.get(mid).to_dict()["created_at"]
    before = commits(kb)
    problems: list[str] = []
    with pytest.raises(InvalidInputError):
        edit(kb, mid, reopen=lambda p: problems.append(p) is not None,
             run_editor=lambda draft: draft.write_text(f"title: \"two\\rlines\"\nlearning: x\ncreated_at: '{created}'\n"))
    assert problems == [f"memories/{mid}.yaml:1: title is one line, and this one breaks at U+000D (a save refuses it; "
                        "an import makes each break a space): write it on one line, e.g. 'two lines'"]
    assert commits(kb) == before
