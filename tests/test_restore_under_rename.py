"""A memory one clone forgot and brought back (``forget kb.y``, ``restore kb.y --rev HEAD~1``)
while the other renamed it (``rename kb.y kb.m``): one memory, which a sync leaves once, at the
id the rename gave. Real clones of one bare remote; every ``slayer-kb`` command run in this
process, git as git."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from testing import CliRunner, default_first, make_team_after, unlike


def _shared(kbs: list[Path], invoke_cli: CliRunner, linked: bool) -> None:
    a = kbs[0]
    for tag, memory_id, entity in (("yank", "kb.y", "shop.orders"), ("kilo", "kb.k", "memory:kb.y"))[:1 + linked]:
        invoke_cli("--kb", a, "save", unlike(tag), "--id", memory_id, "-e", entity, check=True)
    for clone in kbs:
        invoke_cli("--kb", clone, "sync", check=True)


def _team(tmp_path: Path, invoke_cli: CliRunner, linked: bool = True) -> tuple[Path, Path]:
    """Clones a and b both holding kb.y ("yank") and, ``linked``, kb.k ("kilo", linking memory:kb.y)."""
    _bare, (a, b) = make_team_after(tmp_path, f"restore-under-rename {linked}",
                                    lambda kbs: _shared(kbs, invoke_cli, linked))
    return a, b


def _memories(clone: Path) -> list[str]:
    return sorted(path.name for path in (clone / "memories").glob("*.yaml"))


def _links(clone: Path) -> dict[str, list[str]]:
    return {path.name: re.findall(r"memory:\S+", path.read_text())
            for path in sorted((clone / "memories").glob("*.yaml"))}


# With and without an edit, synced in either order. The first runs by default, the one crossing of
# its kind there (docs/testing.md, "The crossing suites").
@pytest.mark.parametrize(("and_edits", "restorer_second"), default_first([(True, True), (False, True), (True, False), (False, False)]))
def test_a_memory_brought_back_on_one_side_and_renamed_on_the_other_is_kept_once(
        tmp_path: Path, invoke_cli: CliRunner, restorer_second: bool, and_edits: bool) -> None:
    """a forgets kb.y and restores it (then edits its title, or not) and links kb.l to it, b renames
    kb.y to kb.m.
    Synced after b, a's sync replayed the forget onto the rename and stopped, its steps keeping
    the memory forgotten or at kb.m, and the replayed restore then at kb.y too. The sync merges:
    the memory once, at kb.m with a's edit, the links following it, in either order."""
    a, b = _team(tmp_path, invoke_cli)
    invoke_cli("--kb", a, "forget", "kb.y", check=True)
    invoke_cli("--kb", a, "restore", "kb.y", "--rev", "HEAD~1", check=True)
    if and_edits:
        invoke_cli("--kb", a, "update", "kb.y", "--title", "Yank", check=True)
    invoke_cli("--kb", a, "save", unlike("lima"), "--id", "kb.l", "-e", "memory:kb.y", check=True)
    invoke_cli("--kb", b, "rename", "kb.y", "kb.m", check=True)
    first, second = (b, a) if restorer_second else (a, b)
    invoke_cli("--kb", first, "sync", check=True)
    synced = invoke_cli("--kb", second, "sync", check=True)
    ours = 4 if and_edits else 3  # a's commits; a merge, and the links to kb.y pointed at kb.m, pushed too
    assert synced.stdout == (
        (f"Synced main with origin: merged, 1 pulled, {ours + 2} pushed.\n" if restorer_second
         else f"Synced main with origin: rebased, {ours} pulled, 2 pushed.\n")
        + "  merged both sides of: memories/kb.k.yaml\n"
        "  rewrote links to renamed memories: memory:kb.y -> memory:kb.m in kb.l\n")
    invoke_cli("--kb", first, "sync", check=True)
    for clone in (a, b):
        assert _links(clone) == {"kb.k.yaml": ["memory:kb.m"], "kb.l.yaml": ["memory:kb.m"], "kb.m.yaml": []}
        text = (clone / "memories" / "kb.m.yaml").read_text()
        assert "yank" in text and ("title: Yank\n" in text) == and_edits
        assert invoke_cli("--kb", clone, "validate", check=True).stdout.endswith("no problems.\n")


@pytest.mark.slow
@pytest.mark.parametrize("restorer_second", [True, False])
def test_a_memory_brought_back_and_renamed_that_no_memory_links_is_kept_once(
        tmp_path: Path, invoke_cli: CliRunner, restorer_second: bool) -> None:
    """As above, no memory linking kb.y: both sides wrote no file in common, and a's sync after b
    replayed its commits in this process, which dropped the forget (b's kb.y is gone too) and
    added the restored memory back at kb.y beside b's kb.m, silently, on both clones."""
    a, b = _team(tmp_path, invoke_cli, linked=False)
    invoke_cli("--kb", a, "forget", "kb.y", check=True)
    invoke_cli("--kb", a, "restore", "kb.y", "--rev", "HEAD~1", check=True)
    invoke_cli("--kb", b, "rename", "kb.y", "kb.m", check=True)
    first, second = (b, a) if restorer_second else (a, b)
    invoke_cli("--kb", first, "sync", check=True)
    synced = invoke_cli("--kb", second, "sync", check=True)
    assert synced.stdout == ("Synced main with origin: merged, 1 pulled, 3 pushed.\n" if restorer_second
                             else "Synced main with origin: rebased, 2 pulled, 1 pushed.\n")
    invoke_cli("--kb", first, "sync", check=True)
    assert [_memories(clone) for clone in (a, b)] == [["kb.m.yaml"]] * 2


@pytest.mark.slow
@pytest.mark.parametrize("restorer_second", [True, False])
def test_an_edit_of_a_memory_brought_back_and_of_it_renamed_stops_with_steps_that_work(
        tmp_path: Path, invoke_cli: CliRunner, restorer_second: bool) -> None:
    """a forgets kb.y, restores it and retitles it; b renames it to kb.m and retitles it too: two
    edits of one memory no sync joins silently. The sync stops naming kb.m (not a forget against
    a rename), and its steps, typed as printed with the edit step done by hand, leave the memory
    once, at kb.m."""
    a, b = _team(tmp_path, invoke_cli, linked=False)
    invoke_cli("--kb", a, "forget", "kb.y", check=True)
    invoke_cli("--kb", a, "restore", "kb.y", "--rev", "HEAD~1", check=True)
    invoke_cli("--kb", a, "update", "kb.y", "--title", "Yank", check=True)
    invoke_cli("--kb", b, "rename", "kb.y", "kb.m", check=True)
    invoke_cli("--kb", b, "update", "kb.m", "--title", "Mike", check=True)
    first, second = (b, a) if restorer_second else (a, b)
    invoke_cli("--kb", first, "sync", check=True)
    stopped = invoke_cli("--kb", second, "sync")
    mine, how, go_on = (("This branch", "merge", "git commit --no-edit") if restorer_second else
                        ("Your commits", "rebase", "slayer-kb rebase --continue (a later commit that stops says so again)"))
    assert (stopped.returncode, stopped.stderr) == (1, (
        f"Error: {mine} and origin/main both edited memories/kb.m.yaml; the repository is back as it was. To merge "
        f"by hand: cd {second}; git fetch origin; slayer-kb {how} origin/main (it stops on the conflict); edit "
        "memories/kb.m.yaml to keep what both sides meant; git add memories/kb.m.yaml; slayer-kb validate; "
        f"{go_on}; slayer-kb sync.\n"))
    for step in stopped.stderr.split(" To merge by hand: ", 1)[1].strip().removesuffix(".").split("; ")[1:]:
        typed = step.split(" (")[0].split(" to ")[0]
        if typed.startswith("edit "):
            path = second / typed.split()[1]
            text = path.read_text()
            assert "<<<<<<<" in text and "title: Yank" in text and "title: Mike" in text
            # Each side's hunk kept as this side wrote it, the title both: the two updates may
            # fall in two seconds on a loaded machine, and their updated_at then conflicts too.
            path.write_text(re.sub(r"<<<<<<< [^\n]*\n(.*?)=======\n.*?>>>>>>> [^\n]*\n",
                                   lambda hunk: re.sub(r"^title: \w+$", "title: Yank and Mike", hunk.group(1), flags=re.M),
                                   text, flags=re.DOTALL))
        elif typed.startswith("git "):
            subprocess.run(typed, shell=True, cwd=second, check=True, capture_output=True, env={**os.environ, "GIT_EDITOR": "true"})
        else:
            invoke_cli(*typed.split()[1:], cwd=second, check=typed != f"slayer-kb {how} origin/main")
    invoke_cli("--kb", first, "sync", check=True)
    for clone in (a, b):
        assert _memories(clone) == ["kb.m.yaml"]
        assert "title: Yank and Mike\n" in (clone / "memories" / "kb.m.yaml").read_text()
