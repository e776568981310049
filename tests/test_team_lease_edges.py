"""Leases at the edges of a team: a clone counting on its own that renumbers beside leased
clones, and a local pre-push hook that turns lease pushes or branch pushes away (docs/teams.md).
Clones of one bare remote, every command as a user types it in the clone's folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing import CliRunner, git, make_team, unlike

# Every command typed in the clone's folder, as a user would (conftest's invoke_cli).
pytestmark = pytest.mark.typed_in_the_kb


def _saved(invoke_cli: CliRunner, kb: Path, tag: str) -> str:
    out = invoke_cli("--kb", kb, "save", unlike(tag), "-e", "orders.amount", check=True).stdout
    return out.split()[2]


# renumber --onto on a sequential clone moved 1, 2 to 3, 4: inside a's leased block 1-100, so
# a's next save (3) was renumbered at its sync, an id its agent had been told changed.
def test_a_sequential_clones_renumber_gives_ids_outside_every_leased_block(tmp_path: Path, invoke_cli: CliRunner
                                                                            ) -> None:
    _bare, (a, b, c) = make_team(tmp_path, clones=3)
    assert [_saved(invoke_cli, a, "a1"), _saved(invoke_cli, a, "a2")] == ["1", "2"]
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "config", "slayer-kb.ids", "sequential")
    git(b, "switch", "-q", "-c", "agent-b")
    assert [_saved(invoke_cli, b, "b1"), _saved(invoke_cli, b, "b2")] == ["1", "2"]
    git(b, "fetch", "-q", "origin")
    renumbered = invoke_cli("--kb", b, "renumber", "--onto", "origin/main", check=True)
    assert renumbered.stdout == "Renumbered 2 memories onto origin/main:\n  1 -> 101\n  2 -> 102\n"
    git(b, "push", "-q", "-u", "origin", "agent-b")
    git(c, "pull", "-q")
    invoke_cli("--kb", c, "merge", "origin/agent-b", check=True)
    invoke_cli("--kb", c, "sync", check=True)
    assert _saved(invoke_cli, a, "a3") == "3"
    synced = invoke_cli("--kb", a, "sync", check=True)
    assert "renumbered" not in synced.stdout
    assert sorted((p.stem for p in (a / "memories").glob("*.yaml")), key=int) == ["1", "2", "3", "101", "102"]


def _hook(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


# A pre-push hook common in code repositories: only branches may be pushed.
BRANCHES_ONLY = ('#!/bin/sh\nwhile read local_ref local_sha remote_ref remote_sha; do\n'
                 '  case "$remote_ref" in refs/heads/*) ;; *) echo "only branches: $remote_ref"; exit 1;; esac\ndone\n')


# Every lease push ran the clone's pre-push hook, which turned it away: each save silently got an
# offline id (2404559101), and no command said why.
def test_a_pre_push_hook_for_branches_only_leaves_leases_alone(tmp_path: Path, invoke_cli: CliRunner) -> None:
    bare, (a, _b) = make_team(tmp_path)
    _hook(a / ".git" / "hooks" / "pre-push", BRANCHES_ONLY)
    saved = invoke_cli("--kb", a, "save", unlike("a1"), "-e", "orders.amount", check=True)
    assert (saved.stdout.split()[2], saved.stderr) == ("1", "")
    assert git(bare, "for-each-ref", "--format=%(refname)", "refs/slayer-kb/ids/").split() == ["refs/slayer-kb/ids/0"]
    synced = invoke_cli("--kb", a, "sync", check=True)
    assert (synced.stdout, synced.stderr) == ("Synced main with origin: pushed, 0 pulled, 1 pushed.\n", "")


# sync said "git push to origin failed: hook says no ... Check the remote's url (git remote get-url
# --push origin) and the network": the clone's own hook said no, and the message did not name it.
@pytest.mark.parametrize("hooks_path", [False, True], ids=["git-dir", "core.hooksPath"])
def test_a_branch_push_the_pre_push_hook_refuses_names_the_hook(tmp_path: Path, invoke_cli: CliRunner,
                                                                hooks_path: bool) -> None:
    bare, (a, _b) = make_team(tmp_path)
    hook = (tmp_path / "hooks" if hooks_path else a / ".git" / "hooks") / "pre-push"
    if hooks_path:
        git(a, "config", "core.hooksPath", str(hook.parent))
    _hook(hook, '#!/bin/sh\necho "hook says no: run the tests first"\nexit 1\n')
    invoke_cli("--kb", a, "save", unlike("a1"), "-e", "orders.amount", check=True)
    remote = git(bare, "rev-parse", "main")
    refused = invoke_cli("--kb", a, "sync")
    assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", (
        f"Error: This clone's pre-push hook {hook} refused the push of main to origin, saying:\n"
        "  hook says no: run the tests first\n"
        "It is a hook of this clone (core.hooksPath, else .git/hooks), not the remote or the network: nothing was "
        "sent and this clone is as it was, its saves stay here. Do what the hook asks, or let it pass this push (it "
        "reads 'local_ref local_sha remote_ref remote_sha' lines on stdin; sync pushes refs/heads/main, and deletes "
        "refs/slayer-kb/turn/main in the same push when other clones wait their turn), then run slayer-kb sync "
        "again.\n"))
    assert git(bare, "rev-parse", "main") == remote


PROTECTED = '#!/bin/sh\ncase "$1" in refs/slayer-kb/*) echo "refs/slayer-kb/ is protected"; exit 1;; esac\n'


def _offline_note(why: str, fix: str = "") -> str:
    return (f"warning: no block of ids could be leased: {why}. Saves take ten-digit ids from an offline block "
            f"meanwhile, and a sync registers it{fix} (docs/teams.md, \"Ids that never change under an agent\").\n")


# The save that falls back to an offline id says why, once; so does the sync that asks again.
def test_a_save_that_cannot_lease_says_why_once(tmp_path: Path, invoke_cli: CliRunner) -> None:
    bare, (a, b) = make_team(tmp_path)
    _hook(bare / "hooks" / "update", PROTECTED)
    first = invoke_cli("--kb", a, "save", unlike("a1"), "-e", "orders.amount", check=True)
    assert int(first.stdout.split()[2]) > 10**9
    fix = ": let slayer-kb's refs through the remote's hook or rule (or ask whoever runs it), then run slayer-kb sync"
    assert first.stderr == _offline_note(
        "the remote origin refused refs/slayer-kb/ids/* (refs/slayer-kb/ is protected; error: hook declined to "
        "update refs/slayer-kb/ids/0)", fix)
    second = invoke_cli("--kb", a, "save", unlike("a2"), "-e", "orders.amount", check=True)
    assert second.stderr == ""
    block = (int(first.stdout.split()[2]) - 1) // 100
    synced = invoke_cli("--kb", a, "sync", check=True)
    assert synced.stderr == _offline_note(
        "the remote origin refused refs/slayer-kb/ids/* (refs/slayer-kb/ is protected; error: hook declined to "
        f"update refs/slayer-kb/ids/{block})", fix)
    git(b, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    offline = invoke_cli("--kb", b, "save", unlike("b1"), "-e", "orders.amount", check=True)
    assert offline.stderr == _offline_note("the remote origin cannot be reached")


# A clone back online registered its offline block at its first sync, yet warned that other
# clones had leased every block tried: the registration's "answered" (created) was taken for a
# lease beaten to every block.
def test_a_sync_that_registers_an_offline_block_warns_of_nothing(tmp_path: Path, invoke_cli: CliRunner) -> None:
    bare, (a, _b) = make_team(tmp_path)
    git(a, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    offline = invoke_cli("--kb", a, "save", unlike("a1"), "-e", "orders.amount", check=True)
    assert offline.stderr == _offline_note("the remote origin cannot be reached")
    block = (int(offline.stdout.split()[2]) - 1) // 100
    git(a, "remote", "set-url", "origin", str(bare))
    synced = invoke_cli("--kb", a, "sync", check=True)
    assert synced.stderr == ""
    assert git(bare, "for-each-ref", "--format=%(refname)", f"refs/slayer-kb/ids/{block}").strip() == \
        f"refs/slayer-kb/ids/{block}"
